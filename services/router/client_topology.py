"""What this node knows of the cluster's members, for clients to balance over.

One object owns the member list; watchers (client WatchTopology streams) wait
on it and get the whole list after every change. A node alone, or before
discovery reports anything, knows only itself.

With rebalance-cluster-clients, a node id joining raises `rebalance`: the
clients following this node's pushes move sessions to spread over the members
again (ActiveMQ asks its failover clients the same when a broker joins; a node
leaving changes nothing, as there: its sessions fail over anyway).
"""

from __future__ import annotations

import asyncio

from meshmq.v1 import management_pb2 as mgpb


class ClientTopology:
    def __init__(self, *, rebalance_on_join: bool = False) -> None:
        self._members: dict[str, mgpb.TopologyMember] = {}
        self.version = 0
        self._rebalance_on_join = rebalance_on_join
        self.rebalance = 0
        self._changed = asyncio.Condition()

    def snapshot(self) -> mgpb.Topology:
        members = sorted(self._members.values(), key=lambda m: (m.connector, m.node_id))
        return mgpb.Topology(members=members, version=self.version, rebalance=self.rebalance)

    async def replace(self, members: list[mgpb.TopologyMember]) -> None:
        """Set the whole member list (from discovery, or this node alone)."""
        new = {m.node_id: m for m in members}
        if new == self._members:
            return
        if self._rebalance_on_join and self._members and new.keys() - self._members.keys():
            self.rebalance += 1
        self._members = new
        self.version += 1
        async with self._changed:
            self._changed.notify_all()

    async def watch(self):
        """The current topology, then each new one as it changes."""
        seen = -1
        while True:
            if self.version != seen:
                seen = self.version
                yield self.snapshot()
            async with self._changed:
                await self._changed.wait_for(lambda: self.version != seen)
