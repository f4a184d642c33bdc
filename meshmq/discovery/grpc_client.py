"""`GrpcDiscoveryClient`: `DiscoveryAPI` over gRPC, for a discovery service in
another process (`meshmq serve discovery`).

It turns gRPC statuses back into the typed discovery errors, so a caller
cannot tell this transport from a `DiscoveryCore` hosted in its own process,
and it logs an unreachable service once per outage (`outage_log`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence

import grpc

from meshmq.aio import wait_for
from meshmq.errors import Reason, from_rpc_error
from meshmq.transport import open_channel
from meshmq.v1 import discovery_pb2 as dpb
from meshmq.v1 import discovery_pb2_grpc as dgrpc

from .api import Membership
from .errors import DiscoveryConfigError, DiscoveryError, DiscoveryUnavailableError, NodeIdInUseError
from .retry import outage_log
from .timing import REQUEST_TIMEOUT_S


class GrpcDiscoveryClient:
    """The discovery service in another process (`meshmq serve discovery`).

    `prover` proves cluster membership on every call (to announce), once the
    service proved its own (meshmq/security/cluster_proof.py); `metadata`
    goes with every call too: a user's credentials, to list and watch."""

    def __init__(self, target: str, *, credentials: grpc.ChannelCredentials | None = None,
                 metadata: Sequence[tuple[str, str]] = (), prover: ClusterProver | None = None) -> None:
        self.target = target
        self.metadata = tuple(metadata)
        self._prover = prover
        self.description = f"discovery service at {target}"
        self._channel = open_channel(target, credentials=credentials)
        self._stub = dgrpc.DiscoveryStub(self._channel)
        self.outage = outage_log(self.description)

    async def call_metadata(self) -> tuple[tuple[str, str], ...]:
        """What goes with a call: the user's metadata, and the cluster proof
        (raises grpc.aio.AioRpcError UNAUTHENTICATED when the service cannot prove itself)."""
        if self._prover is None:
            return self.metadata
        return self.metadata + await self._prover.metadata(self._channel, self.description,
                                                           timeout_s=REQUEST_TIMEOUT_S)

    def error(self, exc: grpc.RpcError, started_at: float | None = None) -> DiscoveryError:
        """The typed error for a failed call; an unreachable service is logged (once)."""
        err = from_rpc_error(exc)
        message = str(err)
        if err.reason == Reason.DUPLICATE_ID:
            return NodeIdInUseError(message)
        if err.reason == Reason.INVALID_REQUEST:
            return DiscoveryConfigError(message)
        code = exc.code() if hasattr(exc, "code") else None
        if err.reason in (Reason.STORE_UNAVAILABLE, Reason.CONNECTION_FAILED) or code == grpc.StatusCode.CANCELLED:
            self.outage.failed(message, started_at)
            return DiscoveryUnavailableError(f"{self.description}: {message}")
        return DiscoveryError(f"{self.description}: {message}", err.reason)

    async def announce(self, join: dpb.AnnounceRequest.Join) -> Membership:
        membership = _StreamMembership(self, join)
        await membership.open()
        return membership

    async def list(self, req: dpb.ListNodesRequest) -> dpb.ListNodesResponse:
        started = time.monotonic()
        try:
            resp = await self._stub.List(req, metadata=await self.call_metadata(), timeout=REQUEST_TIMEOUT_S)
        except grpc.RpcError as exc:
            raise self.error(exc, started) from None
        self.outage.ok(started)
        return resp

    async def watch(self, req: dpb.WatchNodesRequest) -> AsyncIterator[dpb.WatchNodesResponse]:
        started = time.monotonic()
        try:
            call = self._stub.Watch(req, metadata=await self.call_metadata())
        except grpc.RpcError as exc:
            raise self.error(exc, started) from None
        try:
            async for resp in call:
                self.outage.ok(started)
                yield resp
        except grpc.RpcError as exc:
            raise self.error(exc, started) from None
        finally:
            call.cancel()

    async def close(self) -> None:
        await self._channel.close()


class _StreamMembership:
    """A membership held by the discovery service for as long as our Announce
    stream lives. If the stream breaks, the next call opens a new one and joins
    again with the same instance_id, which resumes the announcement."""

    def __init__(self, client: GrpcDiscoveryClient, join: dpb.AnnounceRequest.Join) -> None:
        self._client = client
        self._join = dpb.AnnounceRequest.Join()
        self._join.CopyFrom(join)
        self._call: grpc.aio.StreamStreamCall | None = None
        self.lease_ttl_ms = 0

    @property
    def node(self) -> dpb.ClusterNode:
        return self._join.node

    async def open(self) -> None:
        started = time.monotonic()
        try:
            call = self._client._stub.Announce(metadata=await self._client.call_metadata())
        except grpc.RpcError as exc:
            raise self._client.error(exc, started) from None
        try:
            await call.write(dpb.AnnounceRequest(join=self._join))
            # No deadline: a join may wait up to refresh-timeout for a crashed
            # predecessor's lease to lapse; a dead service ends the call anyway.
            resp = await call.read()
        except grpc.RpcError as exc:
            call.cancel()
            raise self._client.error(exc, started) from None
        if resp is grpc.aio.EOF or resp.WhichOneof("kind") != "joined":
            call.cancel()
            raise DiscoveryUnavailableError(
                f"{self._client.description}: the announce stream ended before the join was confirmed"
            )
        self._client.outage.ok(started)
        self._call = call
        self.lease_ttl_ms = resp.joined.lease_ttl_ms

    def _drop(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    async def _exchange(self, req: dpb.AnnounceRequest, expect: str) -> dpb.AnnounceResponse:
        if self._call is None:
            await self.open()
        started = time.monotonic()
        try:
            await self._call.write(req)
            resp = await wait_for(self._call.read(), REQUEST_TIMEOUT_S)
        except grpc.RpcError as exc:
            self._drop()
            raise self._client.error(exc, started) from None
        except (TimeoutError, grpc.aio.UsageError, asyncio.InvalidStateError) as exc:
            self._drop()
            problem = "no answer on the announce stream" if isinstance(exc, TimeoutError) else "the announce stream broke"
            self._client.outage.failed(problem, started)
            raise DiscoveryUnavailableError(f"{self._client.description}: {problem}") from None
        if resp is grpc.aio.EOF or resp.WhichOneof("kind") != expect:
            self._drop()
            self._client.outage.failed("the announce stream closed", started)
            raise DiscoveryUnavailableError(f"{self._client.description}: the announce stream closed")
        return resp

    async def keep_alive(self) -> None:
        started = time.monotonic()
        resp = await self._exchange(dpb.AnnounceRequest(keep_alive=dpb.AnnounceRequest.KeepAlive()), "keep_alive_ack")
        if not resp.keep_alive_ack.ok:
            problem = f"the service cannot reach its backend: {resp.keep_alive_ack.message}"
            self._client.outage.failed(problem, started)
            raise DiscoveryUnavailableError(f"{self._client.description}: {problem}")
        self._client.outage.ok(started)

    async def update(self, node: dpb.ClusterNode) -> None:
        await self._exchange(dpb.AnnounceRequest(update=dpb.AnnounceRequest.Update(node=node)), "updated")
        self._join.node.CopyFrom(node)

    async def leave(self) -> None:
        await self._exchange(dpb.AnnounceRequest(leave=dpb.AnnounceRequest.Leave()), "left")
        try:
            await self._call.done_writing()
        except (grpc.RpcError, grpc.aio.UsageError):
            pass
        self._drop()
