"""`DiscoveryCore`: discovery's behaviour over a backend, independent of transport.

The gRPC servicer (`services/discovery/server.py`), a router that hosts
discovery in its own process and the SDK reading etcd for a first contact all
call this object with the same protobuf messages; it satisfies `DiscoveryAPI`.
It checks announcements (`join_problems`, pure), hands them to the backend,
and keeps one `TopologyWatcher` per cluster that every Watch caller shares, so
etcd sees one watch per cluster however many watchers there are, and List can
answer with the last known topology while etcd is away.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from meshmq.config.models import DiscoveryGroup, parse_host_port, valid_name_segment
from meshmq.v1 import discovery_pb2 as dpb

from .backend import Backend, Registration
from .errors import DiscoveryConfigError, DiscoveryUnavailableError
from .timing import INITIAL_WAIT_TIMEOUT_MS, REFRESH_TIMEOUT_MS
from .watcher import TopologyWatcher

# How often a Watch caller waiting for the first snapshot hears why it is still waiting.
_STATUS_WHILE_WAITING_S = 1.0


def join_problems(join: dpb.AnnounceRequest.Join, *, min_refresh_timeout_ms: int) -> list[str]:
    """Everything wrong with an announcement, for one clear error (pure)."""
    problems = []
    node = join.node
    for field, what in ((node.node_id, "node_id"), (node.cluster_name, "cluster_name")):
        try:
            valid_name_segment(field, what)
        except ValueError as exc:
            problems.append(str(exc))
    for field, what in ((node.connector, "connector"), (node.backup_connector, "backup_connector")):
        if field or what == "connector":
            try:
                parse_host_port(field)
            except ValueError as exc:
                problems.append(f"{what}: {exc}")
    if not node.instance_id:
        problems.append("instance_id is required: a random id the announcing process chooses once")
    if join.broadcast_period_ms <= 0:
        problems.append("broadcast_period_ms must be positive")
    if join.refresh_timeout_ms <= join.broadcast_period_ms:
        problems.append(
            f"refresh_timeout_ms ({join.refresh_timeout_ms}) must be greater than broadcast_period_ms "
            f"({join.broadcast_period_ms}), or the node vanishes between keep-alives"
        )
    if join.refresh_timeout_ms < min_refresh_timeout_ms:
        problems.append(
            f"refresh_timeout_ms ({join.refresh_timeout_ms}) is below the backend's smallest lease TTL "
            f"({min_refresh_timeout_ms} ms)"
        )
    return problems


class BackendMembership:
    """A node announced through this core (a `Membership` over the backend's
    registration); the caller keeps it alive."""

    def __init__(self, registration: Registration) -> None:
        self._registration = registration

    @property
    def node(self) -> dpb.ClusterNode:
        return self._registration.node

    @property
    def lease_ttl_ms(self) -> int:
        return self._registration.lease_ttl_ms

    async def keep_alive(self) -> None:
        await self._registration.keep_alive()

    async def update(self, node: dpb.ClusterNode) -> None:
        current = self._registration.node
        for field in ("node_id", "cluster_name", "instance_id"):
            if getattr(node, field) != getattr(current, field):
                raise DiscoveryConfigError(
                    f"an update may not change {field} ({getattr(current, field)!r} -> {getattr(node, field)!r}); "
                    "leave and join again instead"
                )
        if node.backup_connector:
            try:
                parse_host_port(node.backup_connector)
            except ValueError as exc:
                raise DiscoveryConfigError(f"backup_connector: {exc}") from None
        node = _copy(node)
        node.announced_at_ms = current.announced_at_ms
        await self._registration.update(node)

    async def leave(self) -> None:
        await self._registration.leave()


def _copy(node: dpb.ClusterNode) -> dpb.ClusterNode:
    out = dpb.ClusterNode()
    out.CopyFrom(node)
    return out


class _BackendSource:
    """A backend seen as a watch source for TopologyWatcher."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.description = backend.description

    def watch(self, req: dpb.WatchNodesRequest) -> AsyncIterator[dpb.WatchNodesResponse]:
        return self.backend.watch(req.cluster_name)


