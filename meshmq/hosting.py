"""Running services in a process: the embedded default (router with its
journal in-process) and each service on its own.

This is the one place that puts services together; services themselves only
see each other through the protobuf interfaces.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import signal
from collections.abc import Callable
from pathlib import Path

import grpc

from meshmq.config.models import BrokerConfig
from meshmq.discovery_client import Announcer, DiscoveryAPI, GrpcDiscoveryClient, TopologyWatcher
from meshmq.journal_client import GrpcJournalClient, JournalAPI
from meshmq.transport import bind_listener, channel_credentials, server_options

log = logging.getLogger("meshmq")


class NodeHalted(RuntimeError):
    """The router stopped itself: fenced, or its journal refused a write."""


def install_event_loop_policy() -> None:
    """uvloop where installed (DESIGN: the broker is an asyncio program on uvloop)."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def setup_logging(node: str, level: str = "INFO") -> None:
    class NodeFilter(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.node = node
            return True

    handler = logging.StreamHandler()
    handler.addFilter(NodeFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s node=%(node)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("sqlalchemy").setLevel(logging.WARNING)


def journal_for(config: BrokerConfig) -> JournalAPI:
    """The journal a router uses: a remote journal service, or one hosted here."""
    j = config.journal
    if j.address:
        creds = channel_credentials(j.trust_path, j.cert_path, j.key_path) if j.ssl_enabled else None
        return GrpcJournalClient(j.address, credentials=creds)
    from services.journal.core import JournalCore

    return JournalCore(config.journal_url(), sync=j.sync, max_batch_records=j.max_batch_records)


def discovery_for(config: BrokerConfig, group_name: str) -> DiscoveryAPI:
    """How this process reaches a discovery group: a discovery service, or
    etcd / the static list hosted here (then this process holds its own lease)."""
    group = config.discovery_groups[group_name]
    if group.discovery_service:
        return GrpcDiscoveryClient(group.discovery_service)
    from services.discovery.core import DiscoveryCore

    return DiscoveryCore.for_group(group)


class _Discovery:
    """A router's part in discovery: one announcer per broadcast group, and the
    topology of one discovery group fed into the router's client-facing topology."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.apis: dict[str, DiscoveryAPI] = {}
        self.announcers: list[Announcer] = []
        self.watchers: list[TopologyWatcher] = []
        self.tasks: list[asyncio.Task] = []

    def _api(self, group_name: str) -> DiscoveryAPI:
        if group_name not in self.apis:
            self.apis[group_name] = discovery_for(self.config, group_name)
        return self.apis[group_name]

    async def start(self, node, topology_group: str | None) -> None:
        from meshmq.v1 import discovery_pb2 as dpb

        acceptors = [a.name for a in self.config.acceptors]
        for bg in self.config.broadcast_groups.values():
            group = self.config.discovery_groups[bg.discovery_group_ref]
            connector = node.endpoints[acceptors.index(bg.connector_ref) if bg.connector_ref else 0]
            me = dpb.ClusterNode(node_id=node.broker.node_id, cluster_name=group.cluster_name,
                                 node_name=self.config.name, connector=connector, role=dpb.NODE_ROLE_LIVE)
            announcer = Announcer(self._api(bg.discovery_group_ref), me, broadcast_period_ms=bg.broadcast_period,
                                  refresh_timeout_ms=group.refresh_timeout,
                                  initial_wait_timeout_ms=group.initial_wait_timeout)
            await announcer.start()  # NodeIdInUseError / DiscoveryUnavailableError stop the node with the reason
            self.announcers.append(announcer)
        if topology_group is not None:
            group = self.config.discovery_groups[topology_group]
            watcher = TopologyWatcher(self._api(topology_group), group.cluster_name,
                                      refresh_timeout_ms=group.refresh_timeout,
                                      initial_wait_timeout_ms=group.initial_wait_timeout)
            watcher.start()
            self.watchers.append(watcher)
            self.tasks.append(asyncio.create_task(self._feed(watcher, node)))

    @staticmethod
    async def _feed(watcher: TopologyWatcher, node) -> None:
        """Keep the router's topology (what clients balance over) equal to discovery's view plus itself."""
        from meshmq.v1 import management_pb2 as mgpb

        sub = watcher.subscribe()
        try:
            while True:
                if watcher.synced:
                    others = [
                        mgpb.TopologyMember(node_id=n.node_id, name=n.node_name, connector=n.connector,
                                            backup_connector=n.backup_connector, group_name=n.group_name)
                        for n in watcher.nodes() if n.node_id != node.broker.node_id
                    ]
                    await node.topology.replace([node.member(), *others])
                await sub.queue.get()
        finally:
            sub.close()

    async def lost(self) -> None:
        """Raises when an announcement is lost for good (e.g. NodeIdInUseError)."""
        await asyncio.gather(*(a.wait() for a in self.announcers))
        await asyncio.Event().wait()

    async def stop(self) -> None:
        # Leave first: clients and other nodes stop choosing this node before it goes.
        await asyncio.gather(*(a.stop() for a in self.announcers))
        for task in self.tasks:
            task.cancel()
        for watcher in self.watchers:
            await watcher.close()
        for api in self.apis.values():
            await api.close()


def _write_ready(path: str | None, info: dict) -> None:
    if path:
        tmp = Path(path).with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        tmp.replace(path)


async def _first(*tasks: asyncio.Task) -> None:
    """Until the first of these tasks completes (its outcome stays in the task)."""
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)


async def _until_signalled(extra: asyncio.Future | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    waiters = [asyncio.create_task(stop.wait())]
    if extra is not None:
        waiters.append(extra)
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for w in waiters:
        w.cancel()


async def run_router(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    from services.router.server import RouterNode

    journal = journal_for(config)
    node = RouterNode(config, journal)
    await node.start()
    discovery = _Discovery(config)
    try:
        # The topology clients see comes from the group this node announces to
        # (cluster connections will name their own discovery-group-ref).
        refs = [bg.discovery_group_ref for bg in config.broadcast_groups.values()]
        await discovery.start(node, refs[0] if refs else None)
    except BaseException:
        await discovery.stop()
        await node.stop()
        await journal.close()
        raise
    # Everything allocated so far (modules, descriptors, recovered state) lives
    # for the whole run: keep it out of the collector's full passes, which
    # otherwise show up as latency spikes on the hot path.
    gc.freeze()
    info = {
        "service": "router",
        "name": config.name,
        "node_id": node.broker.node_id,
        "endpoints": node.endpoints,
        "journal": journal.description,
    }
    _write_ready(ready_file, info)
    if on_ready:
        on_ready(info)
    lost = asyncio.create_task(discovery.lost())
    stopped = asyncio.create_task(node.wait())
    try:
        await _until_signalled(asyncio.create_task(_first(stopped, lost)))
    finally:
        log.info("stopping")
        stopped.cancel()
        await discovery.stop()
        await node.stop()
        await journal.close()
    if lost.done() and not lost.cancelled() and lost.exception() is not None:
        raise lost.exception()
    lost.cancel()
    if node.broker.halted.is_set():
        raise NodeHalted(node.broker.halt_reason)


async def run_journal(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    from services.journal.core import JournalCore
    from services.journal.server import add_journal_service

    j = config.journal
    core = JournalCore(config.journal_url(), sync=j.sync, max_batch_records=j.max_batch_records)
    server = grpc.aio.server(options=server_options())
    add_journal_service(server, core)
    endpoint = bind_listener(server, j.listen, "journal")
    await server.start()
    info = {"service": "journal", "endpoints": [endpoint], "store": core.description}
    _write_ready(ready_file, info)
    if on_ready:
        on_ready(info)
    log.info("journal service listening on %s, store %s", endpoint, core.description)
    try:
        await _until_signalled()
    finally:
        await server.stop(2)
        await core.close()


async def run_discovery(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    """The discovery service on discovery.listen, serving one discovery group.
    An unreachable etcd stops it at start (after initial-wait-timeout) with
    DiscoveryUnavailableError naming the endpoints."""
    from services.discovery.config import served_group
    from services.discovery.core import DiscoveryCore
    from services.discovery.server import add_discovery_service

    group_name, group = served_group(config.discovery_groups, config.discovery)
    core = DiscoveryCore.for_group(group)
    try:
        await core.start()
        server = grpc.aio.server(options=server_options())
        add_discovery_service(server, core)
        endpoint = bind_listener(server, config.discovery.listen, "discovery")
        await server.start()
        info = {
            "service": "discovery",
            "endpoints": [endpoint],
            "backend": core.description,
            "discovery_group": group_name,
            "cluster_name": group.cluster_name,
        }
        _write_ready(ready_file, info)
        if on_ready:
            on_ready(info)
        log.info("discovery service listening on %s, %s", endpoint, core.description)
        try:
            await _until_signalled()
        finally:
            # Leases held for nodes are not revoked: the nodes are alive and join
            # again (here or at another instance); unclaimed ones lapse.
            await server.stop(1)
    finally:
        await core.close()
