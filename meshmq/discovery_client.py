"""How a node or a client takes part in discovery: one interface, two transports.

`DiscoveryAPI` is what callers use. The discovery service's own core object
(`services.discovery.core.DiscoveryCore`) satisfies it directly when hosted in
the caller's process — the node then talks to etcd itself and its own process
holds its lease, so a kill -9 of the node stops the keep-alives; and
`GrpcDiscoveryClient` satisfies it over gRPC when discovery runs as its own
process (`meshmq serve discovery`). Both take and return the protobuf messages
of `proto/meshmq/v1/discovery.proto`.

On top of either:

* `Announcer` keeps one node in the topology: join, a keep-alive every
  broadcast-period, an announcement again when etcd lost the lease, a leave on
  a graceful stop.
* `TopologyWatcher` keeps one cluster's topology up to date from a watch
  stream, resumes it after the stream breaks, and keeps the last known
  topology meanwhile (`TopologyState` is its pure core).

Every failure reaches the caller as a `DiscoveryError` subclass; an outage of
etcd or of the discovery service is logged once when it starts and once when
it ends (`OutageLog`), however many keep-alives fail in between.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Protocol

import grpc

from meshmq.config import defaults
from meshmq.errors import MeshMQError, Reason, from_rpc_error
from meshmq.transport import open_channel
from meshmq.v1 import discovery_pb2 as dpb
from meshmq.v1 import discovery_pb2_grpc as dgrpc

log = logging.getLogger("meshmq.discovery")

# Artemis defaults (ms), from the one place defaults live.
BROADCAST_PERIOD_MS = defaults.BROADCAST_PERIOD
REFRESH_TIMEOUT_MS = defaults.REFRESH_TIMEOUT
INITIAL_WAIT_TIMEOUT_MS = defaults.INITIAL_WAIT_TIMEOUT

# How long one request to the discovery service may take (a join waiting for a
# crashed predecessor's lease to lapse takes up to refresh-timeout more).
REQUEST_TIMEOUT_S = 5.0
# Retries start here and double up to a cap given by the settings (see Backoff users).
RETRY_INITIAL_S = 0.1


# --------------------------------------------------------------------------- errors


class DiscoveryError(MeshMQError):
    """Base of every discovery failure."""


class NodeIdInUseError(DiscoveryError):
    """Another, live node announces the same node id (a copied data directory)."""

    reason = Reason.DUPLICATE_ID


class DiscoveryUnavailableError(DiscoveryError):
    """etcd or the discovery service cannot be reached (now, or within the deadline)."""

    reason = Reason.STORE_UNAVAILABLE


class DiscoveryConfigError(DiscoveryError, ValueError):
    """An announcement or a discovery setting that cannot work; the message says which."""

    reason = Reason.INVALID_REQUEST


# --------------------------------------------------------------------------- retry and logging


class Backoff:
    """Exponential retry delays: initial, doubling, never above cap; jittered
    downwards so that many nodes retrying together spread out."""

    def __init__(self, initial_s: float = RETRY_INITIAL_S, cap_s: float = 2.0, *, jitter: float = 0.2,
                 rng: Callable[[], float] = random.random) -> None:
        self.initial_s = min(initial_s, cap_s)
        self.cap_s = cap_s
        self.jitter = jitter
        self._rng = rng
        self._attempt = 0

    def next(self) -> float:
        delay = min(self.cap_s, self.initial_s * 2**self._attempt)
        self._attempt = min(self._attempt + 1, 32)
        return delay * (1 - self.jitter * self._rng())

    def reset(self) -> None:
        self._attempt = 0


class OutageLog:
    """Logs an outage of one target once when it starts and once when it ends.

    Every attempt reports its outcome with the time it started; a failure of an
    attempt that started before the last recovery, or a success of one that
    started before the outage, says nothing about the present and is ignored.
    """

    def __init__(self, target: str, *, logger: logging.Logger = log, clock: Callable[[], float] = time.monotonic) -> None:
        self.target = target
        self._log = logger
        self._clock = clock
        self.down_since: float | None = None
        self._recovered_at = -math.inf

    @property
    def is_down(self) -> bool:
        return self.down_since is not None

    def failed(self, problem: str, started_at: float | None = None) -> None:
        if started_at is not None and started_at < self._recovered_at:
            return
        if self.down_since is None:
            self.down_since = self._clock()
            self._log.warning(
                "%s is unreachable: %s; keeping the last known topology and retrying "
                "(not logged again until it is back)", self.target, problem,
            )
        else:
            self._log.debug("%s still unreachable: %s", self.target, problem)

    def ok(self, started_at: float | None = None) -> None:
        if self.down_since is None or (started_at is not None and started_at < self.down_since):
            return
        now = self._clock()
        self._log.warning("%s is reachable again after %.1f s", self.target, now - self.down_since)
        self.down_since = None
        self._recovered_at = now


_OUTAGES: dict[str, OutageLog] = {}


def outage_log(target: str) -> OutageLog:
    """The process-wide outage log of one target (e.g. "etcd at 127.0.0.1:2379"),
    shared by every announcer and watcher that reaches it."""
    found = _OUTAGES.get(target)
    if found is None:
        found = _OUTAGES[target] = OutageLog(target)
    return found


# --------------------------------------------------------------------------- the interface


class Membership(Protocol):
    """One node's place in the topology, as returned by `DiscoveryAPI.announce`.
    The caller keeps it alive (Announcer does, every broadcast-period)."""

    node: dpb.ClusterNode
    lease_ttl_ms: int

    async def keep_alive(self) -> None: ...

    async def update(self, node: dpb.ClusterNode) -> None: ...

    async def leave(self) -> None: ...


class WatchSource(Protocol):
    description: str

    def watch(self, req: dpb.WatchNodesRequest) -> AsyncIterator[dpb.WatchNodesResponse]: ...


class DiscoveryAPI(WatchSource, Protocol):
    async def announce(self, join: dpb.AnnounceRequest.Join) -> Membership: ...

    async def list(self, req: dpb.ListNodesRequest) -> dpb.ListNodesResponse: ...

    async def close(self) -> None: ...


# --------------------------------------------------------------------------- topology (pure)


def _event(kind: int, node: dpb.ClusterNode) -> dpb.NodeEvent:
    return dpb.NodeEvent(kind=kind, node=node)


class TopologyState:
    """One cluster's topology as a watcher knows it, and the rules that change it.

    Pure: no I/O, the caller passes the time. An event from the source is
    applied as it is (a delete in etcd means the lease lapsed or the node
    left). A snapshot after the watch was broken (a resync) is different: a
    node missing from it may only not have announced itself again yet (etcd
    restarted empty, or the discovery service restarted), so it stays for
    `grace_s` (refresh-timeout) and goes only if it does not reappear.
    """

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.nodes: dict[str, dpb.ClusterNode] = {}
        self.pending_removal: dict[str, float] = {}
        self.synced = False

    def snapshot(self) -> list[dpb.ClusterNode]:
        return [self.nodes[k] for k in sorted(self.nodes)]

    def apply(self, resp: dpb.WatchNodesResponse, now: float) -> list[dpb.NodeEvent]:
        kind = resp.WhichOneof("kind")
        if kind == "snapshot":
            return self.resync(resp.snapshot.nodes, now)
        if kind == "event":
            if resp.event.kind == dpb.NODE_DOWN:
                return self.remove(resp.event.node.node_id)
            return self.put(resp.event.node)
        return []

    def resync(self, nodes: Iterable[dpb.ClusterNode], now: float) -> list[dpb.NodeEvent]:
        events: list[dpb.NodeEvent] = []
        seen = set()
        for node in nodes:
            seen.add(node.node_id)
            events += self.put(node)
        for node_id in self.nodes.keys() - seen:
            self.pending_removal[node_id] = now + self.grace_s
        self.synced = True
        return events

    def put(self, node: dpb.ClusterNode) -> list[dpb.NodeEvent]:
        self.pending_removal.pop(node.node_id, None)
        old = self.nodes.get(node.node_id)
        if old == node:
            return []
        stored = dpb.ClusterNode()
        stored.CopyFrom(node)
        self.nodes[node.node_id] = stored
        return [_event(dpb.NODE_UP if old is None else dpb.NODE_UPDATED, stored)]

    def remove(self, node_id: str) -> list[dpb.NodeEvent]:
        self.pending_removal.pop(node_id, None)
        old = self.nodes.pop(node_id, None)
        return [] if old is None else [_event(dpb.NODE_DOWN, old)]

    def expire(self, now: float) -> list[dpb.NodeEvent]:
        due = [node_id for node_id, deadline in self.pending_removal.items() if deadline <= now]
        return [e for node_id in sorted(due) for e in self.remove(node_id)]

    def next_deadline(self) -> float | None:
        return min(self.pending_removal.values(), default=None)


# --------------------------------------------------------------------------- watching


class Subscription:
    """A snapshot of the topology and, after it, every change (`WatchNodesResponse`
    with an event or a status), in order. Close it when done."""

    def __init__(self, watcher: TopologyWatcher, nodes: list[dpb.ClusterNode], available: bool, message: str) -> None:
        self.nodes = nodes
        self.available = available
        self.message = message
        self._watcher = watcher
        self.queue: asyncio.Queue[dpb.WatchNodesResponse] = asyncio.Queue()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> dpb.WatchNodesResponse:
        return await self.queue.get()

    def close(self) -> None:
        self._watcher._subscribers.discard(self)


class TopologyWatcher:
    """One cluster's topology, kept up to date from a watch stream.

    The stream's source is a `DiscoveryAPI` (or, inside the discovery service,
    a backend). When the stream breaks, the watcher keeps the topology it had
    and opens it again with backoff (capped at a quarter of refresh-timeout,
    at most 2 s); the source sends a fresh snapshot and the watcher applies it
    as a resync (see `TopologyState`).
    """

    def __init__(self, source: WatchSource, cluster_name: str, *, refresh_timeout_ms: int = REFRESH_TIMEOUT_MS,
                 initial_wait_timeout_ms: int = INITIAL_WAIT_TIMEOUT_MS, log_events: bool = False) -> None:
        self.source = source
        self.cluster_name = cluster_name
        self.log_events = log_events
        self.initial_wait_timeout_ms = initial_wait_timeout_ms
        self.available = False
        self.problem = ""
        self._state = TopologyState(grace_s=refresh_timeout_ms / 1000)
        self._retry = Backoff(cap_s=min(2.0, refresh_timeout_ms / 4000))
        self._subscribers: set[Subscription] = set()
        self._changed = asyncio.Condition()
        self._wake_expiry = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    @property
    def synced(self) -> bool:
        """A snapshot arrived: `nodes()` is the topology, not a guess."""
        return self._state.synced

    def nodes(self) -> list[dpb.ClusterNode]:
        return self._state.snapshot()

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._run()), asyncio.create_task(self._expire_loop())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._tasks = []

    async def __aenter__(self) -> TopologyWatcher:
        self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def subscribe(self) -> Subscription:
        sub = Subscription(self, self.nodes(), self.available, self.problem)
        self._subscribers.add(sub)
        return sub

    async def changes(self) -> AsyncIterator[dpb.NodeEvent]:
        """Every node event from now on (use `nodes()` for the current topology)."""
        sub = self.subscribe()
        try:
            async for resp in sub:
                if resp.WhichOneof("kind") == "event":
                    yield resp.event
        finally:
            sub.close()

    async def wait_synced(self, timeout_s: float) -> bool:
        """Whether a snapshot arrived within timeout_s."""
        self.start()
        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(lambda: self.synced), timeout_s)
        except TimeoutError:
            pass
        return self.synced

    async def wait_ready(self, min_nodes: int = 1, timeout_ms: int | None = None) -> list[dpb.ClusterNode]:
        """The topology once it has at least `min_nodes` nodes; waits at most
        initial-wait-timeout (Artemis `initialWaitTimeout`) by default."""
        self.start()
        timeout_ms = self.initial_wait_timeout_ms if timeout_ms is None else timeout_ms
        try:
            async with self._changed:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.synced and len(self._state.nodes) >= min_nodes),
                    timeout_ms / 1000,
                )
        except TimeoutError:
            if not self.synced:
                raise DiscoveryUnavailableError(
                    f"no topology of cluster {self.cluster_name!r} from {self.source.description} within "
                    f"initial-wait-timeout ({timeout_ms} ms): {self.problem or 'no answer'}"
                ) from None
            raise DiscoveryError(
                f"cluster {self.cluster_name!r} has {len(self._state.nodes)} node(s) after initial-wait-timeout "
                f"({timeout_ms} ms); waited for {min_nodes}"
            ) from None
        return self.nodes()

    async def _run(self) -> None:
        req = dpb.WatchNodesRequest(cluster_name=self.cluster_name)
        refused = ""
        while True:
            stream = self.source.watch(req)
            try:
                async for resp in stream:
                    await self._handle(resp)
                problem = "the watch stream ended"
            except DiscoveryUnavailableError as exc:  # logged once per outage by the transport
                problem = str(exc)
            except DiscoveryError as exc:
                problem = str(exc)
                if problem != refused:
                    refused = problem
                    log.error("watch of cluster %s refused by %s: %s", self.cluster_name,
                              self.source.description, problem)
            except Exception as exc:  # a bug in a source must not end discovery for good
                log.exception("watch of cluster %s on %s failed", self.cluster_name, self.source.description)
                problem = f"{type(exc).__name__}: {exc}"
            finally:
                await stream.aclose()  # deterministically: its cleanup unsubscribes from the source
            await self._set_available(False, problem)
            await asyncio.sleep(self._retry.next())

    async def _handle(self, resp: dpb.WatchNodesResponse) -> None:
        kind = resp.WhichOneof("kind")
        if kind == "status":
            await self._set_available(resp.status.available, resp.status.message)
            return
        if kind == "snapshot":
            self._retry.reset()
            await self._set_available(resp.snapshot.available, resp.snapshot.message)
        await self._publish(self._state.apply(resp, time.monotonic()))
        self._wake_expiry.set()

    async def _set_available(self, available: bool, message: str) -> None:
        changed = available != self.available
        self.problem = "" if available else message
        self.available = available
        if changed:
            status = dpb.WatchNodesResponse(status=dpb.DiscoveryStatus(available=available, message=message))
            for sub in list(self._subscribers):
                sub.queue.put_nowait(status)
        async with self._changed:
            self._changed.notify_all()

    async def _publish(self, events: list[dpb.NodeEvent]) -> None:
        for event in events:
            if self.log_events:
                log.info(
                    "cluster %s: %s %s (%s) at %s", self.cluster_name, dpb.NodeEventKind.Name(event.kind),
                    event.node.node_id, event.node.node_name, event.node.connector,
                )
            resp = dpb.WatchNodesResponse(event=event)
            for sub in list(self._subscribers):
                sub.queue.put_nowait(resp)
        async with self._changed:
            self._changed.notify_all()

    async def _expire_loop(self) -> None:
        while True:
            self._wake_expiry.clear()
            deadline = self._state.next_deadline()
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                await asyncio.wait_for(self._wake_expiry.wait(), timeout)
            except TimeoutError:
                pass
            # While the source is away nothing is known to have died: keep everyone.
            if self.available:
                await self._publish(self._state.expire(time.monotonic()))


# --------------------------------------------------------------------------- announcing


class Announcer:
    """Keeps one node in the topology for as long as it runs.

    `start()` joins (retrying with backoff for at most initial-wait-timeout
    while discovery is unreachable), then a keep-alive goes out every
    broadcast-period. While discovery is unreachable the keep-alives retry
    with backoff capped at broadcast-period, so the node is back within one
    broadcast-period of discovery's return; if etcd lost the lease meanwhile,
    the node is announced again. `stop()` leaves: the node is removed at once.
    A kill -9 stops the keep-alives: the node vanishes refresh-timeout after
    the last one.
    """

    def __init__(self, api: DiscoveryAPI, node: dpb.ClusterNode, *, broadcast_period_ms: int = BROADCAST_PERIOD_MS,
                 refresh_timeout_ms: int = REFRESH_TIMEOUT_MS,
                 initial_wait_timeout_ms: int = INITIAL_WAIT_TIMEOUT_MS) -> None:
        self.api = api
        self._node = dpb.ClusterNode()
        self._node.CopyFrom(node)
        if not self._node.instance_id:
            self._node.instance_id = uuid.uuid4().hex
        if not self._node.announced_at_ms:
            self._node.announced_at_ms = int(time.time() * 1000)
        self.broadcast_period_ms = broadcast_period_ms
        self.refresh_timeout_ms = refresh_timeout_ms
        self.initial_wait_timeout_ms = initial_wait_timeout_ms
        self.lease_ttl_ms = 0
        self._membership: Membership | None = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None
        self._lost: asyncio.Future | None = None

    @property
    def node(self) -> dpb.ClusterNode:
        return self._node

    def _join(self) -> dpb.AnnounceRequest.Join:
        return dpb.AnnounceRequest.Join(
            node=self._node, broadcast_period_ms=self.broadcast_period_ms, refresh_timeout_ms=self.refresh_timeout_ms
        )

    async def start(self) -> None:
        deadline = time.monotonic() + self.initial_wait_timeout_ms / 1000
        retry = Backoff(cap_s=self.broadcast_period_ms / 1000)
        while True:
            try:
                self._membership = await self.api.announce(self._join())
                break
            except DiscoveryUnavailableError as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DiscoveryUnavailableError(
                        f"cannot announce node {self._node.node_id}: {exc} (gave up after "
                        f"initial-wait-timeout, {self.initial_wait_timeout_ms} ms)"
                    ) from None
                await asyncio.sleep(min(retry.next(), remaining))
        self.lease_ttl_ms = self._membership.lease_ttl_ms
        self._lost = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._keep_alive_loop())
        log.info(
            "announced node %s (%s) at %s in cluster %s via %s: keep-alive every %d ms, lease %d ms",
            self._node.node_id, self._node.node_name, self._node.connector, self._node.cluster_name,
            self.api.description, self.broadcast_period_ms, self.lease_ttl_ms,
        )

    async def _keep_alive_loop(self) -> None:
        period = self.broadcast_period_ms / 1000
        retry = Backoff(cap_s=period)
        next_at = time.monotonic() + period
        while True:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            try:
                async with self._lock:
                    await self._membership.keep_alive()
                retry.reset()
                next_at += period
                if next_at < time.monotonic():  # we were away: no burst of catch-up keep-alives
                    next_at = time.monotonic() + period
            except DiscoveryUnavailableError:
                next_at = time.monotonic() + retry.next()  # logged once per outage by the transport
            except DiscoveryError as exc:
                log.error("node %s lost its announcement for good: %s", self._node.node_id, exc)
                if not self._lost.done():
                    self._lost.set_exception(exc)
                return
            except Exception:
                log.exception("keep-alive of node %s failed", self._node.node_id)
                next_at = time.monotonic() + retry.next()

    async def update(self, **fields) -> None:
        """Change the announcement (e.g. backup_connector=..., role=...): watchers get NODE_UPDATED."""
        node = dpb.ClusterNode()
        node.CopyFrom(self._node)
        for name, value in fields.items():
            setattr(node, name, value)
        async with self._lock:
            await self._membership.update(node)
        self._node = node

    async def wait(self) -> None:
        """Returns after stop(); raises the error (e.g. NodeIdInUseError) if the
        announcement is lost for good; never returns otherwise."""
        await asyncio.shield(self._lost)

    async def stop(self) -> None:
        """Leave the topology now (graceful stop). If discovery is unreachable the
        node vanishes refresh-timeout after its last keep-alive instead."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if self._membership is None:
            return
        membership, self._membership = self._membership, None
        try:
            async with self._lock:
                await asyncio.wait_for(membership.leave(), REQUEST_TIMEOUT_S)
            log.info("node %s left cluster %s", self._node.node_id, self._node.cluster_name)
        except (DiscoveryError, TimeoutError) as exc:
            log.warning(
                "node %s could not leave (%s); it vanishes within refresh-timeout (%d ms)",
                self._node.node_id, exc, self.refresh_timeout_ms,
            )
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)

    async def __aenter__(self) -> Announcer:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()


# --------------------------------------------------------------------------- over gRPC


class GrpcDiscoveryClient:
    """The discovery service in another process (`meshmq serve discovery`)."""

    def __init__(self, target: str, *, credentials: grpc.ChannelCredentials | None = None) -> None:
        self.target = target
        self.description = f"discovery service at {target}"
        self._channel = open_channel(target, credentials=credentials)
        self._stub = dgrpc.DiscoveryStub(self._channel)
        self.outage = outage_log(self.description)

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
            resp = await self._stub.List(req, timeout=REQUEST_TIMEOUT_S)
        except grpc.RpcError as exc:
            raise self.error(exc, started) from None
        self.outage.ok(started)
        return resp

    async def watch(self, req: dpb.WatchNodesRequest) -> AsyncIterator[dpb.WatchNodesResponse]:
        started = time.monotonic()
        call = self._stub.Watch(req)
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
        call = self._client._stub.Announce()
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
            resp = await asyncio.wait_for(self._call.read(), REQUEST_TIMEOUT_S)
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
