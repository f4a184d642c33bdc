"""Duplicate detection: the per-address cache of recently seen duplicate ids.

Like Artemis's DuplicateIDCache: a bounded FIFO of the last id-cache-size ids
per address. Positions grow monotonically so the journal can delete exactly
the evicted entry even if the same id was added again since.
`DuplicateDetection` is the router's use of the caches: claim, persist, release.

Entries alone would not bound memory (an id may be 255 characters), so each
cache is also bounded in bytes (id-cache-max-bytes, estimated as each id's
characters plus ENTRY_OVERHEAD): past it, the cache forgets its oldest ids
— always keeping its newest — and its window is shorter than id-cache-size;
a warning says so once per address.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import logging

from meshmq.errors import BrokerError, Reason
from meshmq.v1 import journal_pb2 as jpb

log = logging.getLogger("meshmq.router")

# Estimated bytes one cache entry costs besides its id's characters: the str
# object, the position int and the ordered dict's slot.
ENTRY_OVERHEAD = 120


def entry_bytes(dup_id: str) -> int:
    return len(dup_id) + ENTRY_OVERHEAD


class DuplicateIdCache:
    def __init__(self, address: str, size: int, max_bytes: int = -1) -> None:
        self.address = address
        self.size = max(1, size)
        self.max_bytes = max_bytes  # -1: no limit
        self.bytes = 0
        # Set once the byte bound has made it forget ids the entry count would have kept.
        self.shortened = False
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
        self.bytes += entry_bytes(dup_id)
        return pos, self._evict()

    def _evict(self) -> list[tuple[str, int]]:
        """The oldest entries past the entry count or the byte bound, removed."""
        evicted = []
        while len(self._ids) > self.size:
            evicted.append(self._ids.popitem(last=False))
        while 0 <= self.max_bytes < self.bytes - sum(entry_bytes(d) for d, _ in evicted) and len(self._ids) > 1:
            evicted.append(self._ids.popitem(last=False))
            self.shortened = True
        self.bytes -= sum(entry_bytes(d) for d, _ in evicted)
        return evicted

    def entries(self) -> list[tuple[str, int]]:
        """(id, position) of every entry, oldest first."""
        return list(self._ids.items())

    def remove(self, dup_id: str, position: int) -> None:
        """Forget an id whose message was not stored after all (failed or rolled back)."""
        if self._ids.get(dup_id) == position:
            del self._ids[dup_id]
            self.bytes -= entry_bytes(dup_id)

    def restore(self, dup_id: str, position: int) -> list[tuple[str, int]]:
        """Load an entry from the journal at recovery (oldest first).

        Returns entries pushed out because the configured size shrank, so the
        caller can delete them from the journal too.
        """
        if dup_id in self._ids:
            self.bytes -= entry_bytes(dup_id)
        self._ids[dup_id] = position
        self._next_position = max(self._next_position, position + 1)
        self.bytes += entry_bytes(dup_id)
        return self._evict()


@dataclass(frozen=True, slots=True)
class DuplicateClaim:
    """A duplicate id taken by an accepted message, until it is stored or given back."""

    address: str
    duplicate_id: str
    position: int


class DuplicateDetection:
    """The node's duplicate-id caches, one per address, and their journal rows.

    A message's duplicate id is claimed when the message is accepted (a second
    message with the same id is refused DUPLICATE_ID at once), persisted with
    the message when it is stored, and given back when the message is not
    stored after all (a refused append, a rollback). Rows are added to the
    journal batch being filled, in the same step as the change in memory.
    """

    def __init__(
        self, cache_size: Callable[[str], int | None], default_size: int, persist: bool,
        batch: Callable[[], jpb.AppendRequest], max_bytes: int = -1,
    ) -> None:
        self._cache_size = cache_size
        self._default_size = default_size
        self.max_bytes = max_bytes
        self.persist_enabled = persist
        self._batch = batch
        self._caches: dict[str, DuplicateIdCache] = {}

    def cache(self, address: str) -> DuplicateIdCache:
        cache = self._caches.get(address)
        if cache is None:
            size = self._cache_size(address) or self._default_size
            cache = self._caches[address] = DuplicateIdCache(address, size, self.max_bytes)
        return cache

    def claim(self, address: str, duplicate_id: str) -> DuplicateClaim:
        """Take a duplicate id for a message being accepted; DUPLICATE_ID if it was seen."""
        cache = self.cache(address)
        if duplicate_id in cache:
            raise BrokerError(Reason.DUPLICATE_ID, f"duplicate id {duplicate_id!r} was already sent to {address!r}")
        was_shortened = cache.shortened
        pos, evicted = cache.add(duplicate_id)
        if cache.shortened and not was_shortened:
            log.warning(
                "duplicate-id cache of address %s reached id-cache-max-bytes (%d): it remembers %d ids, "
                "fewer than its id-cache-size %d", address, self.max_bytes, len(cache), cache.size,
            )
        if self.persist_enabled and evicted:
            batch = self._batch()
            for dup_id, old in evicted:
                batch.delete_duplicate_ids.add(address=address, duplicate_id=dup_id, position=old)
        return DuplicateClaim(address, duplicate_id, pos)

    def persist(self, claim: DuplicateClaim) -> None:
        """Store a claim with the message that made it (same journal batch)."""
        if self.persist_enabled:
            self._batch().add_duplicate_ids.add(
                address=claim.address, duplicate_id=claim.duplicate_id, position=claim.position
            )

    def release(self, claims: Iterable[DuplicateClaim], *, delete_rows: bool) -> None:
        """Give ids back: their messages were not stored after all. delete_rows
        also deletes rows that were already added to the journal batch."""
        for claim in claims:
            self.cache(claim.address).remove(claim.duplicate_id, claim.position)
            if delete_rows and self.persist_enabled:
                self._batch().delete_duplicate_ids.add(
                    address=claim.address, duplicate_id=claim.duplicate_id, position=claim.position
                )

    def drop(self, address: str) -> None:
        """The address is gone: its cache and stored entries go with it, so
        addresses that come and go (auto-created, auto-deleted) leave nothing behind."""
        cache = self._caches.pop(address, None)
        if cache is not None and self.persist_enabled:
            batch = self._batch()
            for dup_id, pos in cache.entries():
                batch.delete_duplicate_ids.add(address=address, duplicate_id=dup_id, position=pos)

    def restore(self, address: str, duplicate_id: str, position: int) -> None:
        """Load one stored entry at recovery (oldest first); entries beyond the
        configured size are deleted from the journal too."""
        for dup_id, pos in self.cache(address).restore(duplicate_id, position):
            self._batch().delete_duplicate_ids.add(address=address, duplicate_id=dup_id, position=pos)
