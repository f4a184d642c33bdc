"""A router's part in discovery: it announces itself to each broadcast
group, and keeps the topology it pushes to clients equal to what one
discovery group sees (plus itself).

Discovery itself (etcd or static backends, the announcer, the watcher) is the
core package `meshmq.discovery`; this module only decides what a router
announces and what it feeds into its client-facing `ClientTopology`.
"""

from __future__ import annotations

import asyncio

from meshmq.config.models import BrokerConfig
from meshmq.discovery import Announcer, DiscoveryAPI, TopologyWatcher
from meshmq.discovery.groups import discovery_for, group_watcher
from meshmq.v1 import discovery_pb2 as dpb
from meshmq.v1 import management_pb2 as mgpb

from .server import RouterNode


class RouterMembership:
    """One announcer per broadcast group; one watcher feeding the router's topology."""

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

    async def start(self, node: RouterNode) -> None:
        """Announce (NodeIdInUseError / DiscoveryUnavailableError stop the node with
        the reason), then watch the group this node announces to: the topology
        clients balance over (cluster connections will name their own
        discovery-group-ref)."""
        acceptors = [a.name for a in self.config.acceptors]
        for bg in self.config.broadcast_groups.values():
            group = self.config.discovery_groups[bg.discovery_group_ref]
            connector = node.endpoints[acceptors.index(bg.connector_ref) if bg.connector_ref else 0]
            me = dpb.ClusterNode(node_id=node.broker.node_id, cluster_name=group.cluster_name,
                                 node_name=self.config.name, connector=connector, role=dpb.NODE_ROLE_LIVE)
            announcer = Announcer(self._api(bg.discovery_group_ref), me, broadcast_period_ms=bg.broadcast_period,
                                  refresh_timeout_ms=group.refresh_timeout,
                                  initial_wait_timeout_ms=group.initial_wait_timeout)
            await announcer.start()
            self.announcers.append(announcer)
        refs = [bg.discovery_group_ref for bg in self.config.broadcast_groups.values()]
        if refs:
            _, watcher = group_watcher(self.config, refs[0], self._api(refs[0]))
            self.watchers.append(watcher)
            self.tasks.append(asyncio.create_task(self._feed(watcher, node)))

    @staticmethod
    async def _feed(watcher: TopologyWatcher, node: RouterNode) -> None:
        """Keep the router's topology (what clients balance over) equal to discovery's view plus itself."""
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

    async def backup_changed(self, node: RouterNode) -> None:
        """The node's backup changed (node.backup_connector): announce it, and
        tell clients (through discovery, or directly when alone)."""
        for announcer in self.announcers:
            await announcer.update(backup_connector=node.backup_connector)
        if not self.watchers:
            await node.topology.replace([node.member()])

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
