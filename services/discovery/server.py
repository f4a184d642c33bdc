"""Discovery as a gRPC service (`meshmq serve discovery`).

Only the transport lives here: the servicer turns each call into a call on a
`meshmq.discovery.DiscoveryCore` and its errors into gRPC statuses with a
reason, which `meshmq.discovery.GrpcDiscoveryClient` turns back.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import grpc

from meshmq.discovery import (
    DiscoveryConfigError,
    DiscoveryCore,
    DiscoveryUnavailableError,
    Membership,
    NodeIdInUseError,
)
from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.metrics import Families
from meshmq.transport import add_servicer
from meshmq.v1 import discovery_pb2 as dpb
from meshmq.v1 import discovery_pb2_grpc as dgrpc

log = logging.getLogger("meshmq.discovery")


def _broker_error(exc: Exception) -> BrokerError:
    if isinstance(exc, NodeIdInUseError):
        return BrokerError(Reason.DUPLICATE_ID, str(exc))
    if isinstance(exc, DiscoveryConfigError):
        return BrokerError(Reason.INVALID_REQUEST, str(exc))
    if isinstance(exc, DiscoveryUnavailableError):
        return BrokerError(Reason.STORE_UNAVAILABLE, str(exc))
    return BrokerError(Reason.INTERNAL, str(exc))


_ERRORS = (NodeIdInUseError, DiscoveryConfigError, DiscoveryUnavailableError)


class DiscoveryServicer(dgrpc.DiscoveryServicer):
    def __init__(self, core: DiscoveryCore) -> None:
        self.core = core
        # For the metrics (fill_metrics): streams open now, and joins and leaves so far.
        self.announcing = 0
        self.watching = 0
        self.joins = 0
        self.leaves = 0

    def fill_metrics(self, fam: Families) -> None:
        """The discovery service's metrics (meshmq.metrics: run at scrape time, on this loop)."""
        fam.gauge("meshmq_discovery_announce_streams", "Announce streams open at this instance "
                  "(nodes keeping their membership alive through it).", self.announcing)
        fam.counter("meshmq_discovery_joins_total", "Nodes that joined a cluster through this instance.", self.joins)
        fam.counter("meshmq_discovery_leaves_total", "Nodes that left a cluster through this instance "
                    "(a stream that ends without a leave is not counted: its lease lapses).", self.leaves)
        fam.gauge("meshmq_discovery_watch_streams", "Watch streams open at this instance (routers and clients "
                  "following a cluster's topology).", self.watching)
        fam.declare_gauge("meshmq_discovery_members", "Members of each cluster this instance follows "
                          "(one view per cluster name listed or watched).", "cluster")
        fam.declare_gauge("meshmq_discovery_backend_available", "1 while the view of the cluster is in step "
                          "with the backend (etcd), 0 while it is unreachable.", "cluster")
        for cluster, view in sorted(self.core.views.items()):
            fam.gauge("meshmq_discovery_members", "", len(view.nodes()), cluster=cluster)
            fam.gauge("meshmq_discovery_backend_available", "", int(view.available), cluster=cluster)

    async def Announce(self, request_iterator, context: grpc.aio.ServicerContext) -> AsyncIterator[dpb.AnnounceResponse]:
        membership: Membership | None = None
        self.announcing += 1
        try:
            async for req in request_iterator:
                kind = req.WhichOneof("kind")
                if kind == "join":
                    if membership is not None:
                        raise BrokerError(Reason.INVALID_REQUEST, "join sent twice on one Announce stream")
                    membership = await self.core.announce(req.join)
                    self.joins += 1
                    node = membership.node
                    log.info(
                        "node %s (%s) at %s joined cluster %s: lease %d ms, keep-alive every %d ms", node.node_id,
                        node.node_name, node.connector, node.cluster_name, membership.lease_ttl_ms,
                        req.join.broadcast_period_ms,
                    )
                    yield dpb.AnnounceResponse(joined=dpb.AnnounceResponse.Joined(lease_ttl_ms=membership.lease_ttl_ms))
                elif membership is None:
                    raise BrokerError(Reason.INVALID_REQUEST, f"{kind} before join: an Announce stream starts with a join")
                elif kind == "keep_alive":
                    try:
                        await membership.keep_alive()
                        ack = dpb.AnnounceResponse.KeepAliveAck(ok=True)
                    except DiscoveryUnavailableError as exc:
                        ack = dpb.AnnounceResponse.KeepAliveAck(ok=False, message=str(exc))
                    yield dpb.AnnounceResponse(keep_alive_ack=ack)
                elif kind == "update":
                    await membership.update(req.update.node)
                    yield dpb.AnnounceResponse(updated=dpb.AnnounceResponse.Updated())
                elif kind == "leave":
                    await membership.leave()
                    self.leaves += 1
                    log.info("node %s (%s) left cluster %s", membership.node.node_id, membership.node.node_name,
                             membership.node.cluster_name)
                    membership = None
                    yield dpb.AnnounceResponse(left=dpb.AnnounceResponse.Left())
                    return
                else:
                    raise BrokerError(Reason.INVALID_REQUEST, "empty Announce request")
        except _ERRORS as exc:
            await abort_with(context, _broker_error(exc))
        except BrokerError as exc:
            await abort_with(context, exc)
        finally:
            self.announcing -= 1
            if membership is not None:
                node = membership.node
                log.info(
                    "the announce stream of node %s (%s) ended without a leave; it vanishes in %d ms unless it joins again",
                    node.node_id, node.node_name, membership.lease_ttl_ms,
                )

    async def List(self, request: dpb.ListNodesRequest, context) -> dpb.ListNodesResponse:
        try:
            return await self.core.list(request)
        except _ERRORS as exc:
            await abort_with(context, _broker_error(exc))
            raise  # unreachable: abort raises

    async def Watch(self, request: dpb.WatchNodesRequest, context) -> AsyncIterator[dpb.WatchNodesResponse]:
        self.watching += 1
        try:
            async for resp in self.core.watch(request):
                yield resp
        except _ERRORS as exc:
            await abort_with(context, _broker_error(exc))
        finally:
            self.watching -= 1


_SERVICE = dpb.DESCRIPTOR.services_by_name["Discovery"]
# What clients call to find nodes; a configured user may call these (service.py).
READ_METHODS = frozenset(f"/{_SERVICE.full_name}/{name}" for name in ("List", "Watch"))


def add_discovery_service(server: grpc.aio.Server, servicer: DiscoveryServicer) -> None:
    add_servicer(server, servicer, _SERVICE)
