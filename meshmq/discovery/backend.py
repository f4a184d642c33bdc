"""What a discovery backend does: hold announcements, list them, stream their changes.

Two backends satisfy `Backend`: etcd (`etcd_backend.py`) and a static list
of connectors (`static_backend.py`). The core (`core.py`) speaks only this
interface; errors are the ones in `errors.py`, so they mean the same in every
process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from meshmq.v1 import discovery_pb2 as dpb


class Registration(Protocol):
    """One announced node, held by this process. Nothing keeps it alive but
    the caller's keep_alive() calls; without them it lapses after its TTL."""

    node: dpb.ClusterNode
    lease_ttl_ms: int

    async def keep_alive(self) -> None:
        """Renew the lease; announce again if the backend lost it. Raises
        DiscoveryUnavailableError (retry later) or NodeIdInUseError (give up)."""

    async def update(self, node: dpb.ClusterNode) -> None: ...

    async def leave(self) -> None:
        """Remove the node now."""


class Backend(Protocol):
    description: str
    # The smallest refresh-timeout the backend can honour (etcd counts lease TTLs in seconds).
    min_refresh_timeout_ms: int

    async def check(self, timeout_s: float) -> None:
        """Return once the backend answers; DiscoveryUnavailableError after timeout_s."""

    async def register(self, node: dpb.ClusterNode, *, refresh_timeout_ms: int,
                       broadcast_period_ms: int) -> Registration: ...

    async def list(self, cluster_name: str) -> list[dpb.ClusterNode]: ...

    def watch(self, cluster_name: str) -> AsyncIterator[dpb.WatchNodesResponse]:
        """A snapshot, then NODE_UP for every put and NODE_DOWN for every removal,
        until the stream breaks (DiscoveryUnavailableError)."""

    async def close(self) -> None: ...
