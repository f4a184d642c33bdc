"""`TopologyWatcher`: one cluster's topology, kept up to date from a watch stream.

The SDK, the routers and the discovery service itself (one shared watcher per
cluster, so etcd sees one watch however many callers watch) all use it. It
owns the I/O — the stream, its resumption, the expiry timer, the subscribers —
and leaves every decision to `TopologyState`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

from meshmq.aio import wait_for
from meshmq.v1 import discovery_pb2 as dpb

from .api import WatchSource
from .errors import DiscoveryError, DiscoveryUnavailableError
from .retry import Backoff
from .timing import INITIAL_WAIT_TIMEOUT_MS, REFRESH_TIMEOUT_MS
from .topology import TopologyState

log = logging.getLogger("meshmq.discovery")


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


# The longest `close` waits for the watch to end.
CLOSE_TIMEOUT_S = 3.0


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
        """Stop watching. Bounded: a watch closed while the etcd client was still
        setting it up was seen to hang until etcd went away (a node stepping down
        right after it started), and a stopping node must not wait on that."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=CLOSE_TIMEOUT_S)
            if pending:
                log.warning("the watch of cluster %s on %s did not end within %.0f s of its close; left behind",
                            self.cluster_name, self.source.description, CLOSE_TIMEOUT_S)
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
                await wait_for(self._changed.wait_for(lambda: self.synced), timeout_s)
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
                await wait_for(
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
                await wait_for(self._wake_expiry.wait(), timeout)
            except TimeoutError:
                pass
            # While the source is away nothing is known to have died: keep everyone.
            if self.available:
                await self._publish(self._state.expire(time.monotonic()))
