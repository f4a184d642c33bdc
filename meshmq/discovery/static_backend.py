"""The static-connectors backend: a fixed list, for networks without etcd.

As in Artemis, the list only gives the first contacts; the real topology is
learnt from the nodes themselves once connected. Nothing can be announced to
it, and it never changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from meshmq.v1 import discovery_pb2 as dpb

from .backend import Registration
from .errors import DiscoveryConfigError


class StaticBackend:
    min_refresh_timeout_ms = 0

    def __init__(self, connectors: Sequence[str]) -> None:
        self.connectors = tuple(connectors)
        self.description = "static-connectors " + ",".join(self.connectors)

    async def check(self, timeout_s: float) -> None:
        return None

    async def register(self, node: dpb.ClusterNode, *, refresh_timeout_ms: int, broadcast_period_ms: int) -> Registration:
        raise DiscoveryConfigError(
            f"cannot announce node {node.node_id}: this discovery group uses {self.description}, "
            "which cannot be announced to; announce through an etcd discovery group"
        )

    async def list(self, cluster_name: str) -> list[dpb.ClusterNode]:
        return [
            dpb.ClusterNode(node_id=f"static:{c}", cluster_name=cluster_name, connector=c,
                            role=dpb.NODE_ROLE_LIVE, static=True)
            for c in self.connectors
        ]

    async def watch(self, cluster_name: str) -> AsyncIterator[dpb.WatchNodesResponse]:
        nodes = await self.list(cluster_name)
        yield dpb.WatchNodesResponse(snapshot=dpb.ClusterSnapshot(nodes=nodes, available=True))
        await asyncio.Event().wait()  # a static list never changes

    async def close(self) -> None:
        return None
