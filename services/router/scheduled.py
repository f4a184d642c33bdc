"""Scheduled delivery: a message that may not be delivered before a given time.

As in Artemis, the time is the message property `_AMQ_SCHED_DELIVERY`
(milliseconds since the epoch, a long). `_AMQ_SCHED_DELAY` (milliseconds
after the router accepts the message) is accepted too and turned into
`_AMQ_SCHED_DELIVERY` on arrival (`stamp`); when both are set the time wins,
as Artemis reads its AMQP delivery-time over a delay. Only the absolute time
is stored, so it is the one a restart recovers and a cluster bridge forwards:
a delay would start again on every hop and after every restart.

A scheduled message is routed, stored and confirmed at once. Each queue holds
its reference among those waiting out a delay (`Queue.delayed`, the same
timers as redelivery-delay), counted as scheduled, not waiting, until its
time; it then joins the head of its queue, as Artemis's scheduled delivery
handler adds it (addHead). A store-and-forward queue does not hold it back
(`held_by`): the message goes over its link at once, carrying its time, and
the queue on the far node holds it.
"""

from __future__ import annotations

from meshmq.properties import SCHED_DELAY, SCHED_DELIVERY
from meshmq.routing_names import STORE_AND_FORWARD_PREFIX
from meshmq.v1 import messages_pb2 as mpb

__all__ = ["SCHED_DELAY", "SCHED_DELIVERY", "deliver_at", "held_by", "stamp"]


def _millis(props, name: str) -> int | None:
    """The property as a long; None when it is set but is not one."""
    v = props[name]
    return v.int_value if v.WhichOneof("kind") == "int_value" else None


def stamp(m: mpb.Message, now: int) -> str | None:
    """Check a client message's scheduling properties and turn a delay into a
    time (`now` + delay); returns the problem, if any, for INVALID_REQUEST.
    Only called when one of the two properties is present."""
    props = m.properties
    if SCHED_DELIVERY in props:
        if _millis(props, SCHED_DELIVERY) is None:
            return f"property {SCHED_DELIVERY} must be a long (milliseconds since the epoch)"
        if SCHED_DELAY in props:
            del props[SCHED_DELAY]
        return None
    delay = _millis(props, SCHED_DELAY)
    if delay is None:
        return f"property {SCHED_DELAY} must be a long (milliseconds)"
    del props[SCHED_DELAY]
    if delay > 0:
        props[SCHED_DELIVERY].int_value = now + delay
    return None


def deliver_at(props) -> int:
    """A stored message's scheduled time (0: none)."""
    if SCHED_DELIVERY not in props:
        return 0
    at = _millis(props, SCHED_DELIVERY)
    return at if at and at > 0 else 0


def held_by(queue_name: str) -> bool:
    """Whether a queue holds a scheduled message back until its time: every
    queue but a link's store-and-forward queue (the far node holds it)."""
    return not queue_name.startswith(STORE_AND_FORWARD_PREFIX)
