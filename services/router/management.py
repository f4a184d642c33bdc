"""The Management gRPC service: what the CLI and the admin gateway call."""

from __future__ import annotations

import grpc

from meshmq import __version__
from meshmq.errors import BrokerError, abort_with
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import management_pb2_grpc as mggrpc

from .auth import Authenticator
from .broker import Broker
from .queue import Queue
from .client_topology import ClientTopology


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
    def __init__(self, broker: Broker, auth: Authenticator, topology: ClientTopology) -> None:
        self.broker = broker
        self.auth = auth
        self.topology = topology

    async def _guard(self, context: grpc.aio.ServicerContext, fn):
        try:
            self.auth.authenticate(context)
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
            ),
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
            q = self.broker.create_queue(
                request.name,
                request.address or request.name,
                request.routing_type or 1,
                request.filter,
                durable=request.durable,
            )
            return queue_info(q)

        return await self._guard(context, run)

    async def DeleteQueue(self, request, context):
        return await self._guard(
            context,
            lambda: mgpb.DeleteQueueResponse(messages_removed=self.broker.delete_queue(request.name, force=request.force)),
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
            context, lambda: mgpb.PurgeQueueResponse(messages_removed=self.broker.purge_queue(request.name))
        )
