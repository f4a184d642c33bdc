"""Group commit: one thread feeds the writes; whatever queues up while a
transaction commits becomes the next transaction.

Callers on any event loop submit an AppendRequest and await a future; the
event loop never waits on SQL. The batch grows with load by itself (no timer),
so a lone append commits at once and a flood of appends costs one fsync per
batch rather than one per message. The thread hands each batch to `apply`
(the writer process, see writer_process.py) and waits with the GIL released.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable

from meshmq.v1 import journal_pb2 as jpb

log = logging.getLogger("meshmq.journal")

_STOP = object()


def record_count(req: jpb.AppendRequest) -> int:
    """Rough size of a request, to bound a transaction."""
    return 1 + len(req.add_messages) + len(req.add_refs) + len(req.delete_refs) + len(req.delete_messages) + len(req.events) + len(req.add_large_chunks)


ApplyBatch = Callable[[list[jpb.AppendRequest]], list[jpb.AppendResponse]]


class GroupCommitWriter:
    def __init__(self, apply: ApplyBatch, *, max_batch_records: int = 5000) -> None:
        self._apply = apply
        self._max = max_batch_records
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="journal-writer", daemon=True)
        # Metrics: transactions committed, requests in them, seconds spent in SQL.
        self.transactions = 0
        self.requests = 0
        self.records = 0
        self.busy_seconds = 0.0

    def start(self) -> None:
        self._thread.start()

    def submit(self, req: jpb.AppendRequest) -> asyncio.Future[jpb.AppendResponse]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[jpb.AppendResponse] = loop.create_future()
        self._queue.put((req, fut, loop))
        return fut

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        log.info(
            "journal writer: %d transactions, %d requests, %d records, %.2f s in SQL",
            self.transactions,
            self.requests,
            self.records,
            self.busy_seconds,
        )

    def _run(self) -> None:
        stopping = False
        while not stopping:
            item = self._queue.get()
            if item is _STOP:
                return
            batch = [item]
            size = record_count(item[0])
            while size < self._max:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.append(item)
                size += record_count(item[0])
            started = time.perf_counter()
            try:
                responses = self._apply([b[0] for b in batch])
            except Exception as exc:  # a bug, not a store failure: fail the batch, keep the thread
                log.exception("journal writer failed")
                responses = [
                    jpb.AppendResponse(request_id=b[0].request_id, ok=False, reason="INTERNAL", message=str(exc))
                    for b in batch
                ]
            self.busy_seconds += time.perf_counter() - started
            self.transactions += 1
            self.requests += len(batch)
            self.records += size
            by_loop: dict[asyncio.AbstractEventLoop, list] = defaultdict(list)
            for (_, fut, loop), resp in zip(batch, responses):
                by_loop[loop].append((fut, resp))
            for loop, pairs in by_loop.items():
                try:
                    loop.call_soon_threadsafe(_resolve, pairs)
                except RuntimeError:  # the caller's loop is closed
                    pass


def _resolve(pairs: list) -> None:
    for fut, resp in pairs:
        if not fut.done():
            fut.set_result(resp)
