"""A consumer on the router side: credit, what it is delivering, its filter.

Credit is in bytes (Artemis's consumerWindowSize): the router delivers while
credit is positive, and the client grants more as it consumes. Deliveries are
collected and sent as one DeliveryBatch per event-loop turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .message import Ref

if TYPE_CHECKING:
    from .queue import Queue
    from .selector import Selector
    from .session import ServerSession


class ServerConsumer:
    def __init__(
        self,
        session: ServerSession,
        consumer_id: int,
        queue: Queue,
        selector: Selector | None,
        filter_text: str,
        window_size: int,
    ) -> None:
        self.session = session
        self.id = consumer_id
        self.queue = queue
        self.selector = selector
        self.filter_text = filter_text
        self.window_size = window_size
        self.credits = window_size if window_size > 0 else 0
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

    def deliver(self, ref: Ref) -> None:
        did = self._next_delivery_id
        self._next_delivery_id += 1
        ref.delivery_count += 1
        self.delivering[did] = ref
        if self.window_size >= 0:
            self.credits -= ref.msg.size
        self.pending.append((did, ref))
        self.session.delivered(self, did, ref)

    def grant(self, credits: int) -> None:
        if self.window_size >= 0:
            self.credits += credits
