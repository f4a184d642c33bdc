"""Address-full-policy BLOCK: a producer's sends held while an address is full.

Artemis blocks a producer by withholding credits: the client may send
`producerWindowSize` bytes before the broker grants more, and the broker
grants none for a full address with policy BLOCK. Here the client's side of
that is its send window (a producer waits while its unconfirmed bytes reach
the smaller of confirmationWindowSize and producerWindowSize, meshmq/client/
producer.py), and the router's side is this: a batch for a blocked address
is held, unconfirmed, in arrival order with the producer's later batches,
until the address has room again (MemoryUse.wait_for_room). So a blocked
producer's `send()` waits, and nothing it sent is lost or reordered.

The router trusts no client to respect its window: it holds at most the
window the producer announced (1 MiB when it announced none or no limit)
and refuses what comes beyond it with ADDRESS_FULL. That bounds what a
blocked address costs in memory by producers × window.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from meshmq.config import defaults

from .requests import SendMessages


def held_bytes_allowed(announced: int) -> int:
    """What the router holds for a producer that announced `announced` bytes of credit."""
    return announced if announced > 0 else defaults.PRODUCER_WINDOW_SIZE


@dataclass(slots=True)
class HeldSends:
    """One producer's batches waiting for a blocked address, oldest first."""

    allowed: int
    batches: deque[tuple[SendMessages, str, int]] = field(default_factory=deque)  # (batch, default address, bytes)
    bytes: int = 0

    def fits(self, size: int) -> bool:
        """Whether one more batch of `size` bytes stays within the producer's credit
        (a first batch always fits: a producer may send one batch larger than its window)."""
        return not self.batches or self.bytes + size <= self.allowed

    def hold(self, batch: SendMessages, default_address: str, size: int) -> None:
        self.batches.append((batch, default_address, size))
        self.bytes += size

    def first(self) -> tuple[SendMessages, str]:
        batch, default_address, _ = self.batches[0]
        return batch, default_address

    def pop(self) -> tuple[SendMessages, str]:
        batch, default_address, size = self.batches.popleft()
        self.bytes -= size
        return batch, default_address


def batch_bytes(batch: SendMessages) -> int:
    return sum(m.ByteSize() for m in batch.messages)
