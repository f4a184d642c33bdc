"""What the gateway shows, gathered from the routers: one set of models and
functions that both the REST API (as JSON) and the console (as HTML) use.

A router that does not answer becomes a node marked down with the reason.
What it last showed stays (`LastKnown`): its node info marked stale with
when it was last seen and since when it is down, its queues listed as
unreachable with their last counts, its links marked stale — for as long as
the directory remembers the node (directory.REMEMBER_S).
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from meshmq.errors import MeshMQError, NotActiveError
from meshmq.link_kinds import CLUSTER, DIALED
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import messages_pb2 as mpb

from .directory import Member, Reply, RouterDirectory

RoutingTypeName = Literal["anycast", "multicast"]


def routing_name(value: int) -> RoutingTypeName:
    return "multicast" if value == mpb.MULTICAST else "anycast"


class NodeView(BaseModel):
    name: str
    node_id: str = ""
    connector: str
    up: bool
    # Why it is not up: unreachable, a passive backup, refused credentials...
    problem: str = ""
    # live, backup (from discovery) or "" when not announced.
    role: str = ""
    ha_policy: str = ""
    group_name: str = ""
    epoch: int = 0
    version: str = ""
    started_at: int = 0
    uptime_s: float = 0
    journal: str = ""
    # Where this live's in-sync backup waits ("" = none ready).
    backup_connector: str = ""
    # For a passive backup: the live that serves its store.
    live: str = ""
    # The journal's event log (analytics): written?, kept how long (ms, -1 = for
    # ever), every event from events_kept_from (ms; 0 = none deleted) on still
    # there, events_pruned deleted since the node started.
    event_log_enabled: bool = False
    event_retention: int = 0
    events_kept_from: int = 0
    events_pruned: int = 0
    # global-max-size in force (bytes) and the bytes of messages held in memory against it.
    global_max_size: int = 0
    memory_bytes: int = 0
    # Alarms (docs/broker.md, "Alarms"): memory at global-max-size; disk used above
    # max-disk-usage percent (-1 = no check), so producers are blocked; the last disk reading.
    memory_alarm: bool = False
    disk_alarm: bool = False
    disk_alarm_reason: str = ""
    max_disk_usage: int = 0
    disk_used_percent: float = 0
    disk_free_bytes: int = 0
    journal_bytes: int = 0
    # A node down that answered before: what it last showed (stale), when it was
    # last seen and since when it is down (Unix seconds), and that in words.
    stale: bool = False
    last_seen: float = 0
    down_since: float = 0
    status: str = "up"


class QueueView(BaseModel):
    node: str
    name: str
    address: str
    routing_type: RoutingTypeName
    filter: str = ""
    durable: bool
    temporary: bool = False
    auto_created: bool = False
    paused: bool = False
    # Artemis's queue attributes: "" = not a last-value queue.
    last_value_key: str = ""
    non_destructive: bool = False
    exclusive: bool = False
    # Message groups: the attributes and the groups pinned now (Artemis's GroupCount).
    group_rebalance: bool = False
    group_rebalance_pause_dispatch: bool = False
    group_buckets: int = -1
    group_first_key: str = ""
    group_count: int = 0
    # Artemis's MessageCount: waiting + delivering + scheduled (paged ones included).
    message_count: int
    waiting: int
    delivering: int
    paged: int
    scheduled: int
    consumers: int
    messages_added: int
    messages_acknowledged: int
    # Deliveries to consumers, redeliveries included.
    messages_delivered: int = 0
    messages_expired: int
    # Sent to the dead-letter address.
    messages_dead_lettered: int
    # False: its node is down, and these are the counts it last showed (at last_seen, Unix seconds).
    reachable: bool = True
    last_seen: float = 0

    def kind(self) -> str:
        """The queue's kind in Artemis's words ("last-value-key=k, exclusive"; "" if ordinary)."""
        words = [f"last-value-key={self.last_value_key}"] if self.last_value_key else []
        words += [w for w, on in (("non-destructive", self.non_destructive), ("exclusive", self.exclusive)) if on]
        return ", ".join(words)


class AddressView(BaseModel):
    node: str
    name: str
    routing_types: list[RoutingTypeName]
    queues: list[str]
    auto_created: bool = False
    memory_bytes: int = 0
    messages_dropped: int = 0
    paging: bool = False


class ConsumerView(BaseModel):
    node: str
    queue: str
    session_id: str
    consumer_id: int
    filter: str = ""
    client_id: str = ""
    delivering: int
    messages_acknowledged: int
    credits: int


class BridgeView(BaseModel):
    """A link of the bridge engine as `node` holds it: a cluster connection's
    bridge, a network connector's link or a tree connector's link."""

    node: str
    # The cluster connection, or the network connector's name ("tree" for the tree connector).
    cluster_connection: str
    # "cluster", "network" or "tree".
    kind: str = "cluster"
    # "out": `node` dialed the link; "in": it accepted it.
    direction: str = "out"
    target: str
    endpoint: str
    state: str
    problem: str = ""
    routed: int
    forwarded: int
    batches: int
    confirmed: int
    pending: int
    retries: int
    # Network and tree links only: messages flow both ways; what the peer is to
    # `node` ("peer", "parent", "child"); demand frames; subscriptions held.
    duplex: bool = False
    role: str = ""
    demand_sent: int = 0
    demand_received: int = 0
    subscriptions: int = 0
    # Its node is down: the link as it last showed it.
    stale: bool = False


class RemoteBindingView(BaseModel):
    node: str
    remote_node: str
    queue: str
    address: str
    filter: str = ""
    consumers: int
    hops: int
    via: str


class HaGroupView(BaseModel):
    """A live and its backups (grouped by group-name, or by the live's backup connector)."""

    group_name: str
    live: str
    live_up: bool
    epoch: int
    backups: list[str]
    # The live names an in-sync backup that would take over now (replication: in sync; shared store: waiting).
    in_sync: bool
    backup_connector: str = ""


class QuorumView(BaseModel):
    """A replicating group's quorum as the HA coordinator keeps it (pluggable quorum)."""

    coordination_id: str
    # The activation sequence: the epoch of the latest activation it granted.
    epoch: int
    # The instance holding the live lock ("" = nobody serves now).
    holder: str = ""
    live_connector: str = ""
    # The replica marked in sync: the one that may take over.
    in_sync_replica: str = ""


class ClusterView(BaseModel):
    nodes: list[NodeView]
    bridges: list[BridgeView]
    ha_groups: list[HaGroupView]
    # From the HA coordinator (gateway.ha-coordinator), with why it could not be asked.
    quorums: list[QuorumView] = []
    coordinator_problem: str = ""


class MessageView(BaseModel):
    message_id: int
    state: str
    durable: bool
    priority: int
    timestamp: int
    expiration: int
    delivery_count: int
    duplicate_id: str = ""
    user_id: str = ""
    # The JMS headers and the scheduled delivery time (ms since the epoch; 0: none), as sent.
    reply_to: str = ""
    correlation_id: str = ""
    type: str = ""
    group_id: str = ""
    group_seq: int = 0
    delivery_time: int = 0
    body_size: int
    # The first bytes of the body as text (undecodable bytes replaced), and whether that is all of it.
    body_preview: str
    body_truncated: bool
    properties: dict[str, str | int | float | bool]


class BrowseView(BaseModel):
    node: str
    queue: str
    total: int
    offset: int
    messages: list[MessageView]


def _member_name(m: Member) -> str:
    return m.name or m.connector


def node_view(reply: Reply) -> NodeView:
    m = reply.member
    base = dict(name=_member_name(m), node_id=m.node_id, connector=m.connector, role=m.role, group_name=m.group_name)
    if not reply.ok:
        err = reply.error
        passive = isinstance(err, NotActiveError)
        live = err.live if passive else ""
        if passive and err.node_name and not m.name:
            base["name"] = err.node_name
        problem = (f"passive backup (live at {live})" if live else "passive backup (no live now)") if passive \
            else str(err)
        return NodeView(up=False, problem=problem, live=live, status=f"down: {problem}", **base)
    info: mgpb.NodeInfo = reply.value
    base.update(name=info.name or base["name"], node_id=info.node_id, group_name=info.group_name or m.group_name)
    return NodeView(
        up=True, ha_policy=info.ha_policy, epoch=info.epoch, version=info.version, started_at=info.started_at,
        uptime_s=max(0.0, round(time.time() - info.started_at / 1000, 1)) if info.started_at else 0,
        journal=info.journal, backup_connector=info.backup_connector, event_log_enabled=info.event_log_enabled,
        event_retention=info.event_retention, events_kept_from=info.events_kept_from,
        events_pruned=info.events_pruned, global_max_size=info.global_max_size, memory_bytes=info.memory_bytes,
        memory_alarm=info.memory_alarm, disk_alarm=info.disk_alarm, disk_alarm_reason=info.disk_alarm_reason,
        max_disk_usage=info.max_disk_usage, disk_used_percent=info.disk_used_percent,
        disk_free_bytes=info.disk_free_bytes, journal_bytes=info.journal_bytes, last_seen=time.time(), **base)


def down_words(since: float, now: float) -> str:
    """"down since 2026-11-28 06:12:03 UTC (3 min ago)" (pure)."""
    ago = max(0, int(now - since))
    span = (f"{ago} s" if ago < 60 else f"{ago // 60} min" if ago < 3600
            else f"{ago // 3600} h {ago % 3600 // 60} min")
    stamp = datetime.datetime.fromtimestamp(since, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"down since {stamp} ({span} ago)"


@dataclass
class LastKnown:
    """What one router (by connector) showed when it last answered."""

    node: NodeView | None = None
    queues: list[QueueView] = field(default_factory=list)
    bridges: list[BridgeView] = field(default_factory=list)
    seen_at: float = 0.0
    # When the gateway first found it down after it answered (0: up).
    down_since: float = 0.0

    def stale_view(self, now_down: NodeView, now: float) -> NodeView:
        """The node as it last showed, marked down with why (the raw error kept in `problem`)."""
        if not self.down_since:
            self.down_since = now
        return self.node.model_copy(update=dict(
            up=False, stale=True, problem=now_down.problem, uptime_s=0, last_seen=self.seen_at,
            down_since=self.down_since, status=down_words(self.down_since, now), memory_alarm=False,
            disk_alarm=False, connector=now_down.connector))

    def stale_queues(self) -> list[QueueView]:
        return [q.model_copy(update=dict(reachable=False, last_seen=self.seen_at)) for q in self.queues]

    def stale_bridges(self) -> list[BridgeView]:
        return [b.model_copy(update=dict(stale=True, state="unknown",
                                         problem=f"node down; last seen {b.state}")) for b in self.bridges]


def queue_view(node: str, q: mgpb.QueueInfo) -> QueueView:
    return QueueView(
        node=node, name=q.name, address=q.address, routing_type=routing_name(q.routing_type), filter=q.filter,
        durable=q.durable, temporary=q.temporary, auto_created=q.auto_created, paused=q.paused,
        last_value_key=q.last_value_key, non_destructive=q.non_destructive, exclusive=q.exclusive,
        group_rebalance=q.group_rebalance, group_rebalance_pause_dispatch=q.group_rebalance_pause_dispatch,
        group_buckets=q.group_buckets, group_first_key=q.group_first_key, group_count=q.group_count,
        message_count=q.message_count,
        waiting=max(0, q.message_count - q.delivering_count - q.scheduled_count),
        delivering=q.delivering_count, paged=q.paged_count, scheduled=q.scheduled_count,
        consumers=q.consumer_count, messages_added=q.messages_added, messages_acknowledged=q.messages_acknowledged,
        messages_delivered=q.messages_delivered, messages_expired=q.messages_expired,
        messages_dead_lettered=q.messages_killed)


def address_view(node: str, a: mgpb.AddressInfo) -> AddressView:
    return AddressView(node=node, name=a.name, routing_types=[routing_name(rt) for rt in a.routing_types],
                       queues=list(a.queues), auto_created=a.auto_created, memory_bytes=a.memory_bytes,
                       messages_dropped=a.messages_dropped, paging=a.paging)


def bridge_view(node: str, b: mgpb.BridgeInfo) -> BridgeView:
    return BridgeView(node=node, cluster_connection=b.cluster_connection, target=b.target_node_name or b.endpoint,
                      endpoint=b.endpoint, state=b.state, problem=b.problem, routed=b.routed, forwarded=b.forwarded,
                      batches=b.batches, confirmed=b.confirmed, pending=b.pending, retries=b.retries,
                      kind=b.kind or CLUSTER, direction=b.direction or DIALED, duplex=b.duplex, role=b.role,
                      demand_sent=b.demand_sent, demand_received=b.demand_received, subscriptions=b.subscriptions)


def _value(v: mpb.Value) -> str | int | float | bool:
    kind = v.WhichOneof("kind")
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else ""


def message_view(b: mgpb.BrowsedMessage) -> MessageView:
    m = b.message
    size = b.body_size or len(m.body)
    return MessageView(
        message_id=m.message_id, state=b.state, durable=m.durable, priority=m.priority, timestamp=m.timestamp,
        expiration=m.expiration, delivery_count=b.delivery_count, duplicate_id=m.duplicate_id, user_id=m.user_id,
        reply_to=m.reply_to, correlation_id=m.correlation_id, type=m.type, group_id=m.group_id,
        group_seq=m.group_seq, delivery_time=m.delivery_time,
        body_size=size, body_preview=m.body.decode("utf-8", "replace"), body_truncated=len(m.body) < size,
        properties={k: _value(v) for k, v in sorted(m.properties.items())})


def ha_groups(nodes: list[NodeView]) -> list[HaGroupView]:
    """Lives with their backups: a backup belongs to the live of its group-name, or
    (without groups) to the live whose backup connector it is, or whose store it serves."""
    lives = [n for n in nodes if n.role != "backup" and not n.live]
    backups = [n for n in nodes if n.role == "backup" or n.live]
    groups = []
    for live in lives:
        mine = [b.name for b in backups
                if (live.group_name and b.group_name == live.group_name)
                or (b.connector and b.connector == live.backup_connector)
                or (b.live and b.live == live.connector)]
        if not mine and not live.backup_connector and live.ha_policy in ("", "live-only"):
            continue
        groups.append(HaGroupView(group_name=live.group_name, live=live.name, live_up=live.up, epoch=live.epoch,
                                  backups=sorted(set(mine)), in_sync=bool(live.backup_connector),
                                  backup_connector=live.backup_connector))
    return groups


class Gatherer:
    """The views, asked of every router with one caller's credentials."""

    def __init__(self, directory: RouterDirectory) -> None:
        self.directory = directory
        # By connector: what each router showed when it last answered (module docstring).
        self._last: dict[str, LastKnown] = {}

    def _remember(self, connector: str) -> LastKnown:
        last = self._last.get(connector)
        if last is None:
            last = self._last[connector] = LastKnown()
        return last

    def _stale(self, views: list[NodeView]) -> list[LastKnown]:
        """The last state of each node of `views` that is down but answered before."""
        return [self._last[v.connector] for v in views
                if not v.up and v.stale and v.connector in self._last]

    async def nodes(self, md) -> tuple[list[NodeView], list[Reply]]:
        """Every known router, then the backups the lives name that discovery does not
        list (a passive replicating backup announces nothing until it serves)."""
        replies = await self.directory.ask_all(md, lambda a: a.node_info())
        known = {r.member.connector for r in replies}
        extra = sorted({r.value.backup_connector for r in replies if r.ok and r.value.backup_connector} - known)
        if extra:
            replies += await self.directory.ask_all(md, lambda a: a.node_info(), [Member(c) for c in extra])
        views = [node_view(r) for r in replies]
        now = time.time()
        for i, (view, reply) in enumerate(zip(views, replies)):
            if view.up or view.live:  # it answered, or named itself: show it (as down) if it goes
                m = reply.member
                self.directory.remember(Member(m.connector, name=view.name, node_id=view.node_id, role=m.role,
                                               group_name=view.group_name))
            last = self._last.get(view.connector)
            if view.up:
                last = self._remember(view.connector)
                last.node, last.seen_at, last.down_since = view, now, 0.0
            elif last is not None and last.node is not None and not view.live:
                views[i] = last.stale_view(view, now)
        for connector in set(self._last) - {r.member.connector for r in replies}:
            del self._last[connector]  # the directory forgot it (directory.REMEMBER_S)
        return views, replies

    async def _up(self, md) -> list[tuple[NodeView, Member]]:
        views, replies = await self.nodes(md)
        return [(v, r.member) for v, r in zip(views, replies) if v.up]

    async def cluster(self, md) -> ClusterView:
        views, replies = await self.nodes(md)
        up = [(v, r.member) for v, r in zip(views, replies) if v.up]
        states = await self.directory.ask_all(md, lambda a: a.cluster_state(), [m for _, m in up])
        bridges = []
        for (view, member), st in zip(up, states):
            if st.ok:
                mine = [bridge_view(view.name, b) for b in st.value.bridges]
                self._remember(member.connector).bridges = mine
                bridges.extend(mine)
        for last in self._stale(views):
            bridges.extend(last.stale_bridges())
        quorums, problem = await self.directory.quorums()
        return ClusterView(nodes=views, bridges=bridges, ha_groups=ha_groups(views), coordinator_problem=problem,
                           quorums=[QuorumView(coordination_id=q.coordination_id, epoch=q.sequence, holder=q.holder,
                                               live_connector=q.live_connector, in_sync_replica=q.in_sync_replica)
                                    for q in quorums])

    async def queues(self, md, node: str | None = None) -> list[QueueView]:
        """Every queue of every node that answers, then those of nodes down that answered
        before, as they last showed them (reachable False)."""
        views, replies = await self.nodes(md)
        up = [(v, r.member) for v, r in zip(views, replies) if v.up and (node is None or v.name == node)]
        answers = await self.directory.ask_all(md, lambda a: a.list_queues(), [m for _, m in up])
        found = []
        for (view, member), r in zip(up, answers):
            if r.ok:
                mine = [queue_view(view.name, q) for q in r.value]
                self._remember(member.connector).queues = mine
                found.extend(mine)
        for last in self._stale([v for v in views if node is None or v.name == node]):
            found.extend(last.stale_queues())
        return found

    async def last_detail(self, md, node: str) -> tuple[NodeView, list[QueueView], list[BridgeView]] | None:
        """A node down that answered before: what it last showed (None if it never answered)."""
        views, _ = await self.nodes(md)
        for view in views:
            if (view.name == node or view.connector == node) and view.stale:
                last = self._last[view.connector]
                return view, last.stale_queues(), last.stale_bridges()
        return None

    async def addresses(self, md, node: str | None = None) -> list[AddressView]:
        up = [(v, m) for v, m in await self._up(md) if node is None or v.name == node]
        replies = await self.directory.ask_all(md, lambda a: a.list_addresses(), [m for _, m in up])
        return [address_view(v.name, a) for (v, _), r in zip(up, replies) if r.ok for a in r.value]

    async def member(self, md, node: str) -> tuple[NodeView, Member]:
        """The named node, up; NodeNotFound or NodeDown otherwise."""
        views, replies = await self.nodes(md)
        for view, reply in zip(views, replies):
            if view.name == node or view.connector == node:
                if not view.up:
                    raise NodeDown(node, reply.error)
                return view, reply.member
        raise NodeNotFound(node, [v.name for v in views])


class NodeNotFound(LookupError):
    def __init__(self, node: str, known: list[str]) -> None:
        super().__init__(f"no node named {node!r} (known: {', '.join(known) or 'none'})")


class NodeDown(Exception):
    def __init__(self, node: str, error: MeshMQError | None) -> None:
        super().__init__(f"node {node!r} is not answering: {error}")
        self.error = error
