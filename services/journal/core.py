"""The journal service's behaviour, independent of transport.

The gRPC servicer (server.py) and an in-process router both call this same
object with the same protobuf messages, so the embedded deployment and the
separate-process deployment run one implementation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from meshmq.v1 import journal_pb2 as jpb

from .store import JournalStore, describe_url
from .writer import GroupCommitWriter

log = logging.getLogger("meshmq.journal")


class JournalCore:
    def __init__(self, url: str, *, sync: bool = True, max_batch_records: int = 5000) -> None:
        self.url = url
        self.store = JournalStore(url, sync=sync)
        self.writer = GroupCommitWriter(self.store, max_batch_records=max_batch_records)
        self._started = False

    @property
    def description(self) -> str:
        return describe_url(self.url)

    async def open(self, req: jpb.OpenRequest) -> jpb.OpenResponse:
        resp = await asyncio.to_thread(self.store.open, req.node_name)
        if not self._started:
            self.store.start_checkpointer()
            self.writer.start()
            self._started = True
        log.info("journal opened: node %s epoch %d store %s", resp.node_id, resp.epoch, resp.store)
        return resp

    async def load(self, req: jpb.LoadRequest) -> AsyncIterator[jpb.LoadResponse]:
        pages = self.store.load_pages()
        while True:
            page = await asyncio.to_thread(next, pages, None)
            if page is None:
                return
            yield page

    def append(self, req: jpb.AppendRequest) -> asyncio.Future[jpb.AppendResponse]:
        """Queue one batch for group commit; the future resolves after the commit."""
        return self.writer.submit(req)

    async def read_large(self, req: jpb.ReadLargeMessageRequest) -> list[jpb.LargeMessageChunk]:
        return await asyncio.to_thread(self.store.read_large, req.message_id, req.from_seq, req.max_chunks or 8)

    async def close(self) -> None:
        await asyncio.to_thread(self.writer.close)
        self.store.close()
