"""One node's cluster connections: which links exist, and to whom.

Each cluster connection links to the nodes its `static-connectors` name and
to every node its `discovery-group-ref` group announces (itself excepted),
one `Bridge` per node; a node that leaves the discovery group loses its link
(its store-and-forward queue stays, and goes on when it comes back).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from meshmq.config.models import BrokerConfig
from meshmq.v1 import cluster_pb2 as cpb

from .bridge import CONNECTED, DEPARTED, Bridge
from .grouping import LocalNode
from .link_identity import LinkIdentity, link_identity

if TYPE_CHECKING:
    from meshmq.discovery import TopologyWatcher

    from ..broker import Broker

log = logging.getLogger("meshmq.cluster")


class ClusterConnections:
    def __init__(self, config: BrokerConfig, broker: Broker) -> None:
        self.config = config
        self.broker = broker
        self.bridges: dict[tuple[str, str], Bridge] = {}  # (cluster connection, endpoint) -> bridge
        # Bridges to nodes that left the discovery group (killed: their lease lapsed), stopped, kept
        # until the node comes back so their state and metric series stay (meshmq_bridge_connected 0):
        # an alert on a lost link must not clear because the node's lease did.
        self.departed: dict[tuple[str, str], Bridge] = {}
        self._tasks: list[asyncio.Task] = []
        self._watchers: list[TopologyWatcher] = []
        self._apis: list = []
        self.own_connector = ""
        self._identity: LinkIdentity | None = None  # with this node's connector, once it listens (start)
        self._early_hellos: list[cpb.LinkHello] = []

    def start(self, own_endpoints: list[str]) -> None:
        self._own = set(own_endpoints)
        refs = [cc.connector_ref for cc in self.config.cluster_connections.values() if cc.connector_ref]
        # Where other nodes link to this one: the connector-ref's, else the first acceptor.
        self.own_connector = self.config.connectors[refs[0]] if refs else own_endpoints[0]
        self._own.add(self.own_connector)
        self._identity = link_identity(self.config, self.own_connector)
        early, self._early_hellos = self._early_hellos, []
        for name, cc in self.config.cluster_connections.items():
            for ref in cc.static_connectors or ():
                self._link(name, self.config.connectors[ref])
            if cc.discovery_group_ref is not None:
                self._tasks.append(asyncio.create_task(self._follow(name, cc.discovery_group_ref)))
        for hello in early:
            self.linked_from(hello)
        if self.config.cluster_connections and self.config.cluster_password is None:
            log.warning("cluster connections are unauthenticated: set cluster-user and cluster-password on every "
                        "node (docs/security.md)")

    def _link(self, cc_name: str, endpoint: str) -> Bridge | None:
        if endpoint in self._own or (cc_name, endpoint) in self.bridges:
            return None
        self.departed.pop((cc_name, endpoint), None)
        bridge = Bridge(self.broker, cc_name, self.config.cluster_connections[cc_name], endpoint,
                        identity=self._identity, node_name=self.config.name,
                        on_members=self._learned)
        self.bridges[(cc_name, endpoint)] = bridge
        bridge.start()
        return bridge

    def grouping_local(self, address: str):
        """Where the LOCAL grouping handler for `address` is, as a link's
        welcome said (a linked node first; None: no link has said so yet)."""
        found = [b for b in self.bridges.values() if b.grouping_local == address]
        if not found or self._identity is None:
            return None
        best = min(found, key=lambda b: b.state != CONNECTED)
        return LocalNode(best.endpoint, best.target_node_name, self._identity)

    def members(self) -> list[cpb.ClusterMember]:
        """This node and the nodes it is linked to, as links offer them."""
        out = {self.broker.node_id: cpb.ClusterMember(node_id=self.broker.node_id, node_name=self.config.name,
                                                      connector=self.own_connector)}
        for bridge in self.bridges.values():
            if bridge.state == CONNECTED:
                out.setdefault(bridge.target_node_id, cpb.ClusterMember(
                    node_id=bridge.target_node_id, node_name=bridge.target_node_name, connector=bridge.endpoint))
        return sorted(out.values(), key=lambda m: m.node_id)

    def linked_from(self, hello: cpb.LinkHello) -> None:
        """A node opened a link to this one: link back to it over the cluster
        connection of the same name, when that one learns members (static
        connectors, not allow-direct-connections-only): a node that joins by
        naming one member is then reached by it, as Artemis announces a
        joining node to the cluster. A discovery group names every node anyway.
        A backup that took over a live's node id is linked back to as well: the
        cluster then sees that node id served where the backup listens (what a
        quorum vote asks)."""
        cc = self.config.cluster_connections.get(hello.cluster_connection)
        if self._identity is None:  # a hello between the server's start and ours: answered at start()
            self._early_hellos.append(hello)
            return
        if (cc is None or hello.scale_down or not hello.connector or cc.allow_direct_connections_only
                or not cc.static_connectors or hello.node_id == self.broker.node_id):
            return
        # Linked to that node already — unless only at an endpoint that is down
        # while it links from another one (a backup serving a live's node id now).
        if any(b.cc_name == hello.cluster_connection and b.target_node_id == hello.node_id
               and (b.state == CONNECTED or b.endpoint == hello.connector) for b in self.bridges.values()):
            return
        if self._link(hello.cluster_connection, hello.connector) is not None:
            log.info("cluster connection %s: linking back to %s (%s), which linked to this node",
                     hello.cluster_connection, hello.node_name, hello.connector)

    def _learned(self, bridge: Bridge, members: list[cpb.ClusterMember]) -> None:
        """Members a link's target told us of: linked to as well, unless the
        cluster connection allows direct connections only (or has no static
        connectors: a discovery group already names every node)."""
        cc = self.config.cluster_connections[bridge.cc_name]
        if cc.allow_direct_connections_only or not cc.static_connectors:
            return
        linked = {b.target_node_id for b in self.bridges.values() if b.cc_name == bridge.cc_name}
        for m in members:
            if m.node_id != self.broker.node_id and m.node_id not in linked and m.connector:
                log.info("cluster connection %s: linking to %s (%s), learned from %s", bridge.cc_name, m.node_name,
                         m.connector, bridge.target_node_name)
                self._link(bridge.cc_name, m.connector)

    async def _unlink(self, cc_name: str, endpoint: str) -> None:
        bridge = self.bridges.pop((cc_name, endpoint), None)
        if bridge is not None:
            log.info("cluster connection %s: %s left the discovery group; link closed", cc_name, endpoint)
            await bridge.stop()
            bridge.state = DEPARTED
            bridge.problem = (f"left the discovery group at {time.strftime('%Y-%m-%d %H:%M:%S')}"
                              + (f"; {bridge.problem}" if bridge.problem else ""))
            self.departed[(cc_name, endpoint)] = bridge

    def links(self) -> list[Bridge]:
        """Every cluster bridge, those to departed nodes last (state DEPARTED)."""
        return [*self.bridges.values(), *self.departed.values()]

    async def _follow(self, cc_name: str, group_ref: str) -> None:
        """Keep one link per node of the discovery group."""
        from meshmq.discovery.groups import group_watcher

        api, watcher = group_watcher(self.config, group_ref)
        self._apis.append(api)
        self._watchers.append(watcher)
        sub = watcher.subscribe()
        static = {self.config.connectors[r] for r in self.config.cluster_connections[cc_name].static_connectors or ()}
        try:
            while True:
                if watcher.synced:
                    wanted = {n.connector for n in watcher.nodes() if n.node_id != self.broker.node_id}
                    for endpoint in sorted(wanted):
                        self._link(cc_name, endpoint)
                    for (name, endpoint) in list(self.bridges):
                        if name == cc_name and endpoint not in wanted and endpoint not in static:
                            await self._unlink(name, endpoint)
                await sub.queue.get()
        finally:
            sub.close()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for bridge in list(self.bridges.values()):
            await bridge.stop()
        self.bridges.clear()
        for watcher in self._watchers:
            await watcher.close()
        for api in self._apis:
            await api.close()
