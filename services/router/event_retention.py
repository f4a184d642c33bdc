"""Event retention: the oldest events of the journal's event log are deleted
once they are older than `journal.event-retention` (docs/journal-schema.md).

Why the router asks, in an append, rather than the journal pruning on its
own: a prune then goes the way every change goes — stamped with this node's
epoch (a fenced old live deletes nothing), in order with the other appends,
and streamed to a replicating backup, whose copy the same request prunes. The
journal deletes whole milliseconds, oldest first, about PRUNE_ROWS at a time,
so one prune never holds the store for long; while a request deletes
anything, the next follows at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from meshmq.v1 import journal_pb2 as jpb

log = logging.getLogger("meshmq.router.event_retention")

# Rows per prune request: a few milliseconds of the store's time, never a stall.
PRUNE_ROWS = 5000


@dataclass(slots=True)
class EventLogStatus:
    """What management shows of the event log: whether it is written, how long
    it is kept (ms, -1 = for ever), from which instant (ms) every event is
    still there (0: none was ever deleted), and how many events were deleted
    since the node started."""

    enabled: bool
    retention_ms: int
    kept_from: int = 0
    pruned: int = 0


class EventRetention:
    """Every `scan_period_ms`, delete the events older than `status.retention_ms`
    through `batch` (the journal request being filled) and `stored` (its
    commit), and keep `status` up to date."""

    def __init__(self, batch: Callable[[], jpb.AppendRequest],
                 stored: Callable[[], asyncio.Future[jpb.AppendResponse]], status: EventLogStatus,
                 scan_period_ms: int, clock: Callable[[], float] = time.time) -> None:
        self._batch = batch
        self._stored = stored
        self.status = status
        self.scan_period_ms = scan_period_ms
        self._clock = clock

    @property
    def retention_ms(self) -> int:
        return self.status.retention_ms

    async def prune_once(self) -> int:
        """Delete every event older than the retention now; how many went."""
        before_ts = int(self._clock() * 1000) - self.retention_ms
        total = 0
        while True:
            req = self._batch()
            req.prune_events.before_ts = before_ts
            req.prune_events.max_rows = PRUNE_ROWS
            answer = await self._stored()
            if not answer.ok:  # the node halts on a refused append (Broker.halt): nothing more to do
                return total
            total += answer.pruned_events
            self.status.pruned += answer.pruned_events
            self.status.kept_from = max(self.status.kept_from, answer.events_kept_from)
            if answer.pruned_events == 0:
                return total

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.scan_period_ms / 1000)
            try:
                n = await self.prune_once()
            except Exception as exc:  # noqa: BLE001 - a journal failure halts the node; the next scan retries otherwise
                log.warning("event retention: prune failed (%s); trying again in %d ms", exc, self.scan_period_ms)
                continue
            if n:
                log.info("event retention: deleted %d events older than %d ms", n, self.retention_ms)
