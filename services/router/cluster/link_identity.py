"""How this node opens a link to another: the one place that decides the
channel (plain or TLS) and the credential a link carries.

A cluster speaks to itself the way its clients speak to it. The endpoint
other nodes link to is this node's connector (the cluster connection's
`connector-ref`, else the first acceptor), and every node of a cluster is
set up alike, so the acceptor serving that endpoint says what a link needs:
with `ssl-enabled`, links use TLS, trusting the acceptor's `trust-path` (the
cluster's CA; without one, the system's CAs) and presenting the acceptor's
own certificate (so a target with `need-client-auth` accepts it). The same
channel settings serve this node's other calls to the cluster's services (the
HA coordinator, a discovery service). With a cluster password, every call
carries a proof of membership, given only after the peer proved its own
(meshmq/security/cluster_proof.py); the password itself never travels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from meshmq.security.cluster_identity import cluster_prover, node_channel_credentials
from meshmq.security.cluster_proof import ClusterProver
from meshmq.transport import open_channel
from meshmq.v1 import cluster_pb2 as cpb

if TYPE_CHECKING:
    from meshmq.config.models import BrokerConfig


@dataclass(frozen=True)
class LinkIdentity:
    """What every link of this node presents: its channel credentials, its
    proof of cluster membership, and the connector others link back to ("" =
    none: scale-down)."""

    prover: ClusterProver
    credentials: grpc.ChannelCredentials | None = None
    connector: str = ""

    def open(self, endpoint: str) -> grpc.aio.Channel:
        """A channel to another node's acceptor at `endpoint`."""
        return open_channel(endpoint, credentials=self.credentials)

    async def metadata(self, channel: grpc.aio.Channel, endpoint: str, *,
                       timeout_s: float | None = 10.0) -> tuple[tuple[str, str], ...]:
        """The metadata for a call over `channel` to `endpoint`, after the peer
        proved it is a member (UNAUTHENTICATED AioRpcError when it did not)."""
        return await self.prover.metadata(channel, endpoint, timeout_s=timeout_s)

    @property
    def tls(self) -> bool:
        return self.credentials is not None

    def hello(self, cluster_connection: str, node_id: str, node_name: str, **more) -> cpb.LinkRequest:
        """The first message of every link this node opens."""
        return cpb.LinkRequest(hello=cpb.LinkHello(cluster_connection=cluster_connection, node_id=node_id,
                                                   node_name=node_name, connector=self.connector, **more))


def link_identity(config: BrokerConfig, connector: str = "") -> LinkIdentity:
    return LinkIdentity(cluster_prover(config), node_channel_credentials(config), connector)
