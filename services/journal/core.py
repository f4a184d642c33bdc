"""The journal service's behaviour, independent of transport.

The gRPC servicer (server.py) and an in-process router both call this same
object with the same protobuf messages, so the embedded deployment and the
separate-process deployment run one implementation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from meshmq.errors import Reason
from meshmq.metrics import LATENCY_BUCKETS, SIZE_BUCKETS, Families, Histogram
from meshmq.v1 import journal_pb2 as jpb

from .store import JournalStore, describe_url
from .writer_process import WriterProcess

log = logging.getLogger("meshmq.journal")


class JournalCore:
    def __init__(self, url: str, *, sync: bool = True, max_batch_records: int = 5000,
                 stuck_transaction_ms: int = 0) -> None:
        self.url = url
        self.sync = sync
        # Reads (open, recovery, large-message bodies) use this store; every
        # write goes through the writer process, started once the node id is known.
        # Only the writer's sessions are ended when stuck in a transaction (they hold
        # the epoch row FOR SHARE, which a backup's activation must update);
        # recovery's paged read is one long transaction that takes no row lock.
        self.store = JournalStore(url, sync=sync)
        self.writer: WriterProcess | None = None
        self._max_batch_records = max_batch_records
        self._stuck_transaction_ms = stuck_transaction_ms
        self._starting = asyncio.Lock()  # two Opens at once start one writer process
        # Observed once per SQL transaction (the writer process reports each), read at scrape time.
        self.transaction_appends = Histogram(
            "meshmq_journal_transaction_appends", "Appends (router group-commit batches) merged into one SQL "
            "transaction by the journal writer.", SIZE_BUCKETS)
        self.transaction_records = Histogram(
            "meshmq_journal_transaction_records", "Records (messages, references, acknowledgements, events…) "
            "in one SQL transaction of the journal writer.", SIZE_BUCKETS)
        self.transaction_seconds = Histogram(
            "meshmq_journal_transaction_seconds", "Seconds the journal writer spent applying and committing one "
            "SQL transaction (fsync included when journal.sync is true).", LATENCY_BUCKETS)

    @property
    def description(self) -> str:
        return describe_url(self.url)

    async def open(self, req: jpb.OpenRequest) -> jpb.OpenResponse:
        resp = await asyncio.to_thread(self.store.open, req.node_name)
        async with self._starting:
            if self.writer is None:
                writer = WriterProcess(
                    self.url, sync=self.sync, node_id=resp.node_id, max_batch_records=self._max_batch_records,
                    stuck_transaction_ms=self._stuck_transaction_ms, on_transaction=self._transaction,
                )
                await asyncio.to_thread(writer.start)
                await writer.attach()
                self.writer = writer
        log.info("journal opened: node %s epoch %d store %s", resp.node_id, resp.epoch, resp.store)
        return resp

    async def activate(self, req: jpb.ActivateRequest) -> jpb.ActivateResponse:
        """Record a granted epoch (see JournalAPI.activate); FencedError if it is not newer."""
        return jpb.ActivateResponse(epoch=await asyncio.to_thread(self.store.activate, req.epoch))

    async def load(self, req: jpb.LoadRequest) -> AsyncIterator[jpb.LoadResponse]:
        pages = self.store.load_pages()
        while True:
            page = await asyncio.to_thread(next, pages, None)
            if page is None:
                return
            yield page

    def _transaction(self, appends: int, records: int, seconds: float) -> None:
        self.transaction_appends.observe(appends)
        self.transaction_records.observe(records)
        self.transaction_seconds.observe(seconds)

    def fill_metrics(self, fam: Families) -> None:
        """The journal's metrics (meshmq.metrics: run at scrape time, on this loop)."""
        for hist in (self.transaction_appends, self.transaction_records, self.transaction_seconds):
            fam.histogram(hist)
        fam.gauge("meshmq_journal_writer_up", "1 while the journal's writer process runs and takes appends.",
                  int(self.writer is not None and self.writer.running))

    def append(self, req: jpb.AppendRequest) -> asyncio.Future[jpb.AppendResponse]:
        """Queue one batch for group commit; the future resolves after the commit."""
        if self.writer is None:
            refused = asyncio.get_running_loop().create_future()
            refused.set_result(
                jpb.AppendResponse(
                    request_id=req.request_id,
                    ok=False,
                    reason=Reason.INVALID_REQUEST.value,
                    message="append before open: open the journal first",
                )
            )
            return refused
        return self.writer.submit(req)

    async def read_page(self, req: jpb.ReadPageRequest) -> jpb.ReadPageResponse:
        messages = await asyncio.to_thread(
            self.store.read_page, req.queue_id, req.after_message_id, req.max_messages or 1000, req.max_bytes
        )
        return jpb.ReadPageResponse(messages=messages)

    async def read_large(self, req: jpb.ReadLargeMessageRequest) -> list[jpb.LargeMessageChunk]:
        return await asyncio.to_thread(self.store.read_large, req.message_id, req.from_seq, req.max_chunks or 8)

    def stop_confirming(self) -> None:
        """Appends resolve once stored: nothing waits for more (JournalAPI)."""

    async def close(self) -> None:
        if self.writer is not None:
            await self.writer.close()
        self.store.close()
