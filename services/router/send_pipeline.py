"""A message's way in: accept → route → balance → stage forwards → stage → settle.

`accept` validates a client's message and stamps what the router owns; `route`
asks `routing.decide` (pure) and carries out each step it asks for; `_balance`
spreads a message over the members of its queue groups across the cluster
(`cluster/balancing.py`), a remote member meaning a forwarded copy in a link's
store-and-forward queue (`_stage_forwards`); `stage` creates the references
and adds the rows to the journal batch; once the batch is committed, `settle`
enqueues (delivery.py) or gives everything back.

`stage_batch` is the one stager every way in uses: a client's batch
(`send`), a transaction at commit (transactions.py) and a batch forwarded
over a cluster link (cluster/link_service.py) differ only in how each message
is admitted (validated, its duplicate id claimed: `admit`) and where it goes
(`route`, which a link overrides with the route its source chose), so a new
kind of link passes its two hooks rather than copying the loop. Nothing in
it waits: it stages, and the caller settles when `StagedSend.stored` resolves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol, TypeVar

from meshmq.config.address_settings import ResolvedAddressSettings
from meshmq.errors import BrokerError, Reason
from meshmq.message_limits import message_problem
from meshmq.security.authorization import Permission
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from . import dead_letter, paging, scheduled
from .access import Access
from .addresses import Address, check_name, not_internal
from .cluster import balancing
from .cluster.bindings import RemoteBindings
from .cluster.grouping import Grouping
from .delivery import Delivery
from .duplicates import DuplicateClaim, DuplicateDetection
from .large_body import copy_body, drop_body
from .memory_use import MemoryUse
from .message import Ref, ServerMessage
from .queue import Queue, now_ms
from .routing import ANYCAST, MULTICAST, ROUTE_SEP, ROUTE_TO, RT_BIT, decide

log = logging.getLogger("meshmq.router")

ENQUEUED = jpb.ENQUEUED
# Creating an address or queue, or a redirect to the dead-letter address, is
# followed by a new decision; a configuration whose dead-letter addresses
# point at each other must not route forever.
MAX_ROUTING_STEPS = 8
_ROUTING_TYPES = frozenset((0, ANYCAST, MULTICAST))

T = TypeVar("T")
# A message admitted into a batch, with the duplicate id it claimed; None: dropped unseen (a link's repeat).
Admitted = tuple[ServerMessage, DuplicateClaim | None] | None


@dataclass(slots=True)
class StagedSend:
    """The outcome of staging one batch of sends, until its commit settles it."""

    refs: list[Ref] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)  # indexes in the batch
    rejections: list[tuple[int, str, str]] = field(default_factory=list)  # (index, reason, detail)
    claims: list[DuplicateClaim] = field(default_factory=list)
    durable: bool = False
    # Resolves with the journal's answer once the staged rows are committed (None: nothing stored).
    stored: asyncio.Future[jpb.AppendResponse] | None = None


class SendingNode(Protocol):
    """What the send pipeline asks of the node's state (broker.py's Broker)."""

    node_id: str
    persistence_enabled: bool
    event_log: bool
    addresses: dict[str, Address]
    queues: dict[str, Queue]
    duplicates: DuplicateDetection
    memory: MemoryUse
    grouping: Grouping | None
    remote: RemoteBindings

    def settings(self, address: str) -> ResolvedAddressSettings: ...

    def batch(self) -> jpb.AppendRequest: ...

    def stored(self) -> asyncio.Future[jpb.AppendResponse]: ...

    def next_message_id(self) -> int: ...

    def ensure_address(self, name: str, routing_type: int, *, auto_created: bool) -> Address: ...

    def create_queue(self, name: str, address: str, routing_type: int, filter_text: str = "", *,
                     auto_created: bool = False) -> Queue: ...

    def address_unrouted(self, addr: Address) -> None: ...


class SendPipeline:
    def __init__(self, node: SendingNode, delivery: Delivery) -> None:
        self.node = node
        self.delivery = delivery
        self._memory = node.memory

    # ------------------------------------------------------------ the stager

    def stage_batch(self, items: Sequence[T], admit: Callable[[T], Admitted],
                    route: Callable[[T, ServerMessage], list[Queue]] | None = None, access: Access | None = None,
                    staged_one: Callable[[T, ServerMessage, list[Ref]], None] | None = None) -> StagedSend:
        """Admit, route and stage each of `items` into one journal batch; one
        that `admit` or routing refuses with a BrokerError is rejected alone,
        its duplicate id given back. Routing is `route` as `access` allows,
        unless `route` (told the item and its admitted message) overrides it.
        `staged_one` is told each message's new references (a link sets their
        delivery counts). Settle the result once `stored` resolves (None:
        nothing stored, settle at once)."""
        staged = StagedSend()
        duplicates = self.node.duplicates
        for i, item in enumerate(items):
            claim = None
            try:
                admitted = admit(item)
                if admitted is None:
                    continue
                msg, claim = admitted
                queues = self.route(msg, access=access) if route is None else route(item, msg)
            except BrokerError as exc:
                if claim is not None:  # accepted but not routable: its duplicate id was not used
                    duplicates.release([claim], delete_rows=False)
                staged.rejections.append((i, exc.reason.value, exc.message))
                continue
            if claim is not None:
                duplicates.persist(claim)
                staged.claims.append(claim)
            refs = self.stage(msg, queues)
            staged.refs.extend(refs)
            staged.accepted.append(i)
            # (A forwarded copy's refs come last: stored, they make the send durable too.)
            if msg.persisted or (refs and (refs[-1].paged or refs[-1].persisted)):
                staged.durable = True
            if staged_one is not None:
                staged_one(item, msg, refs)
        if staged.durable:
            staged.stored = self.node.stored()
        return staged

    def send(self, messages: Sequence[mpb.Message], default_address: str, user: str,
             access: Access | None = None) -> StagedSend:
        """A client's batch from one producer: each message admitted (`admitter`)
        and routed as the client may (`access`)."""
        return self.stage_batch(messages, self.admitter(default_address, user, access), access=access)

    def admitter(self, default_address: str, user: str, access: Access | None
                 ) -> Callable[[mpb.Message], tuple[ServerMessage, DuplicateClaim | None]]:
        """How a client's batch admits each message: `accept` with the
        producer's defaults bound (a C partial, no Python frame of its own:
        one call per message on the hot path)."""
        return partial(self.accept, default_address, user, access)

    def accept(self, default_address: str, user: str, access: Access | None, m: mpb.Message,
               large: bool = False) -> tuple[ServerMessage, DuplicateClaim | None]:
        """Validate a client message (one `access` lets it send; a large one
        only when `large`: those come alone, large_messages.py), stamp what the
        router owns (id, time, node) and claim its duplicate id (DUPLICATE_ID
        if already seen)."""
        # Each protobuf field read is a call into upb: read each once (hot path).
        is_large = m.large
        if is_large and not large:
            raise BrokerError(Reason.INVALID_REQUEST, "a large message must be the only message of its batch")
        address = m.address
        if access is not None:
            access.check(Permission.SEND, address or default_address)
        node = self.node
        if not address:
            if not default_address:
                raise BrokerError(Reason.INVALID_REQUEST, "message has no address and its producer has none")
            m.address = address = default_address
        if address not in node.addresses:
            check_name("address", address)
        if address[0] == "$":
            not_internal("address", address)
        priority = m.priority
        if priority > 9:
            raise BrokerError(Reason.INVALID_REQUEST, f"priority {priority} is out of range 0..9")
        routing_type = m.routing_type
        if routing_type not in _ROUTING_TYPES:
            raise BrokerError(Reason.INVALID_REQUEST, f"unknown routing type {routing_type}")
        now = now_ms()
        m.message_id = message_id = node.next_message_id()
        timestamp = m.timestamp
        if not timestamp:
            m.timestamp = timestamp = now
        m.node_id = node.node_id
        if user or m.user_id:  # the authenticated user, never the client's word ("" with security off)
            m.user_id = user
        expiration = m.expiration
        if not expiration:
            delay = node.settings(address).expiry_delay
            if delay is not None and delay > 0:
                m.expiration = expiration = now + delay
        at = m.delivery_time
        if at or m.delivery_delay:
            at = scheduled.stamp(m, now)
        encoded = m.ByteSize()
        dup = m.duplicate_id
        problem = message_problem(m, encoded, dup)
        if problem is not None:
            raise BrokerError(Reason.INVALID_REQUEST, problem)
        claim = node.duplicates.claim(address, dup) if dup else None
        # (The header as read and stamped above: each field read once.)
        return ServerMessage(m, encoded + m.body_size if is_large else encoded, message_id, address, routing_type,
                             priority, m.durable, expiration, timestamp, is_large, m.group_id, at), claim

    def settle(self, staged: StagedSend, resp: jpb.AppendResponse | None) -> None:
        """After the commit (resp None: nothing was stored): enqueue, or give everything back."""
        if resp is not None and not resp.ok:
            self.node.duplicates.release(staged.claims, delete_rows=True)
            staged.rejections.extend((i, resp.reason, resp.message) for i in staged.accepted)
            self.delivery.report_lost(staged.refs, resp)
        else:
            self.delivery.enqueue(staged.refs)

    # ------------------------------------------------------------ routing

    def route(self, msg: ServerMessage, *, moved: bool = False, access: Access | None = None) -> list[Queue]:
        """The queues a message goes to: `routing.decide`, then each step the
        decision asks for (create the address or queue, redirect to the
        dead-letter address) and a new decision, until it is final. A full
        address with policy FAIL refuses the message (ADDRESS_FULL) and one
        with DROP routes it nowhere — unless it is being `moved` to a
        dead-letter or expiry address, which pages it instead (paging.py).

        The common case skips the decision: an address whose only queue has
        no filter, and a message of that queue's routing type (or none), goes
        to that queue — what `decide` answers there, without its cost.
        `access` (a client's send) must allow what routing auto-creates."""
        node = self.node
        memory = self._memory
        addr = node.addresses.get(msg.address)
        if addr is not None:
            sole = addr.sole
            # (A message without a routing type takes it only when the address has no
            # other: decide would otherwise consider, or auto-create, the other kind.)
            if sole is not None and (msg.routing_type == sole.routing_type
                                     or (not msg.routing_type and addr.routing_types == RT_BIT[sole.routing_type])):
                if addr.max_bytes < 0:
                    memory.resolve_limits(addr)
                if not (addr.refuses and not moved and memory.full(addr)):
                    return [sole]
        for _ in range(MAX_ROUTING_STEPS):
            addr = node.addresses.get(msg.address)
            settings = node.settings(msg.address)
            decision = decide(msg, addr, settings, addr.round_robin if addr is not None else 0, node.queues)
            if decision.final:
                if decision.advance_round_robin:
                    addr.round_robin += 1
                policy = settings.address_full_policy
                if policy in paging.REFUSING and decision.targets and not moved and memory.full(addr):
                    if policy == paging.FAIL:
                        why = memory.full_reason(addr, settings.max_size_bytes, settings.max_size_messages)
                        raise BrokerError(
                            Reason.ADDRESS_FULL,
                            f"address {msg.address!r} is full ({why}) and its address-full-policy is FAIL",
                        )
                    addr.messages_dropped += 1
                    return []
                if addr is not None and addr.remote and not moved:
                    return self._balance(msg, addr, decision.targets)
                if not decision.targets and addr is not None and addr.auto_created:
                    node.address_unrouted(addr)  # an address nothing takes from goes in time
                return decision.targets
            if decision.create_address:
                if addr is None and not moved and self.forward_only(msg):
                    return []
                if access is not None:
                    access.check(Permission.CREATE_ADDRESS, msg.address)
                node.ensure_address(msg.address, decision.create_address,
                                    auto_created=addr is None or addr.auto_created)
            elif decision.create_queue:
                if access is not None:
                    access.check(Permission.CREATE_DURABLE_QUEUE, msg.address)
                node.create_queue(decision.create_queue, msg.address, ANYCAST, auto_created=True)
            else:
                dead_letter.redirect_unroutable(node, msg, decision.dead_letter_address)
        log.warning("message %d to %s: no final routing after %d steps; routed nowhere", msg.id, msg.address,
                    MAX_ROUTING_STEPS)
        return []

    def _balance(self, msg: ServerMessage, addr: Address, targets: list[Queue]) -> list[Queue]:
        """Cluster load balancing after the local decision: each queue group
        (a queue name across the cluster) gets the message once, on the member
        `balancing.choose` picks; a remote member means a forwarded copy
        (`msg.forwards`, staged by `stage`). Multicast subscriptions held only
        on other nodes get their copy too."""
        groups = addr.remote
        positions = addr.cluster_round_robin
        local: list[Queue] = []
        forwards: dict = {}
        seen: set[str] = set()
        grouping = self.node.grouping  # clustered grouping (cluster/grouping.py): None unless configured
        gid = grouping.group_for(msg.proto, msg.address) if grouping is not None else ""
        for q in targets:
            seen.add(q.name)
            remote = groups.get(q.name)
            if not remote:
                local.append(q)
                continue
            if gid:
                chosen = grouping.member(msg, gid, q.name, q, remote, positions)
            else:
                chosen = _choose(msg, q.name, q, remote, positions)
            if chosen is q:
                local.append(q)
            elif chosen is not None:
                forwards.setdefault(chosen.link, []).append(chosen.key)
        if msg.routing_type != ANYCAST:
            for name, remote in groups.items():
                if name in seen or name in addr.queues or remote[0].routing_type != MULTICAST:
                    continue
                if gid:
                    chosen = grouping.member(msg, gid, name, None, remote, positions)
                else:
                    chosen = _choose(msg, name, None, remote, positions)
                if chosen is not None:
                    forwards.setdefault(chosen.link, []).append(chosen.key)
        if forwards:
            msg.forwards = forwards
        return local

    def forward_only(self, msg: ServerMessage) -> bool:
        """Route `msg` to an address this node does not have whose only queues
        are other nodes' temporary queues (a requester's reply queue on
        another node), to the members `balancing.remote_only` picks. Nothing
        is created here: the address belongs to the requester's node, and an
        address auto-created for each reply would be stored for ever — and,
        multicast by default-address-routing-type, would never reach an
        anycast temporary queue.
        An address other nodes hold ordinary queues on is auto-created here as
        for any send (a producer's first message to `orders` makes the queue
        here, as in Artemis, and balancing then decides where it goes).
        False: routing goes on as if no node had it (auto-create, dead-letter
        address, or dropped). Asked only where the address would be
        auto-created: no cost for a message to an address this node has."""
        groups = self.node.remote.for_address(msg.address)
        if not groups or not all(m.temporary for members in groups.values() for m in members):
            return False
        positions = self.node.remote.positions(msg.address)
        grouping = self.node.grouping
        gid = grouping.group_for(msg.proto, msg.address) if grouping is not None else ""

        def pick(name: str, remote):
            if gid:
                return grouping.member(msg, gid, name, None, remote, positions)
            return _choose(msg, name, None, remote, positions)

        chosen = balancing.remote_only(groups, msg.routing_type, pick, positions)
        if not chosen:
            return False
        forwards: dict = {}
        for member in chosen:
            forwards.setdefault(member.link, []).append(member.key)
        msg.forwards = forwards
        return True

    # ------------------------------------------------------------ staging

    def _stage_forwards(self, msg: ServerMessage, queues: list[Queue]) -> list[Ref]:
        """Stage `msg` for its local queues and a copy for each link it is
        forwarded over: a new message in the link's store-and-forward queue,
        stored with the message (same commit, same confirm), naming the
        bindings it goes to on the other side."""
        node = self.node
        forwards, msg.forwards = msg.forwards, None
        refs = self.stage(msg, queues) if queues else []
        for link, keys in forwards.items():
            sf = link.store_and_forward_queue()
            proto = mpb.Message()
            proto.CopyFrom(msg.proto)
            proto.message_id = node.next_message_id()
            if keys:  # none: routed on the other side as if sent there (a network topic subscription)
                proto.properties[ROUTE_TO].string_value = ROUTE_SEP.join(keys)
            copy = ServerMessage.of(proto, msg.size, msg.deliver_at)
            if msg.persisted:  # the original is in the log (redistribution, scale-down, local queues too): link them
                copy.origin = (node.node_id, msg.id)
            if msg.large:
                copy_body(node, msg, copy)
            refs.extend(self.stage(copy, [sf]))
            link.routed += 1
        if msg.large and not queues and msg.refs == 0:
            drop_body(node, msg)  # only its copies go anywhere (deleted after the copy, same batch)
        return refs

    def _paged_targets(self, msg: ServerMessage, queues: list[Queue], addr: Address) -> list[Queue]:
        """The queues that get `msg` as a paged message: all of them when the
        address is full (whatever its policy: FAIL and DROP were applied by
        route, so this is a moved message), else those with a page to follow.
        Keeps `addr.paging` true while any queue of the address has a page."""
        if msg.large or not self.node.persistence_enabled:
            return []
        if self._memory.full(addr):
            addr.paging = True
            return queues
        addr.paging = any(q.has_page for q in addr.queues.values())
        return [q for q in queues if q.has_page] if addr.paging else []

    def _paged_by_home(self, msg: ServerMessage, queues: list[Queue]) -> list[Queue]:
        """`_paged_targets` for queues of several addresses (wildcard routing):
        each address's queues page as that address's limits and pages say."""
        memory = self._memory
        homes: dict[int, tuple[Address, list[Queue]]] = {}
        for q in queues:
            homes.setdefault(id(q.home), (q.home, []))[1].append(q)
        paged: list[Queue] = []
        for home, group in homes.values():
            if home.max_bytes < 0:
                memory.resolve_limits(home)
            if (home.paging or home.memory_bytes >= home.max_bytes or home.memory_messages >= home.max_messages
                    or memory.bytes >= memory.global_limit):
                paged.extend(self._paged_targets(msg, group, home))
        return paged

    def stage(self, msg: ServerMessage, queues: list[Queue]) -> list[Ref]:
        """Create a message's references and add what must be stored to the batch.

        The hot path of every send: the common message (address not full, no
        page, one queue) allocates its references and its rows, nothing else.
        """
        if msg.forwards is not None:
            return self._stage_forwards(msg, queues)
        memory = self._memory
        node = self.node
        if len(queues) == 1:
            # The common message: one queue on its own address, nothing paged
            # (what the general path below does for it, without its loops and lists).
            q = queues[0]
            addr = q.home
            if not (addr.shares or addr.paging or addr.memory_bytes >= addr.max_bytes
                    or addr.memory_messages >= addr.max_messages or memory.bytes >= memory.global_limit):
                persisted = msg.durable and q.durable and node.persistence_enabled
                if persisted:
                    msg.persisted = msg.inline = True
                    batch = node.batch()
                    _add_message_row(batch, msg, q.id)
                    if node.event_log:
                        _enqueued_event(batch, now_ms(), msg, q.name)
                addr.messages_routed += 1
                q.incoming += 1
                msg.refs += 1
                one = msg.size + paging.MESSAGE_OVERHEAD_BYTES
                memory.bytes += one
                addr.memory_bytes += one
                addr.memory_messages += 1
                return [Ref(msg, q, 0, persisted)]
        refs: list[Ref] = []
        if not queues:
            if msg.large:
                drop_body(node, msg)  # nobody will read it
            sent_to = node.addresses.get(msg.address)
            if sent_to is not None:
                sent_to.messages_unrouted += 1
            return refs
        addr = queues[0].home  # every queue of a message is on its address (unless it `shares`: wildcards)
        if addr.shares:
            sent_to = node.addresses.get(msg.address)
            if sent_to is not None:
                sent_to.messages_routed += 1
        else:
            addr.messages_routed += 1
        paged: list[Queue] = []
        if addr.shares:
            paged = self._paged_by_home(msg, queues)
            if paged:
                queues = [q for q in queues if q not in paged]
        elif (addr.paging or addr.memory_bytes >= addr.max_bytes or addr.memory_messages >= addr.max_messages
                or memory.bytes >= memory.global_limit):
            paged = self._paged_targets(msg, queues, addr)
            if paged:
                queues = [q for q in queues if q not in paged]
        stored = 0
        first: Queue | None = None
        if msg.durable and node.persistence_enabled:
            for q in queues:
                if q.durable:
                    stored += 1
                    first = first or q
        batch = now = None
        event_log = node.event_log
        if stored or paged:
            batch = node.batch()
            now = now_ms()
        if stored:
            msg.persisted = True
            msg.inline = stored == 1
            _add_message_row(batch, msg, first.id if msg.inline else 0)
        for q in queues:
            persisted = stored > 0 and q.durable
            refs.append(Ref(msg, q, 0, persisted))
            q.incoming += 1
            if persisted:
                if not msg.inline:
                    batch.add_refs.add(queue_id=q.id, message_id=msg.id)
                if event_log:
                    _enqueued_event(batch, now, msg, q.name)
        if queues:  # in memory from now: a full address must see what is on its way in
            msg.refs += len(queues)
            one = msg.size + paging.MESSAGE_OVERHEAD_BYTES
            memory.bytes += one * len(queues)
            if addr.shares:
                for q in queues:
                    q.home.memory_bytes += one
                    q.home.memory_messages += 1
            else:
                addr.memory_bytes += one * len(queues)
                addr.memory_messages += len(queues)
        if paged:
            data = msg.proto.SerializeToString()
            for q in paged:
                batch.add_paged.add(queue_id=q.id, message_id=msg.id, size=msg.size, timestamp=msg.timestamp, data=data)
                if event_log:
                    _enqueued_event(batch, now, msg, q.name)
                ref = Ref(msg, q, 0, True)
                ref.paged = True  # a placeholder until the commit: enqueue counts it into the page
                q.incoming += 1
                q.paging_in += 1
                refs.append(ref)
        return refs


def _add_message_row(batch, msg: ServerMessage, queue_id: int) -> None:
    """The message's row in the journal batch; `queue_id` its one stored
    reference held on the row (inline), or 0 when its references have rows."""
    batch.add_messages.add(message_id=msg.id, data=msg.proto.SerializeToString(), address=msg.address,
                           size=msg.size, timestamp=msg.timestamp, large=msg.large, queue_id=queue_id)


def _choose(msg: ServerMessage, name: str, local: Queue | None, remote, positions: dict[str, int]):
    position = positions.get(name, 0)
    chosen, advanced = balancing.choose(remote[0].link.load_balancing, local, remote, msg, position)
    if advanced:
        positions[name] = position + 1
    return chosen


def _enqueued_event(batch, now: int, msg: ServerMessage, queue: str) -> None:
    """The ENQUEUED event of one stored reference; a forwarded message's names where it came from."""
    e = batch.events.add(timestamp=now, kind=ENQUEUED, address=msg.address, queue=queue, message_id=msg.id,
                         size=msg.size, message_timestamp=msg.timestamp)
    if msg.origin is not None:
        e.from_node_id, e.from_message_id = msg.origin
