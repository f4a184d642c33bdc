"""The Management gRPC service: what the CLI and the admin gateway call.

Every method authenticates its caller and checks the permission access.py
lists for it before it reads or changes anything."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import grpc

from meshmq import __version__
from meshmq.errors import BrokerError, abort_with
from meshmq.security.authentication import Authenticator
from meshmq.security.authorization import Authorizer, Permission
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import management_pb2_grpc as mggrpc

from .access import MANAGEMENT_ADDRESS, access_for
from .addresses import not_internal
from .broker import Broker
from .queue import Queue
from .client_topology import ClientTopology


# What listing and node information need (access.py).
_MANAGE = ((Permission.MANAGE, MANAGEMENT_ADDRESS),)


def queue_info(q: Queue) -> mgpb.QueueInfo:
    return mgpb.QueueInfo(
        name=q.name,
        address=q.address,
        routing_type=q.routing_type,
        filter=q.filter_text,
        durable=q.durable,
        temporary=q.temporary,
        auto_created=q.auto_created,
        message_count=q.message_count,
        consumer_count=len(q.consumers),
        delivering_count=q.delivering,
        messages_added=q.messages_added,
        messages_acknowledged=q.messages_acknowledged,
        messages_expired=q.messages_expired,
        messages_killed=q.messages_killed,
        paged_count=q.paged_messages,
        paged_bytes=q.paged_bytes,
    )


class ManagementServicer(mggrpc.ManagementServicer):
    def __init__(self, broker: Broker, auth: Authenticator, topology: ClientTopology,
                 authorizer: Authorizer | None = None, bridges: Callable[[], Iterable] = tuple,
                 ha_policy: str = "live-only", ha_group: str = "", backup: Callable[[], str] = str) -> None:
        self.broker = broker
        # BrokerConfig.ha_role and ha_group, and where the node's backup waits, shown in NodeInfo.
        self._ha_policy = ha_policy
        self._ha_group = ha_group
        self._backup = backup
        # The node's cluster bridges (ClusterConnections.bridges), for GetClusterState.
        self.bridges = bridges
        self.auth = auth
        self.topology = topology
        self.authorizer = authorizer or Authorizer(enabled=False)

    async def _guard(self, context: grpc.aio.ServicerContext, fn,
                     needed: Callable[[], Iterable[tuple[Permission, str]]] = lambda: _MANAGE):
        """Authenticate, check each (permission, address) `needed` gives, then run `fn`."""
        try:
            user = self.auth.authenticate(context)
            access = access_for(self.authorizer, user)
            if access is not None:
                for permission, address in needed():
                    access.check(permission, address)
            return fn()
        except BrokerError as exc:
            await abort_with(context, exc)

    async def GetNodeInfo(self, request, context):
        b = self.broker
        return await self._guard(
            context,
            lambda: mgpb.NodeInfo(
                node_id=b.node_id,
                name=b.name,
                version=__version__,
                started_at=b.started_at,
                journal=b.journal.description,
                epoch=b.epoch,
                ha_policy=self._ha_policy,
                group_name=self._ha_group,
                backup_connector=self._backup(),
            ),
            lambda: (),  # every client asks at first contact (access.py)
        )

    async def ListAddresses(self, request, context):
        def run():
            out = mgpb.ListAddressesResponse()
            for a in sorted(self.broker.addresses.values(), key=lambda a: a.name):
                out.addresses.add(
                    name=a.name,
                    routing_types=[rt for bit, rt in ((1, 1), (2, 2)) if a.routing_types & bit],
                    queues=sorted(a.queues),
                    auto_created=a.auto_created,
                    memory_messages=max(0, a.memory_messages),
                    memory_bytes=max(0, a.memory_bytes),
                    messages_dropped=a.messages_dropped,
                    paging=any(q.has_page for q in a.queues.values()),
                )
            return out

        return await self._guard(context, run)

    async def ListQueues(self, request, context):
        def run():
            qs = sorted(self.broker.queues.values(), key=lambda q: q.name)
            return mgpb.ListQueuesResponse(
                queues=[queue_info(q) for q in qs if not request.address or q.address == request.address]
            )

        return await self._guard(context, run)

    async def GetClusterState(self, request, context):
        def run():
            b = self.broker
            state = mgpb.ClusterState(node_id=b.node_id, node_name=b.name)
            for bridge in sorted(self.bridges(), key=lambda x: x.name):
                sf = bridge._sf
                state.bridges.add(
                    cluster_connection=bridge.cc_name, endpoint=bridge.endpoint,
                    target_node_id=bridge.target_node_id, target_node_name=bridge.target_node_name,
                    state=bridge.state, problem=bridge.problem, routed=bridge.routed, forwarded=bridge.forwarded,
                    confirmed=bridge.confirmed, pending=bridge.pending, retries=bridge.retries,
                    store_and_forward_queue=sf.name if sf is not None else "",
                )
            for rb in sorted(b.remote.all(), key=lambda r: (r.address, r.queue, r.node_name)):
                state.remote_bindings.add(
                    node_id=rb.node_id, node_name=rb.node_name, queue=rb.queue, address=rb.address,
                    routing_type=rb.routing_type, filter=rb.filter_text, consumer_filters=rb.consumer_filters,
                    hops=rb.hops, via=rb.link.name,
                )
            return state

        return await self._guard(context, run)

    async def ListConsumers(self, request, context):
        def run():
            out = mgpb.ListConsumersResponse()
            for q in sorted(self.broker.queues.values(), key=lambda q: q.name):
                if request.queue and q.name != request.queue:
                    continue
                for c in q.consumers:
                    out.consumers.add(
                        session_id=c.target.id,
                        consumer_id=c.id,
                        queue=q.name,
                        filter=c.filter_text,
                        delivering_count=len(c.delivering),
                        messages_acknowledged=c.messages_acknowledged,
                        credits=c.credits,
                        client_id=c.target.client_id,
                    )
            return out

        return await self._guard(context, run)

    async def CreateQueue(self, request, context):
        def run():
            not_internal("queue", request.name)
            not_internal("address", request.address)
            q = self.broker.create_queue(
                request.name,
                request.address or request.name,
                request.routing_type or 1,
                request.filter,
                durable=request.durable,
            )
            return queue_info(q)

        def needed():
            address = request.address or request.name
            if address not in self.broker.addresses:
                yield Permission.CREATE_ADDRESS, address
            durable = request.durable and self.broker.persistence_enabled
            yield (Permission.CREATE_DURABLE_QUEUE if durable else Permission.CREATE_NON_DURABLE_QUEUE), address

        return await self._guard(context, run, needed)

    async def DeleteQueue(self, request, context):
        def needed():
            q = self.broker.get_queue(request.name)
            yield (Permission.DELETE_DURABLE_QUEUE if q.durable else Permission.DELETE_NON_DURABLE_QUEUE), q.address

        return await self._guard(
            context,
            lambda: mgpb.DeleteQueueResponse(messages_removed=self.broker.delete_queue(request.name, force=request.force)),
            needed,
        )

    async def WatchTopology(self, request, context):
        try:
            self.auth.authenticate(context)
        except BrokerError as exc:
            await abort_with(context, exc)
            return
        async for snapshot in self.topology.watch():
            yield snapshot

    async def PurgeQueue(self, request, context):
        return await self._guard(
            context,
            lambda: mgpb.PurgeQueueResponse(messages_removed=self.broker.purge_queue(request.name)),
            lambda: [(Permission.MANAGE, self.broker.get_queue(request.name).address)],
        )