class DiscoveryCore:
    def __init__(self, backend: Backend, *, refresh_timeout_ms: int = REFRESH_TIMEOUT_MS,
                 initial_wait_timeout_ms: int = INITIAL_WAIT_TIMEOUT_MS) -> None:
        self.backend = backend
        self.refresh_timeout_ms = refresh_timeout_ms
        self.initial_wait_timeout_ms = initial_wait_timeout_ms
        self._views: dict[str, TopologyWatcher] = {}

    @classmethod
    def for_group(cls, group: DiscoveryGroup) -> DiscoveryCore:
        """The core for a discovery group with etcd or static-connectors."""
        if group.etcd is not None:
            from .etcd_backend import EtcdBackend

            backend: Backend = EtcdBackend(group.etcd.endpoints, key_prefix=group.etcd.key_prefix,
                                           username=group.etcd.username, password=group.etcd.password)
        elif group.static_connectors is not None:
            from .static_backend import StaticBackend

            backend = StaticBackend(group.static_connectors)
        else:
            raise DiscoveryConfigError(
                "a discovery group with discovery-service is reached through meshmq.discovery.GrpcDiscoveryClient"
            )
        return cls(backend, refresh_timeout_ms=group.refresh_timeout, initial_wait_timeout_ms=group.initial_wait_timeout)

    @property
    def description(self) -> str:
        return self.backend.description

    async def start(self) -> None:
        """Fail now, clearly, if the backend cannot be reached within initial-wait-timeout."""
        await self.backend.check(self.initial_wait_timeout_ms / 1000)

    async def announce(self, join: dpb.AnnounceRequest.Join) -> BackendMembership:
        problems = join_problems(join, min_refresh_timeout_ms=self.backend.min_refresh_timeout_ms)
        if problems:
            raise DiscoveryConfigError(f"bad announcement of node {join.node.node_id!r}: " + "; ".join(problems))
        node = _copy(join.node)
        if not node.announced_at_ms:
            node.announced_at_ms = int(time.time() * 1000)
        registration = await self.backend.register(
            node, refresh_timeout_ms=join.refresh_timeout_ms, broadcast_period_ms=join.broadcast_period_ms
        )
        return BackendMembership(registration)

    def _view(self, cluster_name: str) -> TopologyWatcher:
        view = self._views.get(cluster_name)
        if view is None:
            valid_name_segment(cluster_name, "cluster_name")
            view = TopologyWatcher(
                _BackendSource(self.backend), cluster_name, refresh_timeout_ms=self.refresh_timeout_ms,
                initial_wait_timeout_ms=self.initial_wait_timeout_ms, log_events=True,
            )
            view.start()
            self._views[cluster_name] = view
        return view

    @property
    def views(self) -> dict[str, TopologyWatcher]:
        """The cluster views kept so far, by cluster name (one per cluster listed or watched)."""
        return dict(self._views)

    async def list(self, req: dpb.ListNodesRequest) -> dpb.ListNodesResponse:
        try:
            view = self._view(req.cluster_name)
        except ValueError as exc:
            raise DiscoveryConfigError(str(exc)) from None
        try:
            return dpb.ListNodesResponse(nodes=await self.backend.list(req.cluster_name), available=True)
        except DiscoveryUnavailableError as exc:
            if not view.synced:
                raise
            return dpb.ListNodesResponse(nodes=view.nodes(), available=False, message=str(exc))

    async def watch(self, req: dpb.WatchNodesRequest) -> AsyncIterator[dpb.WatchNodesResponse]:
        try:
            view = self._view(req.cluster_name)
        except ValueError as exc:
            raise DiscoveryConfigError(str(exc)) from None
        told = ""
        while not await view.wait_synced(_STATUS_WHILE_WAITING_S):
            if view.problem and view.problem != told:  # say why the first snapshot is late
                told = view.problem
                yield dpb.WatchNodesResponse(status=dpb.DiscoveryStatus(available=False, message=told))
        sub = view.subscribe()
        try:
            yield dpb.WatchNodesResponse(
                snapshot=dpb.ClusterSnapshot(nodes=sub.nodes, available=sub.available, message=sub.message)
            )
            async for resp in sub:
                yield resp
        finally:
            sub.close()

    async def close(self) -> None:
        for view in self._views.values():
            await view.close()
        self._views.clear()
        await self.backend.close()
