"""Local transactions: sends and acks held until commit, undone on rollback."""

from __future__ import annotations

from dataclasses import dataclass, field

from .message import Ref, ServerMessage


@dataclass
class LocalTransaction:
    # Accepted messages with the duplicate-id entries they added, routed at commit.
    sends: list[ServerMessage] = field(default_factory=list)
    duplicate_ids: list[tuple[str, str, int]] = field(default_factory=list)
    # Delivered references acknowledged inside the transaction.
    acks: list[Ref] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.sends or self.acks)
