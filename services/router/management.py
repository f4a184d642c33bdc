"""The Management gRPC service: what the CLI and the admin gateway call.

Every method authenticates its caller and checks the permission access.py
lists for it before it reads or changes anything."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterable

import grpc

from meshmq import __version__
from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.link_kinds import ACCEPTED, CLUSTER, DIALED
from meshmq.security.authentication import Authenticator
from meshmq.security.authorization import MANAGEMENT_ADDRESS, Authorizer, Permission
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import management_pb2_grpc as mggrpc
from meshmq.v1 import messages_pb2 as mpb

from . import browsing, connections, message_moves, operator_send
from .access import access_for, log_refusal
from .addresses import Address, compile_filter, not_internal
from .broker import Broker
from .queue import Queue
from .queue_kinds import resolve as resolve_kind

# CreateQueueRequest's message-group fields, named as queue_kinds.resolve takes them.
GROUP_ATTRIBUTES = ("group_rebalance", "group_rebalance_pause_dispatch", "group_buckets", "group_first_key")
from .temporary_queues import management_refusal
from .client_topology import ClientTopology
from .event_retention import EventLogStatus
from .node_configuration import NodeConfiguration


# What listing needs (access.py): `view`, which `manage` implies.
_VIEW = ((Permission.VIEW, MANAGEMENT_ADDRESS),)
# What lets a user manage another user's temporary queue (temporary_queues.py).
_MANAGE = (Permission.MANAGE, MANAGEMENT_ADDRESS)
DEFAULT_BODY_PREVIEW = 256


def link_info(link) -> mgpb.BridgeInfo:
    """A cluster bridge (cluster/bridge.py) or a network or tree link
    (network/link.py) as GetClusterState lists it: what every link of the
    bridge engine has (its kind, which end dialed, its counters), then what
    only a network or tree link has (its role and the demand it carries)."""
    sf = link._sf
    info = mgpb.BridgeInfo(
        cluster_connection=link.cc_name, endpoint=link.endpoint,
        target_node_id=link.target_node_id, target_node_name=link.target_node_name,
        state=link.state, problem=link.problem, routed=link.routed, forwarded=link.forwarded,
        batches=link.batches, confirmed=link.confirmed, pending=link.pending, retries=link.retries,
        store_and_forward_queue=sf.name if sf is not None else "", kind=link.kind,
        direction=DIALED if link.dialer else ACCEPTED, demand_received=link.demand_received,
    )
    if link.kind != CLUSTER:
        info.duplex = link.duplex
        info.role = link.role
        info.demand_sent = link.demand_sent
        info.subscriptions = len(link.subscriptions)
    return info


def address_info(a: Address) -> mgpb.AddressInfo:
    return mgpb.AddressInfo(
        name=a.name,
        routing_types=[rt for bit, rt in ((1, 1), (2, 2)) if a.routing_types & bit],
        queues=sorted(a.queues),
        auto_created=a.auto_created,
        memory_messages=max(0, a.memory_messages),
        memory_bytes=max(0, a.memory_bytes),
        messages_dropped=a.messages_dropped,
        paging=any(q.has_page for q in a.queues.values()),
    )


def browsed_message(item: browsing.Browsed, preview: int | None = None) -> mgpb.BrowsedMessage:
    """`item` as the wire shows it, its body cut to `preview` bytes (None: whole)."""
    src = item.ref.msg.proto
    m = mpb.Message()
    m.CopyFrom(src)
    if preview is not None and len(m.body) > preview:
        m.body = m.body[:preview]
    return mgpb.BrowsedMessage(
        message=m, state=item.state, delivery_count=item.ref.delivery_count,
        body_size=src.body_size if src.large else len(src.body),
    )


def progress(p: message_moves.Progress) -> mgpb.OperationProgress:
    return mgpb.OperationProgress(done=p.done, total=p.total, finished=p.finished, kept=p.kept,
                                  outcomes=[message_outcome(o) for o in p.outcomes])


def message_outcome(o: message_moves.Outcome) -> mgpb.MessageOutcome:
    return mgpb.MessageOutcome(
        message_id=o.message_id, result=mgpb.MessageOutcome.Result.Value(o.result), address=o.address,
        queues=o.queues, address_created=o.address_created, queues_created=o.queues_created, reason=o.reason,
        detail=o.detail, new_message_id=o.new_message_id,
    )


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
        messages_delivered=q.messages_delivered,
        messages_expired=q.messages_expired,
        messages_killed=q.messages_killed,
        paged_count=q.paged_messages,
        paged_bytes=q.paged_bytes,
        scheduled_count=q.scheduled_count,
        paused=q.paused,
        last_value_key=q.attributes.last_value_key or "",
        non_destructive=q.attributes.non_destructive,
        exclusive=q.attributes.exclusive,
        group_rebalance=q.attributes.group_rebalance,
        group_rebalance_pause_dispatch=q.attributes.group_rebalance_pause_dispatch,
        group_buckets=q.attributes.group_buckets,
        group_first_key=q.attributes.group_first_key or "",
        group_count=q.groups.count if q.groups is not None else 0,
    )


def alarm_fields(memory) -> dict:
    """NodeInfo's alarm fields from the router's MemoryUse and its disk scan (disk_usage.py)."""
    fields = dict(memory_alarm=memory.memory_alarm, disk_alarm=memory.disk_full, disk_alarm_reason=memory.disk_reason)
    disk = memory.disk
    if disk is not None:
        r = disk.reading
        fields.update(max_disk_usage=disk.max_disk_usage, disk_used_percent=round(r.used_percent, 2),
                      disk_free_bytes=r.free_bytes, disk_total_bytes=r.total_bytes, journal_bytes=r.journal_bytes,
                      disk_scanned_at=int(r.at * 1000))
    return fields


class ManagementServicer(mggrpc.ManagementServicer):
    def __init__(self, broker: Broker, auth: Authenticator, topology: ClientTopology,
                 authorizer: Authorizer | None = None, *, event_log: EventLogStatus,
                 bridges: Callable[[], Iterable] = tuple, ha_policy: str = "live-only", ha_group: str = "",
                 backup: Callable[[], str] = str, sessions: Callable[[], Iterable] = tuple,
                 configuration: NodeConfiguration | None = None) -> None:
        self.broker = broker
        # What the node's config says (GetAddressSettings, ListLinkConfigurations); None: not offered.
        self._configuration = configuration
        # The node's open client sessions (BrokerServicer.sessions), for ListConnections.
        self._sessions = sessions
        self._event_log = event_log  # RouterNode's, kept up to date by the event retention
        # BrokerConfig.ha_role and ha_group, and where the node's backup waits, shown in NodeInfo.
        self._ha_policy = ha_policy
        self._ha_group = ha_group
        self._backup = backup
        # The node's cluster bridges (ClusterConnections.bridges), for GetClusterState.
        self.bridges = bridges
        self.auth = auth
        self.topology = topology
        self.authorizer = authorizer or Authorizer(enabled=False)

    def _check(self, context: grpc.aio.ServicerContext,
               needed: Callable[[], Iterable[tuple[Permission, str]]], queue: str = "") -> None:
        user = self.auth.authenticate(context)
        access = access_for(self.authorizer, user)
        if access is None:
            return
        for permission, address in needed():
            access.check(permission, address)
        if queue:
            owner = self.broker.get_queue(queue).owner
            refusal = management_refusal(queue, owner, user, owner is not None and access.allowed(*_MANAGE))
            if refusal is not None:
                log_refusal(refusal)
                raise refusal

    async def _guard(self, context: grpc.aio.ServicerContext, fn,
                     needed: Callable[[], Iterable[tuple[Permission, str]]] = lambda: _VIEW, queue: str = ""):
        """Authenticate, check each (permission, address) `needed` gives and,
        for a call on one `queue`, who may manage it if it is temporary
        (temporary_queues.py); then run `fn` (awaited when it returns an awaitable)."""
        try:
            self._check(context, needed, queue)
            result = fn()
            return await result if inspect.isawaitable(result) else result
        except BrokerError as exc:
            await abort_with(context, exc)

    async def _guard_stream(self, context: grpc.aio.ServicerContext, fn: Callable[[], AsyncIterator],
                            needed: Callable[[], Iterable[tuple[Permission, str]]], queue: str = "",
                            convert: Callable | None = None):
        """`_guard` for a streamed answer: each item `fn()` yields, converted by
        `convert` (`progress` unless given)."""
        convert = convert or progress
        try:
            self._check(context, needed, queue)
            async for item in fn():
                yield convert(item)
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
                event_log_enabled=self._event_log.enabled,
                event_retention=self._event_log.retention_ms,
                events_kept_from=self._event_log.kept_from,
                events_pruned=self._event_log.pruned,
                global_max_size=b.memory.global_max_size,
                memory_bytes=max(0, b.memory.bytes),
                **alarm_fields(b.memory),
            ),
            lambda: (),  # every client asks at first contact (access.py)
        )

    async def ListAddresses(self, request, context):
        def run():
            addresses = sorted(self.broker.addresses.values(), key=lambda a: a.name)
            return mgpb.ListAddressesResponse(addresses=[address_info(a) for a in addresses])

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
            state.bridges.extend(link_info(link) for link in sorted(self.bridges(), key=lambda x: x.name))
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
            address = request.address or request.name
            attributes = resolve_kind(
                self.broker.settings(address),
                request.last_value_key if request.HasField("last_value_key") else None,
                request.last_value if request.HasField("last_value") else None,
                request.non_destructive if request.HasField("non_destructive") else None,
                request.exclusive if request.HasField("exclusive") else None,
                **{name: getattr(request, name) for name in GROUP_ATTRIBUTES if request.HasField(name)},
            )
            q = self.broker.create_queue(
                request.name,
                address,
                request.routing_type or 1,
                request.filter,
                durable=request.durable,
                attributes=attributes,
            )
            return stored(q) if q.durable else queue_info(q)

        async def stored(q: Queue) -> mgpb.QueueInfo:
            """A durable queue is answered once its definition is in the journal
            (as Artemis writes the binding before createQueue returns): a kill -9
            right after the answer must not lose it, nor its attributes."""
            resp = await asyncio.shield(self.broker.stored())  # (a cancelled call must not cancel the shared commit)
            if not resp.ok:
                raise BrokerError(Reason.STORE_UNAVAILABLE, f"queue {q.name!r} not stored: {resp.message}")
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
            request.name,
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
            request.name,
        )

    async def CreateAddress(self, request, context):
        return await self._guard(
            context,
            lambda: address_info(self.broker.create_address(request.name, list(request.routing_types))),
            lambda: [(Permission.CREATE_ADDRESS, request.name)],
        )

    async def DeleteAddress(self, request, context):
        return await self._guard(
            context,
            lambda: mgpb.DeleteAddressResponse(
                messages_removed=self.broker.delete_address(request.name, force=request.force)),
            lambda: [(Permission.DELETE_ADDRESS, request.name)],
        )

    async def BrowseMessages(self, request, context):
        async def run():
            q = self.broker.get_queue(request.queue)
            selector = compile_filter(request.filter)
            limit = min(request.limit or browsing.DEFAULT_LIMIT, browsing.MAX_LIMIT)
            preview = request.body_preview_bytes or DEFAULT_BODY_PREVIEW
            wanted = None if selector is None else (lambda ref: selector.matches(ref.msg.lookup))
            items, total = await browsing.browse(self.broker, q, request.offset, limit, wanted)
            return mgpb.BrowseMessagesResponse(messages=[browsed_message(i, preview) for i in items], total=total)

        return await self._guard(
            context, run, lambda: [(Permission.BROWSE, self.broker.get_queue(request.queue).address)], request.queue
        )

    async def BrowseQueue(self, request, context):
        def run():
            q = self.broker.get_queue(request.queue)
            selector = compile_filter(request.filter)
            wanted = None if selector is None else (lambda ref: selector.matches(ref.msg.lookup))
            size = min(request.page_size or browsing.DEFAULT_LIMIT, browsing.MAX_LIMIT)
            return browsing.pages(self.broker, q, wanted, size)

        def page(items: list[browsing.Browsed]) -> mgpb.BrowsePage:
            return mgpb.BrowsePage(messages=[browsed_message(i) for i in items])

        async for item in self._guard_stream(
            context, run, lambda: [(Permission.BROWSE, self.broker.get_queue(request.queue).address)], request.queue,
            page,
        ):
            yield item

    async def MoveMessages(self, request, context):
        def needed():
            yield Permission.MANAGE, self.broker.get_queue(request.queue).address
            yield Permission.SEND, self.broker.get_queue(request.to_queue).address

        def run():
            b = self.broker
            return message_moves.move(
                b, b.get_queue(request.queue), b.get_queue(request.to_queue), compile_filter(request.filter),
                request.limit,
            )

        async for item in self._guard_stream(context, run, needed, request.queue):
            yield item

    async def RetryMessages(self, request, context):
        def run():
            b = self.broker
            return message_moves.retry(b, b.get_queue(request.queue), compile_filter(request.filter),
                                       request.message_id)

        async for item in self._guard_stream(
            context, run, lambda: [(Permission.MANAGE, self.broker.get_queue(request.queue).address)], request.queue
        ):
            yield item

    async def PauseQueue(self, request, context):
        return await self._pause(request, context, True)

    async def ResumeQueue(self, request, context):
        return await self._pause(request, context, False)

    async def SetMaxDiskUsage(self, request, context):
        b = self.broker

        def run():
            value = request.max_disk_usage
            if not -1 <= value <= 100:
                raise BrokerError(Reason.INVALID_REQUEST, f"max-disk-usage must be -1 (no check) or a percent "
                                  f"from 0 to 100, not {value}")
            if b.memory.disk is None:
                raise BrokerError(Reason.INVALID_REQUEST, "this router does not scan its disk")
            b.memory.disk.set_limit(value)
            return mgpb.NodeInfo(node_id=b.node_id, name=b.name, version=__version__, started_at=b.started_at,
                                 global_max_size=b.memory.global_max_size, memory_bytes=max(0, b.memory.bytes),
                                 **alarm_fields(b.memory))

        return await self._guard(context, run, lambda: [_MANAGE])

    async def ResetAllGroups(self, request, context):
        def run():
            q = self.broker.get_queue(request.queue)
            return mgpb.ResetAllGroupsResponse(groups_reset=q.groups.reset() if q.groups is not None else 0)

        return await self._guard(
            context, run, lambda: [(Permission.MANAGE, self.broker.get_queue(request.queue).address)], request.queue,
        )

    async def _pause(self, request, context, paused: bool):
        return await self._guard(
            context,
            lambda: queue_info(self.broker.pause_queue(request.name, paused)),
            lambda: [(Permission.MANAGE, self.broker.get_queue(request.name).address)],
            request.name,
        )

    async def ListConnections(self, request, context):
        b = self.broker
        return await self._guard(context, lambda: mgpb.ListConnectionsResponse(
            connections=connections.list_connections(self._sessions(), b.node_id, b.name)))

    async def CloseConnection(self, request, context):
        def run():
            if not request.connection_id:
                raise BrokerError(Reason.INVALID_REQUEST, "CloseConnection needs connection_id")
            closed = connections.close_connection(self._sessions(), request.connection_id, self.broker.name)
            return mgpb.CloseConnectionResponse(sessions_closed=closed)

        return await self._guard(context, run, lambda: (_MANAGE,))

    async def SendMessage(self, request, context):
        async def run():
            if not request.message.address:
                raise BrokerError(Reason.INVALID_REQUEST, "SendMessage needs message.address")
            user = self.auth.authenticate(context)
            message_id, queues = await operator_send.send_message(
                self.broker, request.message, user, access_for(self.authorizer, user))
            return mgpb.SendMessageResponse(message_id=message_id, queues=queues)

        # The send permission is checked as for a client's send: by the pipeline, on the message's address.
        return await self._guard(context, run, lambda: ())

    async def GetAddressSettings(self, request, context):
        def run():
            if not request.address:
                raise BrokerError(Reason.INVALID_REQUEST, "GetAddressSettings needs an address")
            return self._configured().address_settings(request.address)

        return await self._guard(context, run)

    async def ListLinkConfigurations(self, request, context):
        return await self._guard(context, lambda: self._configured().links())

    def _configured(self) -> NodeConfiguration:
        if self._configuration is None:
            raise BrokerError(Reason.INVALID_REQUEST, "this router does not show its configuration")
        return self._configuration

