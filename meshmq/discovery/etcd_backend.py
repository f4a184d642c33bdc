"""The etcd backend: an announcement is a key under a lease.

Key ``<key-prefix>/<cluster>/nodes/<node-id>``, value the `ClusterNode` as
protobuf JSON. The lease TTL is refresh-timeout rounded up to whole seconds
(etcd's unit); the holder renews it every broadcast-period. A node that stops
renewing vanishes when the lease lapses; one that leaves revokes the lease and
vanishes at once.

The client is `aetcd` (asyncio, on grpc.aio, current protobuf). It leaves
keep-alive to the caller — its `refresh_lease` opens a stream per call — so
`_LeaseKeeper` keeps one LeaseKeepAlive stream for every lease of the process.
A watch ends when etcd goes away; `watch()` then raises, and the caller
(`TopologyWatcher`) opens it again, which lists afresh (the snapshot) and
watches from the last revision the backend had seen for that cluster + 1 when
that is not after the listing, else from the listing's revision + 1. Replaying
the gap serves one purpose: a node that left while the watch was broken (its
key deleted, and absent from the listing) is reported gone at once, rather
than after the refresh-timeout a resync gives every missing node (which may
only not have announced itself again yet). Replayed events are real events of
the etcd now answering, whatever happened before (an etcd restarted with an
empty data dir counts revisions from 1 again: then the gap is not replayed, or
is part of the new history); the rest of the gap is in the listing already.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime, timezone
from typing import TypeVar

import aetcd
import grpc
from aetcd import rpc
from aetcd.utils import prefix_range_end
from google.protobuf import json_format

from meshmq.aio import wait_for
from meshmq.config.models import parse_host_port
from meshmq.transport import RECONNECT_BACKOFF_MS
from meshmq.v1 import discovery_pb2 as dpb

from .errors import DiscoveryError, DiscoveryUnavailableError, NodeIdInUseError
from .retry import Backoff, outage_log

log = logging.getLogger("meshmq.discovery.etcd")

T = TypeVar("T")

# etcd's smallest lease TTL with its default election timeout; a shorter one is silently raised to it.
MIN_TTL_S = 2
REQUEST_TIMEOUT_S = 5.0
# How often a newcomer looks at a key held by another instance while waiting for its lease to lapse.
HOLDER_POLL_S = 0.2

# An etcd that cannot answer now, as opposed to one that refused the request.
_UNAVAILABLE = (
    aetcd.ConnectionFailedError,
    aetcd.ConnectionTimeoutError,
    aetcd.InternalError,
    aetcd.WatchTimeoutError,
    TimeoutError,
    grpc.RpcError,
    grpc.aio.UsageError,
    asyncio.InvalidStateError,
    ConnectionError,
)
_UNAVAILABLE_CODES = {
    grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN, grpc.StatusCode.ABORTED, grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def grpc_target(endpoints: Sequence[str]) -> tuple[str, int]:
    """aetcd's (host, port) for one or several etcd endpoints.

    aetcd dials f"{host}:{port}" and takes one endpoint; gRPC's ipv4:/ipv6:
    resolver takes a list ("ipv4:10.0.0.1:2379,10.0.0.2:2379") and fails over
    between them, so several endpoints (IP addresses, checked by the config)
    become one such target, split at its last colon.
    """
    addresses = [parse_host_port(e) for e in endpoints]
    if len(addresses) == 1:
        host, port = addresses[0]
        return (f"[{host}]" if ":" in host else host), port
    v6 = ":" in addresses[0][0]
    joined = ",".join(f"[{h}]:{p}" if v6 else f"{h}:{p}" for h, p in addresses)
    head, _, port = joined.rpartition(":")
    return f"{'ipv6' if v6 else 'ipv4'}:{head}", int(port)


def _problem(exc: BaseException) -> str:
    cause = exc.__cause__ if isinstance(exc, aetcd.ClientError) and exc.__cause__ is not None else exc
    if isinstance(cause, grpc.aio.AioRpcError):
        return f"{cause.code().name}: {cause.details()}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, _UNAVAILABLE):
        return True
    cause = exc.__cause__
    return (isinstance(exc, aetcd.ClientError) and isinstance(cause, grpc.aio.AioRpcError)
            and cause.code() in _UNAVAILABLE_CODES)


def _lease_not_found(exc: BaseException) -> bool:
    return "lease not found" in str(exc)


def encode(node: dpb.ClusterNode) -> bytes:
    return json_format.MessageToJson(node, preserving_proto_field_name=True, indent=None, sort_keys=True).encode()


def decode(value: bytes) -> dpb.ClusterNode | None:
    try:
        return json_format.Parse(value, dpb.ClusterNode(), ignore_unknown_fields=True)
    except (json_format.ParseError, UnicodeDecodeError, ValueError):
        return None


class _LeaseIs:
    """Txn compare "key is attached to this lease" (aetcd has no helper for the LEASE target)."""

    def __init__(self, key: bytes, lease_id: int) -> None:
        self.key = key
        self.lease_id = lease_id

    def build_message(self) -> rpc.Compare:
        return rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.LEASE, key=self.key, lease=self.lease_id)


class EtcdBackend:
    min_refresh_timeout_ms = MIN_TTL_S * 1000

    def __init__(self, endpoints: Sequence[str], *, key_prefix: str = "/meshmq",
                 request_timeout_s: float = REQUEST_TIMEOUT_S, username: str | None = None,
                 password: str | None = None) -> None:
        """`username`/`password`: an etcd user, when etcd has authentication
        enabled (then only cluster members can announce or read the topology)."""
        self.endpoints = tuple(endpoints)
        self.description = "etcd at " + ",".join(self.endpoints)
        self.key_prefix = key_prefix.rstrip("/")
        self.request_timeout_s = request_timeout_s
        host, port = grpc_target(self.endpoints)
        self.client = aetcd.Client(
            host=host, port=port, timeout=request_timeout_s, username=username, password=password,
            options={
                **RECONNECT_BACKOFF_MS,
                # etcd refuses pings more often than every 5 s (--grpc-keepalive-min-time).
                "grpc.keepalive_time_ms": 10_000,
                "grpc.keepalive_timeout_ms": 5_000,
            },
        )
        self.outage = outage_log(self.description)
        self.keeper = _LeaseKeeper(self)
        self._undecodable: set[tuple[bytes, int]] = set()
        # Per watched prefix: the newest revision a watch of it has seen (its
        # listing or an event), where a broken watch resumes.
        self._seen_revision: dict[bytes, int] = {}

    # ---------------------------------------------------------------- plumbing

    def nodes_prefix(self, cluster_name: str) -> bytes:
        return f"{self.key_prefix}/{cluster_name}/nodes/".encode()

    def key(self, node: dpb.ClusterNode) -> bytes:
        return self.nodes_prefix(node.cluster_name) + node.node_id.encode()

    async def call(self, what: str, fn: Callable[..., Awaitable[T]], *args, **kwargs) -> T:
        """One etcd request. Unreachable etcd -> DiscoveryUnavailableError,
        logged once per outage; a refusal -> DiscoveryError."""
        started = time.monotonic()
        try:
            result = await wait_for(fn(*args, **kwargs), self.request_timeout_s)
        except Exception as exc:
            if not _is_unavailable(exc):
                raise DiscoveryError(f"{self.description} refused {what}: {_problem(exc)}") from exc
            problem = _problem(exc)
            self.outage.failed(problem, started)
            raise DiscoveryUnavailableError(f"{self.description} is unreachable ({what}): {problem}") from None
        self.outage.ok(started)
        return result

    def _decode(self, kv) -> dpb.ClusterNode | None:
        node = decode(kv.value)
        if node is None and (kv.key, kv.mod_revision) not in self._undecodable:
            self._undecodable.add((kv.key, kv.mod_revision))
            log.warning("ignoring %s: not a meshmq node announcement", kv.key.decode(errors="replace"))
        return node

    async def check(self, timeout_s: float) -> None:
        started = time.monotonic()
        retry = Backoff(cap_s=1.0)
        while True:
            try:
                await self.call("status", self.client.status)
                return
            except DiscoveryUnavailableError as exc:
                elapsed = time.monotonic() - started
                if elapsed >= timeout_s:
                    raise DiscoveryUnavailableError(
                        f"{self.description} is unreachable after {elapsed:.1f} s: {exc}. Is etcd running there? "
                        "(tests and `meshmq cluster up` start their own; otherwise start etcd — Debian package "
                        "etcd-server — or fix the discovery group's etcd.endpoints)"
                    ) from None
                await asyncio.sleep(min(retry.next(), timeout_s - elapsed))

    async def revoke_quietly(self, lease_id: int) -> None:
        try:
            await self.call("revoke lease", self.client.revoke_lease, lease_id)
        except DiscoveryError as exc:
            if not _lease_not_found(exc.__cause__ or exc):
                log.debug("could not revoke lease %x: %s", lease_id, exc)

    # ---------------------------------------------------------------- the Backend interface

    async def register(self, node: dpb.ClusterNode, *, refresh_timeout_ms: int,
                       broadcast_period_ms: int) -> EtcdRegistration:
        ttl_s = max(MIN_TTL_S, math.ceil(refresh_timeout_ms / 1000))
        registration = EtcdRegistration(self, node, ttl_s)
        await registration.claim()
        return registration

    async def list(self, cluster_name: str) -> list[dpb.ClusterNode]:
        result = await self.call("list", self.client.get_prefix, self.nodes_prefix(cluster_name))
        nodes = (self._decode(kv) for kv in result)
        return sorted((n for n in nodes if n is not None), key=lambda n: n.node_id)

    async def watch(self, cluster_name: str) -> AsyncIterator[dpb.WatchNodesResponse]:
        prefix = self.nodes_prefix(cluster_name)
        listing = await self.call("list", self.client.get_prefix, prefix)
        listed_at = listing.header.revision
        listed_keys = {kv.key for kv in listing}
        nodes = sorted((n for n in (self._decode(kv) for kv in listing) if n is not None), key=lambda n: n.node_id)
        yield dpb.WatchNodesResponse(snapshot=dpb.ClusterSnapshot(nodes=nodes, available=True))
        seen = self._seen_revision.get(prefix)
        self._seen_revision[prefix] = listed_at
        # From just after the last revision seen, unless the listing is older
        # (an etcd restarted empty) or this is the first watch: see the module docstring.
        start = seen + 1 if seen is not None and seen < listed_at else listed_at + 1
        async for event in self._events(prefix, start):
            revision = event.kv.mod_revision
            if revision <= listed_at:
                # Replayed from before the listing: only a leave the listing cannot show.
                if event.type == rpc.Event.PUT or event.kv.key in listed_keys:
                    continue
            else:
                self._seen_revision[prefix] = max(self._seen_revision.get(prefix, 0), revision)
            if event.type == rpc.Event.PUT:
                node = self._decode(event.kv)
                if node is not None:
                    yield dpb.WatchNodesResponse(event=dpb.NodeEvent(kind=dpb.NODE_UP, node=node))
            else:
                node_id = event.kv.key[len(prefix):].decode(errors="replace")
                node = (self._decode(event.prev_kv) if event.HasField("prev_kv") else None) or dpb.ClusterNode(
                    node_id=node_id, cluster_name=cluster_name
                )
                yield dpb.WatchNodesResponse(event=dpb.NodeEvent(kind=dpb.NODE_DOWN, node=node))

    async def _events(self, prefix: bytes, start_revision: int) -> AsyncIterator[rpc.Event]:
        """Every event under `prefix` from `start_revision` on, on a Watch stream of
        its own; raises DiscoveryUnavailableError whenever the stream ends.

        Not aetcd's shared watcher: a Watch call cancelled under it (gRPC raises
        CancelledError, which its reader does not catch) left every watch on the
        client waiting for events that never came — a watcher that silently
        stopped seeing nodes leave. Here any end of the stream, a cancellation
        included, ends this iteration, and the caller watches again."""
        started = time.monotonic()
        call = None
        try:
            await wait_for(self.client.connect(), self.request_timeout_s)
            call = rpc.WatchStub(self.client.channel).Watch(metadata=self.client.metadata)
            create = rpc.WatchCreateRequest(key=prefix, range_end=prefix_range_end(prefix),
                                            start_revision=start_revision, prev_kv=True)
            await wait_for(call.write(rpc.WatchRequest(create_request=create)), self.request_timeout_s)
            # Abandoned (cancelled) if it times out, so a bounded read is safe here.
            resp = await wait_for(call.read(), self.request_timeout_s)
            while resp is not grpc.aio.EOF:
                if resp.compact_revision:
                    # The next watch lists afresh and starts after that listing (_seen_revision).
                    log.info("%s: the watch's gap from revision %d was compacted (to %d); listing again — a node "
                             "that left in the gap goes refresh-timeout after the resync", self.description,
                             start_revision, resp.compact_revision)
                    raise DiscoveryUnavailableError(f"{self.description}: watch fell behind compaction; listing again")
                if resp.canceled:
                    raise DiscoveryUnavailableError(
                        f"{self.description}: etcd cancelled the watch: {resp.cancel_reason or 'no reason given'}")
                for event in resp.events:
                    yield event
                resp = await call.read()
        except DiscoveryUnavailableError:
            raise
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise  # this task is being stopped
            problem = "the watch stream was cancelled"  # the call, not this task
        except Exception as exc:
            if not _is_unavailable(exc):
                raise
            problem = _problem(exc)
        else:
            problem = "the watch stream ended"
        finally:
            if call is not None:
                call.cancel()
        self.outage.failed(problem, started)
        raise DiscoveryUnavailableError(f"{self.description}: watch broken: {problem}")

    async def close(self) -> None:
        await self.keeper.close()
        try:
            await self.client.close()
        except Exception as exc:  # closing a channel to a dead etcd
            log.debug("closing etcd client: %s", exc)


class EtcdRegistration:
    """One node's key and lease."""

    def __init__(self, backend: EtcdBackend, node: dpb.ClusterNode, ttl_s: int) -> None:
        self._b = backend
        self.node = dpb.ClusterNode()
        self.node.CopyFrom(node)
        self.ttl_s = ttl_s
        self.lease_ttl_ms = ttl_s * 1000
        self.lease_id = 0
        self.key = backend.key(node)

    async def claim(self) -> None:
        """Put the key under a new lease: if it is absent; or taking it over from
        this same instance (a resumed announcement); or once another instance's
        lease lapsed — which refuses the node id if that instance is live."""
        b, key, value = self._b, self.key, encode(self.node)
        t = b.client.transactions
        while True:
            lease = await b.call("grant lease", b.client.lease, self.ttl_s)
            self._check_granted(lease.ttl)
            created, responses = await b.call(
                "announce", b.client.transaction,
                compare=[t.version(key) == 0], success=[t.put(key, value, lease.id)], failure=[t.get(key)],
            )
            if created:
                self.lease_id = lease.id
                return
            held = responses[0][0][1] if responses and responses[0] else None
            holder = decode(held.value) if held is not None else None
            if held is not None and holder is not None and holder.instance_id == self.node.instance_id:
                taken, _ = await b.call(
                    "resume announcement", b.client.transaction,
                    compare=[t.mod(key) == held.mod_revision], success=[t.put(key, value, lease.id)], failure=[],
                )
                if taken:
                    self.lease_id = lease.id
                    if held.lease and held.lease != lease.id:
                        await b.revoke_quietly(held.lease)
                    log.info("resumed the announcement of node %s", self.node.node_id)
                    return
                await b.revoke_quietly(lease.id)
                continue  # it changed under us: look again
            await b.revoke_quietly(lease.id)
            if held is not None:
                await self._wait_for_lapse(held, holder)

    def _check_granted(self, granted_s: int) -> None:
        """etcd raises a TTL below its minimum (1.5 election timeouts) without saying so."""
        if granted_s > self.ttl_s and self.lease_ttl_ms != granted_s * 1000:
            log.warning(
                "etcd granted node %s a lease of %d s instead of %d s (its minimum TTL, from its --election-timeout): "
                "the node vanishes that long after its last keep-alive, not after refresh-timeout",
                self.node.node_id, granted_s, self.ttl_s,
            )
        self.lease_ttl_ms = max(granted_s, 1) * 1000

    async def _wait_for_lapse(self, held, holder: dpb.ClusterNode | None) -> None:
        """Another instance holds the node id. If it is this node's previous
        run, killed before it could leave, its lease lapses within its TTL and
        we may go on; if its lease is renewed meanwhile, it is live: refuse."""
        b = self._b
        if not held.lease:
            raise NodeIdInUseError(self._in_use(holder, "its key has no lease (written by hand?); "
                                                        f"remove it with `etcdctl del {self.key.decode()}`"))
        info = await b.call("lease ttl", b.client.get_lease_info, held.lease, keys=False)
        last = info.TTL
        limit = time.monotonic() + max(last, 0) + 1.5  # TTLs are whole seconds, rounded down
        log.warning(
            "node id %s is announced by another instance (%s); waiting up to %.0f s for its lease to lapse — it may be "
            "this node's previous run, killed before it could leave", self.node.node_id, self._holder(holder),
            max(last, 0) + 1.5,
        )
        while True:
            await asyncio.sleep(HOLDER_POLL_S)
            current = await b.call("read", b.client.get, self.key)
            if current is None:
                log.info("the previous announcement of node %s lapsed; announcing", self.node.node_id)
                return
            if current.lease != held.lease or current.mod_revision != held.mod_revision:
                raise NodeIdInUseError(self._in_use(decode(current.value) or holder, "it announced itself again"))
            ttl = (await b.call("lease ttl", b.client.get_lease_info, held.lease, keys=False)).TTL
            if ttl > last or time.monotonic() > limit:
                raise NodeIdInUseError(self._in_use(holder, "its lease is being kept alive"))
            last = ttl

    @staticmethod
    def _holder(holder: dpb.ClusterNode | None) -> str:
        if holder is None:
            return "an unreadable announcement"
        since = datetime.fromtimestamp(holder.announced_at_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{holder.node_name or '?'} at {holder.connector or '?'}, since {since}"

    def _in_use(self, holder: dpb.ClusterNode | None, why: str) -> str:
        return (
            f"node id {self.node.node_id} is already live in cluster {self.node.cluster_name!r}: announced by "
            f"{self._holder(holder)}, and {why}. Two nodes must never share a node id. It is created on a node's "
            "first start and kept in its data directory, so a copied data directory copies it: give this node its "
            "own, empty data directory (the Artemis warning: do not copy the data directory between nodes)"
        )

    async def keep_alive(self) -> None:
        ttl = await self._b.keeper.refresh(self.lease_id)
        if ttl > 0:
            return
        log.warning("etcd no longer has the lease of node %s (restarted empty, or cut off for longer than %d s); "
                    "announcing it again", self.node.node_id, self.ttl_s)
        await self.claim()

    async def update(self, node: dpb.ClusterNode) -> None:
        b, t = self._b, self._b.client.transactions
        self.node = dpb.ClusterNode()
        self.node.CopyFrom(node)
        updated, _ = await b.call(
            "update", b.client.transaction,
            compare=[_LeaseIs(self.key, self.lease_id)], success=[t.put(self.key, encode(self.node), self.lease_id)],
            failure=[],
        )
        if not updated:  # the lease lapsed meanwhile: announce afresh, with the new value
            await self.claim()

    async def leave(self) -> None:
        b = self._b
        try:
            await b.call("revoke lease", b.client.revoke_lease, self.lease_id)
        except DiscoveryUnavailableError:
            raise
        except DiscoveryError as exc:
            if not _lease_not_found(exc.__cause__ or exc):
                raise


class _StreamBroken(Exception):
    pass


class _LeaseKeeper:
    """One LeaseKeepAlive stream for all the leases this process keeps alive.

    refresh() writes the lease id and waits for etcd's answer for that id: the
    new TTL, 0 when etcd no longer has the lease. Writes are serialized (a
    grpc.aio stream takes one write at a time); answers are matched by id.
    """

    def __init__(self, backend: EtcdBackend) -> None:
        self._b = backend
        self._call: grpc.aio.StreamStreamCall | None = None
        self._reader: asyncio.Task | None = None
        self._waiting: dict[int, deque[asyncio.Future[int]]] = {}
        self._write = asyncio.Lock()

    async def refresh(self, lease_id: int) -> int:
        b = self._b
        started = time.monotonic()
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(lease_id, deque())
        waiting.append(fut)
        call = None
        try:
            async with self._write:
                if self._call is None:
                    await wait_for(b.client.connect(), b.request_timeout_s)
                    self._call = b.client.leasestub.LeaseKeepAlive(metadata=b.client.metadata)
                    self._reader = asyncio.create_task(self._read(self._call))
                call = self._call
                await wait_for(call.write(rpc.LeaseKeepAliveRequest(ID=lease_id)), b.request_timeout_s)
            ttl = await wait_for(fut, b.request_timeout_s)
        except (*_UNAVAILABLE, _StreamBroken, aetcd.ClientError) as exc:
            fut.cancel()
            self._broken(call, exc)
            problem = _problem(exc)
            b.outage.failed(problem, started)
            raise DiscoveryUnavailableError(f"{b.description} is unreachable (keep-alive): {problem}") from None
        finally:
            if not fut.done():
                fut.cancel()  # nobody awaits it any more (this refresh was stopped)
            if fut in waiting:
                waiting.remove(fut)
            if not waiting and self._waiting.get(lease_id) is waiting:
                del self._waiting[lease_id]
        b.outage.ok(started)
        return ttl

    async def _read(self, call: grpc.aio.StreamStreamCall) -> None:
        problem: BaseException = _StreamBroken("the keep-alive stream closed")
        try:
            async for resp in call:
                for fut in self._waiting.get(resp.ID, ()):
                    if not fut.done():
                        fut.set_result(resp.TTL)
                        break
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                return  # _broken() or close() stopped this reader
            problem = _StreamBroken("the keep-alive stream was cancelled")  # the call, not this reader
        except Exception as exc:
            problem = exc
        self._broken(call, problem)

    def _broken(self, call: grpc.aio.StreamStreamCall | None, exc: BaseException) -> None:
        """Drop the stream (the next refresh opens another) and fail whoever waits on it."""
        if call is None or self._call is not call:
            return
        self._call = None
        call.cancel()
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
        self._reader = None
        for waiting in self._waiting.values():
            for fut in waiting:
                if not fut.done():
                    fut.set_exception(_StreamBroken(_problem(exc)))

    async def close(self) -> None:
        if self._call is not None:
            self._broken(self._call, _StreamBroken("closed"))
