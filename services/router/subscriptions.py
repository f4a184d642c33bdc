"""Named subscriptions (JMS 2.0, as Artemis maps them onto queues): the name
of a subscription's queue, and what a consumer asking for one gets — pure
functions over plain data; the session (session.py) carries the plan out.

Names, as Artemis's `ActiveMQDestination.createQueueNameForSubscription`:
a durable subscription `sub` of a connection with client id `app` is the
multicast queue `app.sub`; without a client id (allowed for a shared one
only) it is `sub`; a shared non-durable one is `nonDurable.app.sub` (or
`nonDurable.sub`). `.` and `\\` in the client id and the name are escaped
with `\\`, so `a.b` + `c` and `a` + `b.c` never meet.

Kinds, as JMS 2.0:

* unshared durable (`createDurableConsumer`): needs a client id, since the
  client id is what makes the subscription this application's; one consumer
  at a time (a second one is refused with QUEUE_IN_USE).
* shared durable (`createSharedDurableConsumer`): any number of consumers, on
  any connection or node, each message going to one of them.
* shared non-durable (`createSharedConsumer`): the same, but the queue is not
  stored and goes with its last consumer.
* an unnamed subscription is non-durable and unshared: a temporary queue of
  its consumer (not planned here).

A durable subscription asked for with another address or filter than it has
is replaced — its queue and messages deleted, a new one made — when it has
no consumer (JMS: "equivalent to unsubscribing the old one and creating a new
one"), refused with QUEUE_IN_USE while it has one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from meshmq.errors import BrokerError, Reason

SEPARATOR = "."
NON_DURABLE_PREFIX = "nonDurable"


def escape(text: str) -> str:
    """`\\` and `.` escaped with `\\`, as Artemis does for the parts of a subscription queue's name."""
    return text.replace("\\", "\\\\").replace(".", "\\.")


def queue_name(subscription: str, client_id: str, *, durable: bool) -> str:
    """The queue of subscription `subscription` of client id `client_id` ("" : none)."""
    parts = [escape(client_id)] if client_id else []
    parts.append(escape(subscription))
    if not durable:
        parts.insert(0, NON_DURABLE_PREFIX)
    return SEPARATOR.join(parts)


@dataclass(frozen=True, slots=True)
class Wanted:
    """What a consumer asks for: subscription `name` to `address` with `filter`."""

    address: str
    name: str
    filter: str
    client_id: str
    shared: bool
    durable: bool


@dataclass(frozen=True, slots=True)
class Existing:
    """The queue already bearing the subscription's name, as the plan reads it."""

    address: str
    multicast: bool
    filter: str
    consumers: int


class Step(enum.Enum):
    CREATE = "create"  # make the queue
    USE = "use"  # attach to the queue there
    REPLACE = "replace"  # delete the queue there (with its messages), then make it


def check(wanted: Wanted) -> None:
    """Refuse what JMS does not allow, before any name is looked up."""
    if not wanted.durable and not wanted.shared:
        raise BrokerError(
            Reason.INVALID_REQUEST,
            f"subscription {wanted.name!r}: a named non-durable subscription must be shared "
            "(an unnamed one is the consumer's own temporary subscription)",
        )
    if wanted.durable and not wanted.shared and not wanted.client_id:
        raise BrokerError(
            Reason.INVALID_REQUEST,
            f"durable subscription {wanted.name!r}: an unshared durable subscription needs a client id "
            "(set clientID on the connection, e.g. meshmq://host:61616?clientID=app), or make it shared",
        )


def plan(wanted: Wanted, queue: str, existing: Existing | None) -> Step:
    """What to do for `wanted`, whose queue is `queue` (see the module docstring)."""
    if existing is None:
        return Step.CREATE
    if not existing.multicast:
        raise BrokerError(
            Reason.QUEUE_EXISTS,
            f"queue {queue!r} exists as an anycast queue on {existing.address!r}, not as a subscription",
        )
    if not wanted.shared and existing.consumers:
        raise BrokerError(
            Reason.QUEUE_IN_USE,
            f"durable subscription {wanted.name!r} (queue {queue!r}) already has a consumer: "
            "an unshared subscription takes one at a time (shared=True lets several share it)",
        )
    if existing.address == wanted.address and existing.filter == wanted.filter:
        return Step.USE
    if existing.consumers:
        raise BrokerError(
            Reason.QUEUE_IN_USE,
            f"subscription {wanted.name!r} (queue {queue!r}) exists on {existing.address!r} with filter "
            f"{existing.filter!r} and has {existing.consumers} consumer(s): it can change address or filter "
            "only when it has none",
        )
    return Step.REPLACE
