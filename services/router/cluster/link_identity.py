"""How this node opens a link to another: the one place that decides the
channel (plain or TLS) and the credential a link carries.

A cluster speaks to itself the way its clients speak to it. The endpoint
other nodes link to is this node's connector (the cluster connection's
`connector-ref`, else the first acceptor), and every node of a cluster is
set up alike, so the acceptor serving that endpoint says what a link needs:
with `ssl-enabled`, links use TLS, trusting the acceptor's `trust-path` (the
cluster's CA; without one, the system's CAs) and presenting the acceptor's
own certificate (so a target with `need-client-auth` accepts it). The
cluster credential (cluster-user / cluster-password) rides on every link as
call metadata either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from meshmq.security.cluster_identity import cluster_metadata
from meshmq.transport import channel_credentials, open_channel
from meshmq.v1 import cluster_pb2 as cpb

if TYPE_CHECKING:
    from meshmq.config.models import Acceptor, BrokerConfig


@dataclass(frozen=True)
class LinkIdentity:
    """What every link of this node presents: its channel credentials, call
    metadata, and the connector others link back to ("" = none: scale-down)."""

    metadata: tuple[tuple[str, str], ...] = ()
    credentials: grpc.ChannelCredentials | None = None
    connector: str = ""

    def open(self, endpoint: str) -> grpc.aio.Channel:
        """A channel to another node's acceptor at `endpoint`."""
        return open_channel(endpoint, credentials=self.credentials)

    @property
    def tls(self) -> bool:
        return self.credentials is not None

    def hello(self, cluster_connection: str, node_id: str, node_name: str, **more) -> cpb.LinkRequest:
        """The first message of every link this node opens."""
        return cpb.LinkRequest(hello=cpb.LinkHello(cluster_connection=cluster_connection, node_id=node_id,
                                                   node_name=node_name, connector=self.connector, **more))


def connector_acceptor(config: BrokerConfig) -> Acceptor:
    """The acceptor other nodes link to: the one at the connector-ref's
    host:port, else the first (the default connector)."""
    refs = [cc.connector_ref for cc in config.cluster_connections.values() if cc.connector_ref]
    if refs:
        host, _, port = config.connectors[refs[0]].rpartition(":")
        for acceptor in config.acceptors:
            if acceptor.host == host and str(acceptor.port) == port:
                return acceptor
    return config.acceptors[0]


def link_identity(config: BrokerConfig, connector: str = "") -> LinkIdentity:
    acceptor = connector_acceptor(config)
    credentials = None
    if acceptor.ssl_enabled:
        credentials = channel_credentials(acceptor.trust_path, acceptor.cert_path, acceptor.key_path)
    return LinkIdentity(cluster_metadata(config), credentials, connector)
