"""The journal as a gRPC service (`meshmq serve journal`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import grpc

from meshmq.errors import BrokerError, MeshMQError, Reason, abort_with
from meshmq.transport import add_servicer
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import journal_pb2_grpc as jgrpc

from .core import JournalCore
from .store import StoreError

log = logging.getLogger("meshmq.journal")


class JournalServicer(jgrpc.JournalServicer):
    def __init__(self, core: JournalCore) -> None:
        self.core = core

    async def Open(self, request: jpb.OpenRequest, context: grpc.aio.ServicerContext) -> jpb.OpenResponse:
        try:
            return await self.core.open(request)
        except StoreError as exc:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
            raise  # unreachable: abort raises

    async def Activate(
        self, request: jpb.ActivateRequest, context: grpc.aio.ServicerContext
    ) -> jpb.ActivateResponse:
        try:
            return await self.core.activate(request)
        except MeshMQError as exc:  # FENCED: a grant that is not newer; INVALID_REQUEST: before Open
            await abort_with(context, BrokerError(exc.reason, str(exc)))
        except StoreError as exc:
            await abort_with(context, BrokerError(Reason.STORE_UNAVAILABLE, str(exc)))
        raise AssertionError("unreachable: abort raises")

    async def Load(self, request: jpb.LoadRequest, context) -> AsyncIterator[jpb.LoadResponse]:
        async for page in self.core.load(request):
            yield page

    async def Append(self, request_iterator, context) -> AsyncIterator[jpb.AppendResponse]:
        # Requests are pipelined: read ahead while earlier ones commit, answer in order.
        pending: asyncio.Queue = asyncio.Queue()

        async def read() -> None:
            try:
                async for req in request_iterator:
                    pending.put_nowait(self.core.append(req))
            finally:
                pending.put_nowait(None)

        reader = asyncio.create_task(read())
        try:
            while True:
                fut = await pending.get()
                if fut is None:
                    break
                yield await fut
        finally:
            reader.cancel()

    async def ReadLargeMessage(self, request, context) -> AsyncIterator[jpb.LargeMessageChunk]:
        for chunk in await self.core.read_large(request):
            yield chunk

    async def ReadPage(self, request: jpb.ReadPageRequest, context) -> jpb.ReadPageResponse:
        return await self.core.read_page(request)


def add_journal_service(server: grpc.aio.Server, core: JournalCore) -> None:
    add_servicer(server, JournalServicer(core), jpb.DESCRIPTOR.services_by_name["Journal"])
