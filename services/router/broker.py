"""The broker's state on one node: addresses and queues, the steps of a send
(accept, route, stage, enqueue once stored), and what happens to a message
after delivery (ack, cancel, dead-letter, expiry).

This object owns addresses and queues; sessions, bridges and management ask
it. Every change that must survive a restart is added to the journal batch in
the same synchronous step that makes it in memory, so one group-commit
request always holds a consistent set of changes. The routing choice itself
is `routing.decide` (pure); recovery, duplicate detection and dead-lettering
have their own modules.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.errors import BrokerError, Reason
from meshmq.journal_client import JournalAPI
from meshmq.message_limits import message_problem
from meshmq.security.authorization import Permission
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from . import dead_letter, paging
from .access import Access
from .addresses import Address, check_name, compile_filter, not_internal
from .cluster import balancing
from .cluster.bindings import RemoteBindings
from .cluster.bridge import ROUTE_SEP, ROUTE_TO
from .cluster.redistribution import Redistribution
from .duplicates import DuplicateClaim, DuplicateDetection
from .journal_batcher import JournalBatcher
from .message import Ref, ServerMessage
from .queue import Queue, now_ms
from .recovery import load_state
from .routing import ANYCAST, MULTICAST, RT_BIT, decide, routing_type_names
from .temporary_queues import Owner

log = logging.getLogger("meshmq.router")

# Event kinds as plain ints (enum attribute lookups cost on the hot path).
ENQUEUED, DELIVERED, ACKNOWLEDGED = jpb.ENQUEUED, jpb.DELIVERED, jpb.ACKNOWLEDGED
EXPIRED, DEAD_LETTERED, REMOVED = jpb.EXPIRED, jpb.DEAD_LETTERED, jpb.REMOVED
ID_BLOCK = 1_000_000
# Creating an address or queue, or a redirect to the dead-letter address, is
# followed by a new decision; a configuration whose dead-letter addresses
# point at each other must not route forever.
MAX_ROUTING_STEPS = 8
_ROUTING_TYPES = frozenset((0, ANYCAST, MULTICAST))

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


class Broker:
    def __init__(
        self,
        *,
        name: str,
        journal: JournalAPI,
        address_settings: AddressSettingsResolver,
        id_cache_size: int,
        persist_id_cache: bool,
        persistence_enabled: bool = True,
        global_max_size: int = -1,
        id_cache_max_bytes: int = -1,
        event_log: bool = True,
    ) -> None:
        self.name = name
        # journal.event-log-enabled: write the event log analytics reads (two rows per message).
        self.event_log = event_log
        self.journal = journal
        self.settings = address_settings.resolve
        # Some address may have address-full-policy BLOCK: sends must be looked at (producer_flow.py).
        self.blocking = address_settings.uses_policy(paging.BLOCK)
        # Blocked addresses and what to call when each has room again.
        self._waiting_for_room: dict[Address, list[Callable[[], None]]] = {}
        # persistence-enabled: false keeps everything in memory, as in Artemis.
        self.persistence_enabled = persistence_enabled
        self.addresses: dict[str, Address] = {}
        self.queues: dict[str, Queue] = {}
        self.node_id = ""
        self.epoch = 0
        # From the journal at start: every event from this instant (ms) on is kept (0: none deleted).
        self.events_kept_from = 0
        self.stopping = False  # stop() has begun: the journal confirms nothing more
        self.batcher: JournalBatcher | None = None
        self.duplicates = DuplicateDetection(
            lambda address: self.settings(address).id_cache_size, id_cache_size,
            persist_id_cache and persistence_enabled, self.batch, id_cache_max_bytes,
        )
        self._next_queue_id = 1
        self._next_message_id = 1
        self._reserved_to = 1
        self._dirty: set[Queue] = set()
        self._dispatch_scheduled = False
        # Set when the node must stop: fenced by a newer owner of its store, or a
        # journal write failed (memory and store no longer agree; a restart
        # recovers the stored state, as Artemis stops on a critical IO error).
        self.halted = asyncio.Event()
        self.halt_reason = ""
        self.started_at = 0
        # Bytes of messages every queue holds in memory (paging.py), and the node's limit.
        self.memory_bytes = 0
        self.global_max_size = global_max_size
        self.global_limit = paging.limit(global_max_size)
        # Cluster connections (cluster/): what other nodes offered, and who
        # wants to hear when this node's bindings change (the link service).
        self.remote = RemoteBindings(self._remote_changed)
        self._binding_watchers: set[Callable[[], None]] = set()
        self.redistribution = Redistribution(self)

    # ------------------------------------------------------------ lifecycle

    async def start(self, min_epoch: int = 0) -> None:
        """Open the journal, be granted an epoch, rebuild state, reserve message ids."""
        opened = await self.journal.open(jpb.OpenRequest(node_name=self.name))
        self.node_id = opened.node_id
        self.events_kept_from = opened.events_kept_from
        self.epoch = await self._activate(max(opened.epoch + 1, min_epoch))
        self.batcher = JournalBatcher(self.journal, self.epoch, self.halt)
        state = await load_state(self.journal, self.epoch, max(1, opened.next_message_id))
        self.addresses, self.queues = state.addresses, state.queues
        self._next_queue_id = state.next_queue_id
        self._next_message_id = state.next_message_id
        for address, dup_id, position in state.duplicate_ids:
            self.duplicates.restore(address, dup_id, position)
        for q in self.queues.values():
            for ref in q.iter_waiting():
                self._hold(ref)
        self.batcher.start()
        self._reserve_ids()
        resp = await self.batcher.flush()
        if not resp.ok:
            raise RuntimeError(f"journal refused the first append: {resp.reason} {resp.message}")
        self.started_at = now_ms()
        log.info(
            "node %s (%s) at epoch %d recovered %d addresses, %d queues, %d messages (and %d paged, left in the store)",
            self.name, self.node_id, self.epoch, len(self.addresses), len(self.queues), state.messages, state.paged,
        )

    async def _activate(self, epoch: int) -> int:
        """Activate the store at `epoch` (DESIGN "Fencing"): from now on it
        refuses every write stamped with an older one. The epoch is the next
        after the store's, and at least the one the node's HA policy granted
        (`min_epoch`: the shared-store lease's activation sequence)."""
        resp = await self.journal.activate(jpb.ActivateRequest(epoch=epoch))
        return resp.epoch

    async def stop(self) -> None:
        self.stopping = True
        if self.batcher is not None:
            await self.batcher.close()

    def halt(self, reason: str, message: str) -> None:
        """Stop the node after a journal failure; clients reconnect once it restarts."""
        if self.halted.is_set():
            return
        if self.stopping and reason == Reason.NOT_ACTIVE.value:  # (JournalAPI.stop_confirming)
            log.warning("node %s stops with a write it could not confirm: %s", self.node_id, message)
            return
        self.halt_reason = f"{reason}: {message}"
        what = "was fenced" if reason == Reason.FENCED.value else "cannot write its journal"
        log.critical("node %s %s (%s). Stopping: restart it to recover the stored state.", self.node_id, what, message)
        self.halted.set()

    # ------------------------------------------------------------ journal helpers

    def batch(self) -> jpb.AppendRequest:
        return self.batcher.batch()

    def stored(self) -> asyncio.Future[jpb.AppendResponse]:
        """Resolves once everything added to the journal batch so far is committed."""
        return self.batcher.commit_future()

    def event(self, kind: int, ref: Ref, now: int = 0) -> None:
        if not self.event_log:
            return
        m = ref.msg
        self.batcher.batch().events.add(
            timestamp=now or now_ms(),
            kind=kind,
            address=m.address,
            queue=ref.queue.name,
            message_id=m.id,
            size=m.size,
            delivery_count=ref.delivery_count,
            message_timestamp=m.timestamp,
        )

    @property
    def last_message_id(self) -> int:
        """The newest message id handed out so far (operations on "what is there now" stop at it)."""
        return self._next_message_id - 1

    def next_message_id(self) -> int:
        mid = self._next_message_id
        self._next_message_id += 1
        if self._next_message_id + ID_BLOCK // 2 >= self._reserved_to:
            self._reserve_ids()
        return mid

    def _reserve_ids(self) -> None:
        # Reserved ahead of use, so ids are never handed out twice across restarts.
        self._reserved_to = self._next_message_id + ID_BLOCK
        if self.persistence_enabled:
            self.batch().reserve_message_ids_to = self._reserved_to

    def enqueue_when_stored(self, refs: list[Ref]) -> None:
        """Enqueue refs now, or once the journal holds them when any is persisted."""
        if any(r.persisted for r in refs):
            self.stored().add_done_callback(
                lambda f: self.enqueue(refs) if f.result().ok else self.report_lost(refs, f.result())
            )
        else:
            self.enqueue(refs)

    def report_lost(self, refs: list[Ref], resp: jpb.AppendResponse) -> None:
        for ref in refs:
            ref.queue.incoming -= 1
            if ref.paged:
                ref.queue.paging_in -= 1
            else:
                self._free(ref)
        log.error("%d message references not stored (%s); dropped until restart", len(refs), resp.message)

    # ------------------------------------------------------------ addresses and queues

    def get_queue(self, name: str) -> Queue:
        q = self.queues.get(name)
        if q is None:
            raise BrokerError(Reason.QUEUE_NOT_FOUND, f"queue {name!r} does not exist")
        return q

    def ensure_address(self, name: str, routing_type: int, *, auto_created: bool) -> Address:
        check_name("address", name)
        addr = self.addresses.get(name)
        if addr is None:
            if auto_created and not self.settings(name).auto_create_addresses:
                raise BrokerError(
                    Reason.ADDRESS_NOT_FOUND,
                    f"address {name!r} does not exist and auto-create-addresses is false for it",
                )
            addr = self.addresses[name] = Address(name, RT_BIT[routing_type], auto_created)
            groups = self.remote.for_address(name)
            if groups:
                addr.set_remote(groups)
        elif not addr.has(routing_type):
            addr.routing_types |= RT_BIT[routing_type]
        else:
            return addr
        if self.persistence_enabled:
            self.batch().add_addresses.add(name=name, routing_types=addr.routing_types, auto_created=addr.auto_created)
        return addr

    def create_queue(
        self,
        name: str,
        address: str,
        routing_type: int,
        filter_text: str = "",
        *,
        durable: bool = True,
        temporary: bool = False,
        auto_created: bool = False,
        owner: Owner | None = None,
    ) -> Queue:
        check_name("queue", name)
        if name in self.queues:
            raise BrokerError(Reason.QUEUE_EXISTS, f"queue {name!r} already exists")
        if routing_type not in RT_BIT:
            raise BrokerError(Reason.INVALID_REQUEST, "routing type must be ANYCAST or MULTICAST")
        selector = compile_filter(filter_text)
        addr = self.ensure_address(address or name, routing_type, auto_created=auto_created)
        durable = durable and not temporary and self.persistence_enabled
        q = Queue(
            self._next_queue_id, name, addr.name, routing_type, filter_text, selector,
            durable=durable, temporary=temporary, auto_created=auto_created, owner=owner,
        )
        self._next_queue_id += 1
        addr.add_queue(q)
        self.queues[name] = q
        if durable:
            self.batch().add_queues.add(
                queue_id=q.id, name=name, address=addr.name, routing_type=routing_type, filter=filter_text,
                auto_created=auto_created,
            )
        log.info("created queue %s on %s (%s%s)", name, addr.name, q.routing_type_name, ", durable" if durable else "")
        self.bindings_changed()
        self.redistribution.consider(q)  # another node may have a consumer for it already
        return q

    def delete_queue(self, name: str, *, force: bool = False) -> int:
        q = self.get_queue(name)
        if q.consumers and not force:
            raise BrokerError(Reason.QUEUE_IN_USE, f"queue {name!r} has {len(q.consumers)} consumer(s); use force")
        q.deleting = True  # closing its last consumer must not auto-delete it (a temporary queue) under us
        for c in list(q.consumers):
            c.target.queue_deleted(c)
        removed = self._remove_waiting(q)
        q.deleted = True
        self.redistribution.forget(q)
        del self.queues[name]
        addr = self.addresses.get(q.address)
        if addr is not None:
            addr.remove_queue(name)
        if q.durable:
            self.batch().delete_queues.append(q.id)
        if addr is not None and addr.auto_created and not addr.queues and self.settings(addr.name).auto_delete_addresses:
            del self.addresses[addr.name]
            self.duplicates.drop(addr.name)
            if self.persistence_enabled:
                self.batch().delete_addresses.append(addr.name)
        log.info("deleted queue %s (%d messages removed)", name, removed)
        self.bindings_changed()
        return removed

    def create_address(self, name: str, routing_types: Iterable[int]) -> Address:
        """An address with `routing_types` (ANYCAST when none), or the existing
        one when it already has each of them (Artemis's createAddress)."""
        check_name("address", name)
        not_internal("address", name)
        wanted = 0
        for rt in routing_types or (ANYCAST,):
            if rt not in RT_BIT:
                raise BrokerError(Reason.INVALID_REQUEST, f"address {name!r}: routing type must be ANYCAST or MULTICAST")
            wanted |= RT_BIT[rt]
        addr = self.addresses.get(name)
        if addr is not None:
            if wanted & ~addr.routing_types:
                raise BrokerError(
                    Reason.ADDRESS_EXISTS,
                    f"address {name!r} already exists as {routing_type_names(addr.routing_types)}, "
                    f"not {routing_type_names(wanted)}",
                )
            return addr
        for rt in (ANYCAST, MULTICAST):
            if wanted & RT_BIT[rt]:
                addr = self.ensure_address(name, rt, auto_created=False)
        log.info("created address %s (%s)", name, routing_type_names(addr.routing_types))
        self.bindings_changed()
        return addr

    def delete_address(self, name: str, *, force: bool = False) -> int:
        """Delete an address; one with queues only with `force`, which deletes
        them (closing their consumers) first. Returns the messages removed."""
        not_internal("address", name)
        addr = self.addresses.get(name)
        if addr is None:
            raise BrokerError(Reason.ADDRESS_NOT_FOUND, f"address {name!r} does not exist")
        if addr.queues and not force:
            raise BrokerError(
                Reason.ADDRESS_IN_USE,
                f"address {name!r} has {len(addr.queues)} queue(s) ({', '.join(sorted(addr.queues))}); "
                "delete them first or use force",
            )
        removed = sum(self.delete_queue(q, force=True) for q in list(addr.queues))
        if self.addresses.get(name) is addr:  # (deleting its last queue may have auto-deleted it)
            del self.addresses[name]
            self.duplicates.drop(name)
            if self.persistence_enabled:
                self.batch().delete_addresses.append(name)
        log.info("deleted address %s (%d messages removed)", name, removed)
        return removed

    def pause_queue(self, name: str, paused: bool) -> Queue:
        """Pause (no delivery until resumed) or resume a queue; not persisted."""
        q = self.get_queue(name)
        if q.paused != paused:
            q.paused = paused
            log.info("queue %s %s", name, "paused" if paused else "resumed")
            if not paused:
                self.schedule_dispatch(q)
        return q

    def purge_queue(self, name: str) -> int:
        return self._remove_waiting(self.get_queue(name))

    def _remove_waiting(self, q: Queue) -> int:
        refs = q.take_all()
        for ref in refs:
            self.release(ref, REMOVED)
        paged = q.paged_messages
        if q.has_page:
            self.batch().purge_paged.append(q.id)
            q.paged_messages = q.paged_bytes = 0
        return len(refs) + paged

    def maybe_auto_delete(self, q: Queue) -> None:
        """After the last consumer left: drop a temporary or empty auto-created queue."""
        if q.deleted or q.deleting or q.consumers:
            return
        if q.temporary or (q.auto_created and q.holds_nothing and self.settings(q.address).auto_delete_queues):
            self.delete_queue(q.name, force=True)

    # ------------------------------------------------------------ sending

    def accept(self, m: mpb.Message, default_address: str, user: str) -> tuple[ServerMessage, DuplicateClaim | None]:
        """Validate a client message, stamp what the router owns (id, time, node)
        and claim its duplicate id (DUPLICATE_ID if already seen)."""
        # Each protobuf field read is a call into upb: read each once (hot path).
        address = m.address
        if not address:
            if not default_address:
                raise BrokerError(Reason.INVALID_REQUEST, "message has no address and its producer has none")
            m.address = address = default_address
        if address not in self.addresses:
            check_name("address", address)
        if address[0] == "$":
            not_internal("address", address)
        if m.priority > 9:
            raise BrokerError(Reason.INVALID_REQUEST, f"priority {m.priority} is out of range 0..9")
        if m.routing_type not in _ROUTING_TYPES:
            raise BrokerError(Reason.INVALID_REQUEST, f"unknown routing type {m.routing_type}")
        now = now_ms()
        m.message_id = self.next_message_id()
        if not m.timestamp:
            m.timestamp = now
        m.node_id = self.node_id
        if user or m.user_id:  # the authenticated user, never the client's word ("" with security off)
            m.user_id = user
        if not m.expiration:
            delay = self.settings(address).expiry_delay
            if delay is not None and delay > 0:
                m.expiration = now + delay
        encoded = m.ByteSize()
        problem = message_problem(m, encoded)
        if problem is not None:
            raise BrokerError(Reason.INVALID_REQUEST, problem)
        dup = m.duplicate_id
        claim = self.duplicates.claim(address, dup) if dup else None
        return ServerMessage(m, encoded + m.body_size if m.large else encoded), claim

    def send(self, messages: Sequence[mpb.Message], default_address: str, user: str,
             access: Access | None = None) -> StagedSend:
        """Accept, route and stage a batch of sends from one producer; a message
        that fails (or that `access` does not allow) is rejected alone. Settle
        the result once `stored` resolves."""
        staged = StagedSend()
        for i, m in enumerate(messages):
            claim = None
            try:
                if m.large:
                    raise BrokerError(Reason.INVALID_REQUEST, "a large message must be the only message of its batch")
                if access is not None:
                    access.check(Permission.SEND, m.address or default_address)
                msg, claim = self.accept(m, default_address, user)
                queues = self.route(msg, access=access)
            except BrokerError as exc:
                if claim is not None:  # accepted but not routable: its duplicate id was not used
                    self.duplicates.release([claim], delete_rows=False)
                staged.rejections.append((i, exc.reason.value, exc.message))
                continue
            self.stage_send(staged, i, msg, queues, claim)
        return self.seal(staged)

    def stage_send(self, staged: StagedSend, index: int, msg: ServerMessage, queues: list[Queue],
                   claim: DuplicateClaim | None) -> None:
        """Add one routed message to `staged` (and its rows to the journal batch)."""
        if claim is not None:
            self.duplicates.persist(claim)
            staged.claims.append(claim)
        refs = self.stage(msg, queues)
        staged.refs.extend(refs)
        staged.accepted.append(index)
        # (A forwarded copy's refs come last: stored, they make the send durable too.)
        if msg.persisted or (refs and (refs[-1].paged or refs[-1].persisted)):
            staged.durable = True

    def seal(self, staged: StagedSend) -> StagedSend:
        if staged.durable:
            staged.stored = self.stored()
        return staged

    def settle(self, staged: StagedSend, resp: jpb.AppendResponse | None) -> None:
        """After the commit (resp None: nothing was stored): enqueue, or give everything back."""
        if resp is not None and not resp.ok:
            self.duplicates.release(staged.claims, delete_rows=True)
            staged.rejections.extend((i, resp.reason, resp.message) for i in staged.accepted)
            self.report_lost(staged.refs, resp)
        else:
            self.enqueue(staged.refs)

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
        addr = self.addresses.get(msg.address)
        if addr is not None:
            sole = addr.sole
            # (A message without a routing type takes it only when the address has no
            # other: decide would otherwise consider, or auto-create, the other kind.)
            if sole is not None and (msg.routing_type == sole.routing_type
                                     or (not msg.routing_type and addr.routing_types == RT_BIT[sole.routing_type])):
                if addr.max_bytes < 0:
                    self._resolve_limits(addr)
                if not (addr.refuses and not moved and self.full(addr)):
                    return [sole]
        for _ in range(MAX_ROUTING_STEPS):
            addr = self.addresses.get(msg.address)
            settings = self.settings(msg.address)
            decision = decide(msg, addr, settings, addr.round_robin if addr is not None else 0, self.queues)
            if decision.final:
                if decision.advance_round_robin:
                    addr.round_robin += 1
                policy = settings.address_full_policy
                if policy in paging.REFUSING and decision.targets and not moved and self.full(addr):
                    if policy == paging.FAIL:
                        raise BrokerError(
                            Reason.ADDRESS_FULL,
                            f"address {msg.address!r} is full (max-size-bytes {settings.max_size_bytes}, "
                            f"max-size-messages {settings.max_size_messages}, global-max-size {self.global_max_size}) "
                            "and its address-full-policy is FAIL",
                        )
                    addr.messages_dropped += 1
                    return []
                if addr is not None and addr.remote and not moved:
                    return self._balance(msg, addr, decision.targets)
                return decision.targets
            if decision.create_address:
                if access is not None:
                    access.check(Permission.CREATE_ADDRESS, msg.address)
                self.ensure_address(msg.address, decision.create_address, auto_created=addr is None or addr.auto_created)
            elif decision.create_queue:
                if access is not None:
                    access.check(Permission.CREATE_DURABLE_QUEUE, msg.address)
                self.create_queue(decision.create_queue, msg.address, ANYCAST, auto_created=True)
            else:
                dead_letter.redirect_unroutable(self, msg, decision.dead_letter_address)
        log.warning("message %d to %s: no final routing after %d steps; routed nowhere", msg.id, msg.address,
                    MAX_ROUTING_STEPS)
        return []

    def full(self, addr: Address | None) -> bool:
        """Whether `addr` (None: an address not created yet) is full (paging.py);
        resolves the address's limits on first use."""
        if addr is None:
            return self.memory_bytes >= self.global_limit
        if addr.max_bytes < 0:
            self._resolve_limits(addr)
        return (
            addr.memory_bytes >= addr.max_bytes
            or addr.memory_messages >= addr.max_messages
            or self.memory_bytes >= self.global_limit
        )

    def _resolve_limits(self, addr: Address) -> None:
        settings = self.settings(addr.name)
        addr.max_bytes = paging.limit(settings.max_size_bytes)
        addr.max_messages = paging.limit(settings.max_size_messages)
        addr.blocks = settings.address_full_policy == paging.BLOCK
        addr.refuses = settings.address_full_policy in paging.REFUSING

    def blocked_address(self, messages: Sequence[mpb.Message], default_address: str) -> Address | None:
        """The first address of `messages` that is full with policy BLOCK: the
        batch must wait for room (producer_flow.py). None when it may go."""
        last = None
        for m in messages:
            name = m.address or default_address
            if name == last:
                continue
            last = name
            addr = self.addresses.get(name)
            if addr is None:
                continue
            if addr.max_bytes < 0:
                self._resolve_limits(addr)
            if addr.blocks and self.full(addr):
                return addr
        return None

    def wait_for_room(self, addr: Address, callback: Callable[[], None]) -> None:
        """Call `callback` (soon, from the event loop) once `addr` is no longer full."""
        waiters = self._waiting_for_room.get(addr)
        if waiters is None:
            waiters = self._waiting_for_room[addr] = []
            log.info(
                "blocking message production on address %s: %d bytes, %d messages in memory "
                "(max-size-bytes %d, max-size-messages %d; node %d of global-max-size %d)",
                addr.name, addr.memory_bytes, addr.memory_messages, self.settings(addr.name).max_size_bytes,
                self.settings(addr.name).max_size_messages, self.memory_bytes, self.global_max_size,
            )
        waiters.append(callback)

    def _room_made(self) -> None:
        """Memory was freed while some address blocks: wake the waiters of those with room."""
        loop = asyncio.get_running_loop()
        for addr in [a for a in self._waiting_for_room if not self.full(a)]:
            log.info("unblocking message production on address %s", addr.name)
            for callback in self._waiting_for_room.pop(addr):
                loop.call_soon(callback)

    def _paged_targets(self, msg: ServerMessage, queues: list[Queue], addr: Address) -> list[Queue]:
        """The queues that get `msg` as a paged message: all of them when the
        address is full (whatever its policy: FAIL and DROP were applied by
        route, so this is a moved message), else those with a page to follow.
        Keeps `addr.paging` true while any queue of the address has a page."""
        if msg.large or not self.persistence_enabled:
            return []
        if self.full(addr):
            addr.paging = True
            return queues
        addr.paging = any(q.has_page for q in addr.queues.values())
        return [q for q in queues if q.has_page] if addr.paging else []

    def stage(self, msg: ServerMessage, queues: list[Queue]) -> list[Ref]:
        """Create a message's references and add what must be stored to the batch.

        The hot path of every send: the common message (address not full, no
        page, one queue) allocates its references and its rows, nothing else.
        """
        if msg.forwards is not None:
            return self._stage_forwards(msg, queues)
        refs: list[Ref] = []
        if not queues:
            if msg.large:
                self.drop_large_body(msg)  # nobody will read it
            return refs
        addr = queues[0].home  # every queue of a message is on its address
        paged: list[Queue] = []
        if (addr.paging or addr.memory_bytes >= addr.max_bytes or addr.memory_messages >= addr.max_messages
                or self.memory_bytes >= self.global_limit):
            paged = self._paged_targets(msg, queues, addr)
            if paged:
                queues = [q for q in queues if q not in paged]
        stored = 0
        first: Queue | None = None
        if msg.durable and self.persistence_enabled:
            for q in queues:
                if q.durable:
                    stored += 1
                    first = first or q
        batch = now = None
        if stored or paged:
            batch = self.batch()
            now = now_ms()
        if stored:
            msg.persisted = True
            msg.inline = stored == 1
            batch.add_messages.add(
                message_id=msg.id,
                data=msg.proto.SerializeToString(),
                address=msg.address,
                size=msg.size,
                timestamp=msg.timestamp,
                large=msg.large,
                queue_id=first.id if msg.inline else 0,
            )
        for q in queues:
            persisted = stored > 0 and q.durable
            refs.append(Ref(msg, q, 0, persisted))
            q.incoming += 1
            if persisted:
                if not msg.inline:
                    batch.add_refs.add(queue_id=q.id, message_id=msg.id)
                if self.event_log:
                    _enqueued_event(batch, now, msg, q.name)
        if queues:  # in memory from now: a full address must see what is on its way in
            msg.refs += len(queues)
            held = (msg.size + paging.MESSAGE_OVERHEAD_BYTES) * len(queues)
            self.memory_bytes += held
            addr.memory_bytes += held
            addr.memory_messages += len(queues)
        if paged:
            data = msg.proto.SerializeToString()
            for q in paged:
                batch.add_paged.add(queue_id=q.id, message_id=msg.id, size=msg.size, timestamp=msg.timestamp, data=data)
                if self.event_log:
                    _enqueued_event(batch, now, msg, q.name)
                ref = Ref(msg, q, 0, True)
                ref.paged = True  # a placeholder until the commit: enqueue counts it into the page
                q.incoming += 1
                q.paging_in += 1
                refs.append(ref)
        return refs

    # ------------------------------------------------------------ cluster

    def bindings_changed(self) -> None:
        """Queues or consumers changed: links offering our bindings re-offer them."""
        for notify in self._binding_watchers:
            notify()

    def consumer_attached(self, q: Queue) -> None:
        self.redistribution.consumer_attached(q)
        self.bindings_changed()

    def consumer_detached(self, q: Queue) -> None:
        if not q.consumers:
            self.redistribution.consider(q)
        self.bindings_changed()

    def watch_bindings(self, notify: Callable[[], None]) -> Callable[[], None]:
        """Call `notify` whenever bindings change; returns the function that stops it."""
        self._binding_watchers.add(notify)
        return lambda: self._binding_watchers.discard(notify)

    def _remote_changed(self, addresses: set[str]) -> None:
        for name in addresses:
            addr = self.addresses.get(name)
            if addr is not None:
                addr.set_remote(self.remote.for_address(name))
                for q in list(addr.queues.values()):
                    if q in self.redistribution.active:
                        self.redistribution.run(q)
                    else:
                        self.redistribution.consider(q)
        self.bindings_changed()

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
        for q in targets:
            seen.add(q.name)
            remote = groups.get(q.name)
            if not remote:
                local.append(q)
                continue
            chosen = self._choose(msg, q.name, q, remote, positions)
            if chosen is q:
                local.append(q)
            elif chosen is not None:
                forwards.setdefault(chosen.link, []).append(chosen.key)
        if msg.routing_type != ANYCAST:
            for name, remote in groups.items():
                if name in seen or name in addr.queues or remote[0].routing_type != MULTICAST:
                    continue
                chosen = self._choose(msg, name, None, remote, positions)
                if chosen is not None:
                    forwards.setdefault(chosen.link, []).append(chosen.key)
        if forwards:
            msg.forwards = forwards
        return local

    @staticmethod
    def _choose(msg: ServerMessage, name: str, local: Queue | None, remote, positions: dict[str, int]):
        position = positions.get(name, 0)
        chosen, advanced = balancing.choose(remote[0].link.load_balancing, local, remote, msg, position)
        if advanced:
            positions[name] = position + 1
        return chosen

    def _stage_forwards(self, msg: ServerMessage, queues: list[Queue]) -> list[Ref]:
        """Stage `msg` for its local queues and a copy for each link it is
        forwarded over: a new message in the link's store-and-forward queue,
        stored with the message (same commit, same confirm), naming the
        bindings it goes to on the other side."""
        forwards, msg.forwards = msg.forwards, None
        refs = self.stage(msg, queues) if queues else []
        for link, keys in forwards.items():
            sf = link.store_and_forward_queue()
            proto = mpb.Message()
            proto.CopyFrom(msg.proto)
            proto.message_id = self.next_message_id()
            proto.properties[ROUTE_TO].string_value = ROUTE_SEP.join(keys)
            copy = ServerMessage(proto, msg.size)
            if msg.persisted:  # the original is in the log (redistribution, scale-down, local queues too): link them
                copy.origin = (self.node_id, msg.id)
            if msg.large:
                self.copy_large_body(msg, copy)
            refs.extend(self.stage(copy, [sf]))
            link.routed += 1
        if msg.large and not queues and msg.refs == 0:
            self.drop_large_body(msg)  # only its copies go anywhere (deleted after the copy, same batch)
        return refs

    def enqueue(self, refs: Iterable[Ref]) -> None:
        """Staged references join their queues (their commit, if any, is done)."""
        for ref in refs:
            q = ref.queue
            q.incoming -= 1
            if ref.paged:  # stored in the page, not held: the queue reads it back in its turn
                q.paging_in -= 1
                if not q.deleted:
                    q.paged_messages += 1
                    q.paged_bytes += ref.msg.size
                    self.schedule_dispatch(q)
                continue
            if q.deleted:
                self.release(ref, REMOVED)
                continue
            q.add(ref)
            self.schedule_dispatch(q)

    def schedule_dispatch(self, q: Queue) -> None:
        self._dirty.add(q)
        if not self._dispatch_scheduled:
            self._dispatch_scheduled = True
            asyncio.get_running_loop().call_soon(self._run_dispatch)

    def _run_dispatch(self) -> None:
        self._dispatch_scheduled = False
        dirty, self._dirty = self._dirty, set()
        active = self.redistribution.active
        for q in dirty:
            if not (q.deleted or q.paused):  # a paused queue delivers nothing (not even to other nodes)
                if active and q in active:
                    self.redistribution.run_new(q)
                parked = q.dispatch(self.expire)
                if parked:  # messages none of its consumers takes
                    self.redistribution.parked(q, parked)
                if (q.consumers or q in active) and not q.depaging and paging.should_read_page(
                    q.waiting, q.paged_messages, q.paged_bytes, self.settings(q.address).page_size_bytes
                ):
                    self.page_in(q)

    def page_in(self, q: Queue) -> asyncio.Task:
        """Read `q`'s next page into memory (read_page), or join the read under way."""
        if not q.depaging:
            q.depaging = True
            q.page_reader = asyncio.get_running_loop().create_task(self.read_page(q))
        return q.page_reader

    async def read_page(self, q: Queue) -> None:
        """Bring the next page of `q`'s paged messages into memory, in order."""
        try:
            resp = await self.journal.read_page(
                jpb.ReadPageRequest(
                    queue_id=q.id, after_message_id=q.page_cursor, max_messages=paging.MAX_PAGE_MESSAGES,
                    max_bytes=self.settings(q.address).page_size_bytes,
                )
            )
            if q.deleted:
                return
            if not resp.messages:
                # Counted but gone from the store (purged while on their way in).
                log.info("queue %s: %d paged messages counted but none stored; count reset", q.name, q.paged_messages)
                q.paged_messages = q.paged_bytes = 0
                return
            for pm in resp.messages:
                proto = mpb.Message()
                proto.ParseFromString(pm.data)
                msg = ServerMessage(proto, pm.size)
                msg.refs = 1
                ref = Ref(msg, q, pm.delivery_count, True)
                ref.paged = True
                q.page_cursor = pm.message_id
                q.paged_messages -= 1
                q.paged_bytes -= pm.size
                q.add(ref)
                self._hold(ref)
            self.schedule_dispatch(q)
        except Exception:
            log.exception("queue %s: reading its next page failed; retried at the next dispatch", q.name)
        finally:
            q.depaging = False

    def _hold(self, ref: Ref) -> None:
        """A queue's copy of a message is now in memory (paging.py counts these)."""
        size = ref.msg.size + paging.MESSAGE_OVERHEAD_BYTES
        self.memory_bytes += size
        addr = ref.queue.home
        if addr is not None:
            addr.memory_bytes += size
            addr.memory_messages += 1

    def _free(self, ref: Ref) -> None:
        size = ref.msg.size + paging.MESSAGE_OVERHEAD_BYTES
        self.memory_bytes -= size
        addr = ref.queue.home
        if addr is not None:
            addr.memory_bytes -= size
            addr.memory_messages -= 1
        if self._waiting_for_room:
            self._room_made()

    # ------------------------------------------------------------ after delivery

    def acknowledge(self, ref: Ref) -> None:
        q = ref.queue
        q.delivering -= 1
        q.messages_acknowledged += 1
        self.release(ref, ACKNOWLEDGED)

    def release(self, ref: Ref, kind: int) -> None:
        """A queue lets go of a reference (event `kind`); the message goes with its last one."""
        self._free(ref)
        msg = ref.msg
        msg.refs -= 1
        if ref.persisted:
            q = ref.queue
            batch = self.batch()
            if ref.paged:  # its own row in the page, for this queue only
                batch.delete_paged.add(queue_id=q.id, message_id=msg.id)
            elif msg.inline:
                # The row holds the only stored reference: it goes now, even if
                # non-durable queues still hold the message in memory.
                batch.delete_messages.append(msg.id)
                msg.persisted = False
            else:
                batch.delete_refs.add(queue_id=q.id, message_id=msg.id)
            if self.event_log:
                batch.events.add(
                    timestamp=now_ms(), kind=kind, address=msg.address, queue=q.name, message_id=msg.id,
                    size=msg.size, delivery_count=ref.delivery_count, message_timestamp=msg.timestamp,
                )
            if ref.paged:
                return
        if msg.refs == 0:
            if msg.large:
                self.drop_large_body(msg)
            elif msg.persisted:
                self.batch().delete_messages.append(msg.id)

    def drop_large_body(self, msg: ServerMessage) -> None:
        """A large message's body is no longer needed: its stored chunks go
        (in memory, when persistence is disabled, they simply go with it)."""
        if msg.chunks is None and self.persistence_enabled:
            self.batch().delete_large_messages.append(msg.id)
        msg.chunks = None

    def copy_large_body(self, src: ServerMessage, copy: ServerMessage) -> None:
        """`copy` (a dead-lettered or expired message) gets `src`'s body."""
        if src.chunks is not None:
            copy.chunks = src.chunks  # never changed once received: shared
        else:
            self.batch().copy_large_messages.add(from_message_id=src.id, to_message_id=copy.id)

    def cancel(self, ref: Ref) -> None:
        """A delivery came back unacknowledged (nack, consumer closed, rollback)."""
        q = ref.queue
        q.delivering -= 1
        if q.deleted:
            self.release(ref, REMOVED)
            return
        settings = self.settings(q.address)
        if self._exhausted(ref):
            q.messages_killed += 1
            log.warning(
                "message %d on %s reached max-delivery-attempts (%d): sending to %s",
                ref.msg.id, q.name, settings.max_delivery_attempts,
                settings.dead_letter_address or "nowhere (no dead-letter-address: dropped)",
            )
            dead_letter.move(self, ref, settings.dead_letter_address, DEAD_LETTERED)
            return
        if ref.persisted:
            counts = self.batch().update_paged_delivery_counts if ref.paged else self.batch().update_delivery_counts
            counts.add(queue_id=q.id, message_id=ref.msg.id, delivery_count=ref.delivery_count)
        delay = settings.redelivery_delay
        if delay and delay > 0:
            q.delayed[ref] = asyncio.get_running_loop().call_later(delay / 1000, self._redeliver, ref)
        else:
            self._redeliver(ref)

    def _exhausted(self, ref: Ref) -> bool:
        """A returned delivery has reached its address's max-delivery-attempts (-1: never)."""
        max_attempts = self.settings(ref.queue.address).max_delivery_attempts
        return 0 <= max_attempts <= ref.delivery_count

    def cancel_in_order(self, refs: list[Ref]) -> None:
        """Cancel several deliveries keeping their original order: those that
        reached max-delivery-attempts go to the dead-letter address oldest first
        (each is appended there), then the others go back to the head of their
        queues newest first (each goes in front of the last)."""
        ordered = sorted(refs, key=lambda r: r.msg.id)
        back = []
        for ref in ordered:
            if not ref.queue.deleted and self._exhausted(ref):
                self.cancel(ref)
            else:
                back.append(ref)
        for ref in reversed(back):
            self.cancel(ref)

    def _redeliver(self, ref: Ref) -> None:
        q = ref.queue
        q.delayed.pop(ref, None)
        if q.deleted:
            self.release(ref, REMOVED)
            return
        q.add_back(ref)
        self.schedule_dispatch(q)

    def expire(self, ref: Ref) -> None:
        """A waiting message passed its expiration: move it to the expiry address or drop it."""
        q = ref.queue
        q.messages_expired += 1
        dead_letter.move(self, ref, self.settings(q.address).expiry_address, EXPIRED)

    def expire_scan(self) -> int:
        """The expiry reaper's pass over every queue (message-expiry-scan-period)."""
        now = now_ms()
        expired = 0
        for q in list(self.queues.values()):
            for ref in q.remove_expired(now):
                self.expire(ref)
                expired += 1
        return expired


def _enqueued_event(batch, now: int, msg: ServerMessage, queue: str) -> None:
    """The ENQUEUED event of one stored reference; a forwarded message's names where it came from."""
    e = batch.events.add(timestamp=now, kind=ENQUEUED, address=msg.address, queue=queue, message_id=msg.id,
                         size=msg.size, message_timestamp=msg.timestamp)
    if msg.origin is not None:
        e.from_node_id, e.from_message_id = msg.origin
