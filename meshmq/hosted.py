"""A gRPC service another service hosts on a router's acceptors: the seam
that lets the HA coordinator answer on the router's endpoints (its quorum
votes, a live's replication stream) without either importing the other.

`services/embedded.py` hands the router a list of `HostedService`s; the
router calls each one at every start with what it may ask of the node (its
`NodeFacts`, plain callables) and adds the servicer it returns to its
server, behind the same checks as its own services.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from google.protobuf.descriptor import ServiceDescriptor

from meshmq.v1 import cluster_pb2 as cpb


@dataclass(frozen=True)
class NodeFacts:
    """What a hosted service may ask of the router it runs on."""

    node_id: Callable[[], str]
    node_name: str
    # This node and the nodes it links to now (its cluster connections' view).
    members: Callable[[], list[cpb.ClusterMember]]


# Made at each start of the node: (the servicer, its ServiceDescriptor).
HostedService = Callable[[NodeFacts], tuple[object, ServiceDescriptor]]


def hosting(servicer: object, descriptor: ServiceDescriptor) -> HostedService:
    """A servicer made before the node (it needs nothing of it), hosted as it is."""
    return lambda node: (servicer, descriptor)
