"""How a router reaches its journal: one interface, two transports.

`JournalAPI` is what the router calls. The journal service's own core object
satisfies it directly when hosted in the router's process (the embedded
default); `GrpcJournalClient` satisfies it over gRPC when the journal runs as
its own process. Both take and return the same protobuf messages.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Protocol

import grpc

from meshmq.errors import AuthenticationError, Reason, from_rpc_error
from meshmq.security.cluster_proof import ClusterProver
from meshmq.transport import open_channel
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import journal_pb2_grpc as jgrpc

log = logging.getLogger("meshmq.router.journal")


class JournalAPI(Protocol):
    description: str

    async def open(self, req: jpb.OpenRequest) -> jpb.OpenResponse:
        """Open the store (creating it and the node id on first start) and
        return its current epoch, unchanged: opening fences nobody."""
        ...

    async def activate(self, req: jpb.ActivateRequest) -> jpb.ActivateResponse:
        """Record the epoch the node's activation granted from the stored one
        (meshmq/activation.py: `local_grant` without an HA policy, else the
        policy's grant), applied by the router right after open and before load. Appends must then carry it, and appends
        from older epochs are refused. Raises FencedError, changing nothing,
        if the grant is not greater than the stored epoch."""
        ...

    def load(self, req: jpb.LoadRequest) -> AsyncIterator[jpb.LoadResponse]: ...

    def append(self, req: jpb.AppendRequest) -> asyncio.Future[jpb.AppendResponse]:
        """Queue a request; its future resolves once it is committed (or refused).
        Several may be in flight: they commit, and resolve, in submission order."""
        ...

    async def read_large(self, req: jpb.ReadLargeMessageRequest) -> list[jpb.LargeMessageChunk]: ...

    async def read_page(self, req: jpb.ReadPageRequest) -> jpb.ReadPageResponse:
        """The next paged messages of one queue, oldest first (see AppendRequest.add_paged)."""
        ...

    def stop_confirming(self) -> None:
        """The node is stopping and confirms nothing more: appends already
        stored that still wait for more than the store (a backup's
        acknowledgement, the quorum's notice) are answered not confirmed now;
        their writes stay. A journal that confirms once stored has nothing to do."""
        ...

    async def close(self) -> None: ...


class GrpcJournalClient:
    """A journal in another process, reached over one pipelined Append stream.

    `prover` proves cluster membership on every call, once the service proved
    its own (meshmq/security/cluster_proof.py); without a cluster password it adds nothing."""

    def __init__(self, target: str, *, prover: ClusterProver | None = None,
                 credentials: grpc.ChannelCredentials | None = None) -> None:
        self.description = f"journal service at {target}"
        self._target = target
        self._prover = prover or ClusterProver("", None)  # none: a journal service without a cluster password
        self._channel = open_channel(target, credentials=credentials)
        self._stub = jgrpc.JournalStub(self._channel)
        self._stream: grpc.aio.StreamStreamCall | None = None
        self._pending: dict[int, asyncio.Future[jpb.AppendResponse]] = {}
        self._reader: asyncio.Task | None = None
        self._sender: asyncio.Task | None = None
        self._outbox: asyncio.Queue[jpb.AppendRequest] = asyncio.Queue()

    async def _metadata(self, *, wait_for_ready: bool | None = None) -> tuple[tuple[str, str], ...]:
        return await self._prover.metadata(self._channel, self.description, timeout_s=30,
                                           wait_for_ready=wait_for_ready)

    async def open(self, req: jpb.OpenRequest) -> jpb.OpenResponse:
        try:
            metadata = await self._metadata(wait_for_ready=True)
            return await self._stub.Open(req, metadata=metadata, wait_for_ready=True, timeout=30)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAUTHENTICATED:
                raise
            raise AuthenticationError(
                f"the {self.description} refused this node: {exc.details()}; give the node the same "
                "cluster-user and cluster-password as the journal service"
            ) from None

    async def activate(self, req: jpb.ActivateRequest) -> jpb.ActivateResponse:
        try:
            metadata = await self._metadata(wait_for_ready=True)
            return await self._stub.Activate(req, metadata=metadata, wait_for_ready=True, timeout=30)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None

    async def load(self, req: jpb.LoadRequest) -> AsyncIterator[jpb.LoadResponse]:
        async for page in self._stub.Load(req, metadata=await self._metadata()):
            yield page

    def append(self, req: jpb.AppendRequest) -> asyncio.Future[jpb.AppendResponse]:
        fut: asyncio.Future[jpb.AppendResponse] = asyncio.get_running_loop().create_future()
        if self._sender is None:
            self._outbox = asyncio.Queue()
            self._sender = asyncio.create_task(self._send_requests(self._outbox))
        self._pending[req.request_id] = fut
        self._outbox.put_nowait(req)
        return fut

    async def _send_requests(self, outbox: asyncio.Queue) -> None:
        """Opens the Append stream (with a fresh proof) and is its one writer:
        pipelined appends go out in order."""
        try:
            stream = self._stub.Append(metadata=await self._metadata())
        except grpc.RpcError as exc:
            self._fail_all(None, f"journal unavailable: {exc.code().name}: {exc.details()}")
            return
        self._stream = stream
        self._reader = asyncio.create_task(self._read_responses(stream))
        while True:
            req = await outbox.get()
            try:
                await stream.write(req)
            except grpc.RpcError as exc:
                self._fail_all(stream, f"journal unavailable: {exc.code().name}: {exc.details()}")
                return
            except (asyncio.InvalidStateError, grpc.aio.UsageError) as exc:
                self._fail_all(stream, f"journal stream failed: {exc}")
                return

    async def _read_responses(self, stream: grpc.aio.StreamStreamCall) -> None:
        try:
            async for resp in stream:
                fut = self._pending.pop(resp.request_id, None)
                if fut is not None and not fut.done():
                    fut.set_result(resp)
            self._fail_all(stream, "journal stream closed")
        except grpc.RpcError as exc:
            self._fail_all(stream, f"journal unavailable: {exc.code().name} {exc.details()}")

    def _fail_all(self, stream, message: str) -> None:
        if self._stream is stream:
            self._stream = None
            if self._sender is not None and self._sender is not asyncio.current_task():
                self._sender.cancel()
            self._sender = None
        pending, self._pending = self._pending, {}
        if pending:
            log.error("%s; failing %d pending appends", message, len(pending))
        for rid, fut in pending.items():
            if not fut.done():
                fut.set_result(
                    jpb.AppendResponse(request_id=rid, ok=False, reason=Reason.STORE_UNAVAILABLE.value, message=message)
                )

    async def read_large(self, req: jpb.ReadLargeMessageRequest) -> list[jpb.LargeMessageChunk]:
        return [c async for c in self._stub.ReadLargeMessage(req, metadata=await self._metadata())]

    async def read_page(self, req: jpb.ReadPageRequest) -> jpb.ReadPageResponse:
        return await self._stub.ReadPage(req, metadata=await self._metadata(), timeout=60)

    def stop_confirming(self) -> None:
        """Appends resolve once the journal service stored them: nothing waits for more."""

    async def close(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
        if self._stream is not None:
            self._stream.cancel()
        await self._channel.close()
