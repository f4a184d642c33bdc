"""A consumer on the router side — credit, what it is delivering, its filter —
and the delivery target it hands messages to.

A consumer takes messages from one queue and gives each to its
`DeliveryTarget`: a client session (services/router/session.py) or a cluster
bridge forwarding a store-and-forward queue to another node
(services/router/cluster/bridge.py), so a queue never knows who is reading it.

Credit is in bytes (Artemis's consumerWindowSize): the router delivers while
credit is positive, and the target grants more as it consumes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .message import Ref
from .message_groups import FirstOfGroup

if TYPE_CHECKING:
    from .queue import Queue
    from meshmq.selector import Selector


class DeliveryTarget(Protocol):
    """Where a consumer's messages go."""

    # Shown by management: the session id (or bridge name) and its client id.
    id: str
    client_id: str

    def delivered(self, consumer: ServerConsumer, delivery_id: int, ref: Ref) -> None:
        """A message was handed to `consumer` under `delivery_id`; it is in
        `consumer.pending` until the target takes it."""

    def queue_deleted(self, consumer: ServerConsumer) -> None:
        """The consumer's queue is being deleted: close the consumer and say why."""


class ServerConsumer:
    def __init__(
        self,
        target: DeliveryTarget,
        consumer_id: int,
        queue: Queue,
        selector: Selector | None,
        filter_text: str,
        window_size: int,
        priority: int = 0,
    ) -> None:
        self.target = target
        self.id = consumer_id
        self.queue = queue
        self.selector = selector
        self.filter_text = filter_text
        self.window_size = window_size
        # Consumer priority: the queue hands a message to its highest-priority
        # consumers with credit first (a network subscription is below local
        # consumers with decreaseNetworkConsumerPriority, services/router/network/).
        self.priority = priority
        self.credits = window_size if window_size > 0 else 0
        # On a non-destructive queue: the arrival number of the last message it
        # was given; it reads on from there (services/router/queue_kinds.py).
        self.cursor = 0
        self.delivering: dict[int, Ref] = {}
        self.pending: list[tuple[int, Ref]] = []
        self.messages_acknowledged = 0
        self._next_delivery_id = 1
        # Set while a large message's body is streaming: nothing else is sent to it.
        self.streaming = False
        self.closed = False

    @property
    def ready(self) -> bool:
        return not self.closed and not self.streaming and (self.window_size < 0 or self.credits > 0)

    def deliver(self, ref: Ref, shown: object = None) -> None:
        """Hand `ref` to the target; `shown` is what the target sends for it
        when that is not the message as stored (deliver_first's marked copy),
        pending before the target hears of the delivery."""
        did = self._next_delivery_id
        self._next_delivery_id += 1
        ref.delivery_count += 1
        self.queue.messages_delivered += 1
        self.delivering[did] = ref
        if self.window_size >= 0:
            self.credits -= ref.msg.size
        self.pending.append((did, shown or ref))
        self.target.delivered(self, did, ref)

    def deliver_first(self, ref: Ref, key: str) -> None:
        """Deliver the first message of a group newly pinned to this consumer:
        a target that shows it (`shows_group_first`, a client session) sends
        it with the property `key` true (group-first-key, message_groups.py).
        The marked copy is in `pending` before the target hears of the
        delivery: a large message's header is sent from there at once."""
        if getattr(self.target, "shows_group_first", False):
            self.deliver(ref, FirstOfGroup(ref, key))
        else:
            self.deliver(ref)

    def grant(self, credits: int) -> None:
        if self.window_size > 0:
            self.credits += credits
        elif self.window_size == 0:
            # No buffering (consumerWindowSize=0): the client asks for one message
            # at a time; a grant lets one through whatever the last one cost.
            self.credits = max(self.credits, 0) + credits

    def take_back(self, last_handed: int | None, *, keep_handed: bool = False) -> list[Ref]:
        """Every unacknowledged delivery, taken back (for cancel by the caller).

        Deliveries after `last_handed` were never handed to the application:
        they do not count as a delivery attempt (Artemis counts only what the
        application saw) and their credit comes back. `last_handed` None: not
        known (the client died, or is too old to say): every one counts.
        `keep_handed` (the client moves the consumer to another node): the
        handed ones stay for their acks; only the unseen ones come back.
        """
        refs = []
        for did, ref in list(self.delivering.items()):
            unseen = last_handed is not None and did > last_handed
            if keep_handed and not unseen:
                continue
            if unseen:
                ref.delivery_count -= 1
                if self.window_size >= 0:
                    self.credits += ref.msg.size
            del self.delivering[did]
            refs.append(ref)
        self.pending.clear()
        return refs
