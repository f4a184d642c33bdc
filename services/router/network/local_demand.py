"""This node's own demand: its applications' consumers, as the demand
decider (demand.py) counts them.

A consumer on an anycast queue is demand for that queue; a consumer on a
multicast queue (a subscription) is demand for its address as a topic,
filtered by the subscription's filter and its own; a durable subscription
with no consumer is demand too, unless a link's `dynamicOnly` says it counts
only while a consumer is on it. A temporary destination (request/reply,
`bridgeTempDestinations`) is a temporary anycast queue: a non-durable
subscription's queue is temporary too, but its destination is the topic,
which crosses whatever that option says, as a non-durable topic subscriber
does in ActiveMQ. Links' own consumers (store-and-forward
queues, network subscriptions) are never demand: demand passed on travels
as demand, with its path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from meshmq.routing_names import INTERNAL_PREFIX

from ..routing import ANYCAST
from .demand import QUEUE, TOPIC, Destination
from .subscription import is_local_consumer


@dataclass(frozen=True, slots=True)
class LocalConsumer:
    destination: Destination
    selector: str = ""
    durable_subscription: bool = False
    active: bool = True
    temporary: bool = False


def both(first: str, second: str) -> str:
    """Two selectors, both to hold ("" = none)."""
    if first and second:
        return f"({first}) AND ({second})"
    return first or second


def local_demand(queues: Iterable) -> dict[str, LocalConsumer]:
    """Every local consumer (and idle durable subscription) of `queues`, by a key unique on this node."""
    out: dict[str, LocalConsumer] = {}
    for q in queues:
        if q.name.startswith(INTERNAL_PREFIX) or q.deleted:
            continue
        consumers = [c for c in q.consumers if is_local_consumer(c) and not c.closed]
        if q.routing_type == ANYCAST:
            for c in consumers:
                out[f"{c.target.id}/{c.id}"] = LocalConsumer(Destination(QUEUE, q.name), c.filter_text,
                                                             temporary=q.temporary)
            continue
        durable = q.durable and not q.temporary
        for c in consumers:
            out[f"{c.target.id}/{c.id}"] = LocalConsumer(Destination(TOPIC, q.address),
                                                         both(q.filter_text, c.filter_text),
                                                         durable_subscription=durable)
        if not consumers and durable:
            out[f"subscription/{q.name}"] = LocalConsumer(Destination(TOPIC, q.address), q.filter_text,
                                                          durable_subscription=True, active=False)
    return out
