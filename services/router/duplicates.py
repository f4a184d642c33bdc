"""Duplicate detection: the per-address cache of recently seen duplicate ids.

Like Artemis's DuplicateIDCache: a bounded FIFO of the last id-cache-size ids
per address. Positions grow monotonically so the journal can delete exactly
the evicted entry even if the same id was added again since.
"""

from __future__ import annotations

from collections import OrderedDict


class DuplicateIdCache:
    def __init__(self, address: str, size: int) -> None:
        self.address = address
        self.size = max(1, size)
        self._ids: OrderedDict[str, int] = OrderedDict()
        self._next_position = 1

    def __contains__(self, dup_id: str) -> bool:
        return dup_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, dup_id: str) -> tuple[int, list[tuple[str, int]]]:
        """Record an id; returns its position and the (id, position) pairs evicted."""
        pos = self._next_position
        self._next_position += 1
        self._ids[dup_id] = pos
        self._ids.move_to_end(dup_id)
        evicted = []
        while len(self._ids) > self.size:
            evicted.append(self._ids.popitem(last=False))
        return pos, evicted

    def remove(self, dup_id: str, position: int) -> None:
        """Forget an id whose message was not stored after all (failed or rolled back)."""
        if self._ids.get(dup_id) == position:
            del self._ids[dup_id]

    def restore(self, dup_id: str, position: int) -> list[tuple[str, int]]:
        """Load an entry from the journal at recovery (oldest first).

        Returns entries pushed out because the configured size shrank, so the
        caller can delete them from the journal too.
        """
        self._ids[dup_id] = position
        self._next_position = max(self._next_position, position + 1)
        evicted = []
        while len(self._ids) > self.size:
            evicted.append(self._ids.popitem(last=False))
        return evicted
