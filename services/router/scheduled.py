"""Scheduled delivery: a message that may not be delivered before a given time.

Artemis clients schedule with the message properties `_AMQ_SCHED_DELIVERY`
(milliseconds since the epoch) and `_AMQ_SCHED_DELAY` (milliseconds after the
broker accepts the message). Here they are two message fields,
`delivery_time` and `delivery_delay`: the SDK turns the properties into them
(meshmq/client/producer.py), so the router reads two integers per message
instead of looking into every message's property map on the hot path, and a
selector still names `_AMQ_SCHED_DELIVERY` (message.py). A delay becomes a
time on arrival (`stamp`, by the router's clock); when both are set the time
wins, as Artemis reads its AMQP delivery-time over a delay. Only the time is
stored, so it is the one a restart recovers and a cluster bridge forwards: a
delay would start again on every hop and after every restart.

A scheduled message is routed, stored and confirmed at once. Each queue holds
its reference among those waiting out a delay (`Queue.delayed`, the same
timers as redelivery-delay), counted as scheduled, not waiting, until its
time; it then joins the head of its queue, as Artemis's scheduled delivery
handler adds it (addHead). A store-and-forward queue does not hold it back
(`held_by`): the message goes over its link at once, carrying its time, and
the queue on the far node holds it.
"""

from __future__ import annotations

from meshmq.errors import BrokerError, Reason
from meshmq.routing_names import STORE_AND_FORWARD_PREFIX
from meshmq.v1 import messages_pb2 as mpb

__all__ = ["held_by", "stamp"]


def stamp(m: mpb.Message, now: int) -> int:
    """A client message's scheduled time, a delay turned into one (`now` +
    delay) and the delay field cleared; INVALID_REQUEST for a negative value.
    Called only when one of the two fields is set."""
    at, delay = m.delivery_time, m.delivery_delay
    if at < 0 or delay < 0:
        raise BrokerError(Reason.INVALID_REQUEST,
                          f"delivery_time ({at}) and delivery_delay ({delay}) must not be negative "
                          "(properties _AMQ_SCHED_DELIVERY and _AMQ_SCHED_DELAY)")
    if delay:
        m.ClearField("delivery_delay")
        if not at:
            m.delivery_time = at = now + delay
    return at


def held_by(queue_name: str) -> bool:
    """Whether a queue holds a scheduled message back until its time: every
    queue but a link's store-and-forward queue (the far node holds it)."""
    return not queue_name.startswith(STORE_AND_FORWARD_PREFIX)
