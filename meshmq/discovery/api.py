"""What callers of discovery program against: `DiscoveryAPI` and `Membership`.

Two transports satisfy `DiscoveryAPI`: `DiscoveryCore` hosted in the caller's
process (the node then talks to etcd itself and holds its own lease, so a
kill -9 of the node stops the keep-alives) and `GrpcDiscoveryClient` when
discovery runs as its own process (`meshmq serve discovery`). Both take and
return the protobuf messages of `proto/meshmq/v1/discovery.proto`.
`WatchSource` is the part a `TopologyWatcher` needs, which a backend inside
the discovery service also provides.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from meshmq.v1 import discovery_pb2 as dpb


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
