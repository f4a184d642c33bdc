"""The broker's state on one node: addresses, queues, routing, and what
happens to a message after delivery (ack, cancel, dead-letter, expiry).

This object owns addresses and queues; sessions and management ask it.
Every change that must survive a restart is added to the journal batch in
the same synchronous step that makes it in memory, so one group-commit
request always holds a consistent set of changes.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable

from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.errors import BrokerError, Reason
from meshmq.journal_client import JournalAPI
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from .duplicates import DuplicateIdCache
from .message import Ref, ServerMessage
from .persistence import JournalBatcher
from .queue import Queue, now_ms
from .selector import SelectorError, compile_selector

log = logging.getLogger("meshmq.router")

ANYCAST, MULTICAST = mpb.ANYCAST, mpb.MULTICAST
_RT_BIT = {ANYCAST: 1, MULTICAST: 2}
_RT_BY_NAME = {"ANYCAST": ANYCAST, "MULTICAST": MULTICAST}
# Event kinds as plain ints (enum attribute lookups cost on the hot path).
ENQUEUED, DELIVERED, ACKNOWLEDGED = jpb.ENQUEUED, jpb.DELIVERED, jpb.ACKNOWLEDGED
EXPIRED, DEAD_LETTERED, REMOVED = jpb.EXPIRED, jpb.DEAD_LETTERED, jpb.REMOVED
ID_BLOCK = 1_000_000
MAX_NAME = 255
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f]")


def check_name(kind: str, name: str) -> str:
    """Reject names that cannot be stored or shown safely."""
    if not name:
        raise BrokerError(Reason.INVALID_REQUEST, f"{kind} name is empty")
    if len(name) > MAX_NAME:
        raise BrokerError(Reason.INVALID_REQUEST, f"{kind} name is longer than {MAX_NAME} characters")
    if _BAD_NAME.search(name):
        raise BrokerError(Reason.INVALID_REQUEST, f"{kind} name {name!r} contains control characters")
    return name


def compile_filter(text: str):
    """A selector for a non-empty filter string; INVALID_SELECTOR with the position otherwise."""
    if not text:
        return None
    try:
        return compile_selector(text)
    except SelectorError as exc:
        raise BrokerError(Reason.INVALID_SELECTOR, str(exc)) from None


class Address:
    __slots__ = ("name", "routing_types", "queues", "auto_created", "_rr", "_split")

    def __init__(self, name: str, routing_types: int, auto_created: bool) -> None:
        self.name = name
        self.routing_types = routing_types  # bit set: 1 anycast, 2 multicast
        self.queues: dict[str, Queue] = {}
        self.auto_created = auto_created
        self._rr = 0
        self._split: tuple[tuple[Queue, ...], tuple[Queue, ...]] | None = None

    def has(self, rt: int) -> bool:
        return bool(self.routing_types & _RT_BIT[rt])

    def add_queue(self, q: Queue) -> None:
        self.queues[q.name] = q
        self._split = None

    def remove_queue(self, name: str) -> None:
        self.queues.pop(name, None)
        self._split = None

    def split(self) -> tuple[tuple[Queue, ...], tuple[Queue, ...]]:
        """(multicast queues, anycast queues), cached until the queues change."""
        if self._split is None:
            qs = self.queues.values()
            self._split = (
                tuple(q for q in qs if q.routing_type == MULTICAST),
                tuple(q for q in qs if q.routing_type == ANYCAST),
            )
        return self._split

    def next_anycast(self, candidates: list[Queue]) -> Queue:
        """Round robin over the anycast queues that accept a message."""
        q = candidates[self._rr % len(candidates)]
        self._rr += 1
        return q


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
    ) -> None:
        self.name = name
        self.journal = journal
        self.settings = address_settings.resolve
        self.id_cache_size = id_cache_size
        self.persist_id_cache = persist_id_cache and persistence_enabled
        # persistence-enabled: false keeps everything in memory, as in Artemis.
        self.persistence_enabled = persistence_enabled
        self.addresses: dict[str, Address] = {}
        self.queues: dict[str, Queue] = {}
        self.node_id = ""
        self.epoch = 0
        self.batcher: JournalBatcher | None = None
        self._next_queue_id = 1
        self._next_message_id = 1
        self._reserved_to = 1
        self._dup_caches: dict[str, DuplicateIdCache] = {}
        self._dirty: set[Queue] = set()
        self._dispatch_scheduled = False
        # Set when the node must stop: fenced by a newer owner of its store, or a
        # journal write failed (memory and store no longer agree; a restart
        # recovers the stored state, as Artemis stops on a critical IO error).
        self.halted = asyncio.Event()
        self.halt_reason = ""
        self.started_at = 0

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Claim the journal, rebuild state from it, reserve message ids."""
        opened = await self.journal.open(jpb.OpenRequest(node_name=self.name))
        # The router activates itself: it grants itself the epoch after the
        # store's (the HA coordinator will grant it instead).
        activated = await self.journal.activate(jpb.ActivateRequest(epoch=opened.epoch + 1))
        self.node_id, self.epoch = opened.node_id, activated.epoch
        self._next_message_id = self._reserved_to = max(1, opened.next_message_id)
        self.batcher = JournalBatcher(self.journal, self.epoch, self.halt)
        recovered = await self._recover()
        self.batcher.start()
        self._reserve_ids()
        resp = await self.batcher.flush()
        if not resp.ok:
            raise RuntimeError(f"journal refused the first append: {resp.reason} {resp.message}")
        self.started_at = now_ms()
        log.info(
            "node %s (%s) recovered %d addresses, %d queues, %d messages",
            self.name,
            self.node_id,
            len(self.addresses),
            len(self.queues),
            recovered,
        )

    async def stop(self) -> None:
        if self.batcher is not None:
            await self.batcher.close()

    def halt(self, reason: str, message: str) -> None:
        """Stop the node after a journal failure; clients reconnect once it restarts."""
        if self.halted.is_set():
            return
        self.halt_reason = f"{reason}: {message}"
        what = "was fenced" if reason == Reason.FENCED.value else "cannot write its journal"
        log.critical("node %s %s (%s). Stopping: restart it to recover the stored state.", self.node_id, what, message)
        self.halted.set()

    async def _recover(self) -> int:
        messages_recovered = 0
        by_queue_id: dict[int, Queue] = {}
        pending: dict[int, ServerMessage] = {}
        async for page in self.journal.load(jpb.LoadRequest(epoch=self.epoch)):
            for a in page.addresses:
                self.addresses[a.name] = Address(a.name, a.routing_types, a.auto_created)
            for qr in page.queues:
                q = Queue(
                    qr.queue_id,
                    qr.name,
                    qr.address,
                    qr.routing_type,
                    qr.filter,
                    compile_filter(qr.filter),
                    durable=True,
                    auto_created=qr.auto_created,
                )
                addr = self.addresses.get(qr.address)
                if addr is None:
                    addr = self.addresses[qr.address] = Address(qr.address, _RT_BIT[qr.routing_type], True)
                addr.add_queue(q)
                self.queues[q.name] = q
                by_queue_id[q.id] = q
                self._next_queue_id = max(self._next_queue_id, q.id + 1)
            for d in page.duplicate_ids:
                cache = self.dup_cache(d.address)
                for dup_id, pos in cache.restore(d.duplicate_id, d.position):
                    self.batch().delete_duplicate_ids.add(address=d.address, duplicate_id=dup_id, position=pos)
            pending.clear()
            refs = [(r.message_id, r.queue_id, r.delivery_count) for r in page.refs]
            for sm in page.messages:
                proto = mpb.Message()
                proto.ParseFromString(sm.data)
                msg = ServerMessage(proto, sm.size)
                msg.persisted = True
                pending[sm.message_id] = msg
                self._next_message_id = max(self._next_message_id, sm.message_id + 1)
                if sm.queue_id:
                    msg.inline = True
                    refs.append((sm.message_id, sm.queue_id, sm.delivery_count))
            refs.sort()  # message id order = arrival order, per queue
            for message_id, queue_id, delivery_count in refs:
                q = by_queue_id.get(queue_id)
                msg = pending.get(message_id)
                if q is None or msg is None:
                    continue
                msg.refs += 1
                q.add(Ref(msg, q, delivery_count, persisted=True))
            messages_recovered += len(page.messages)
        self._reserved_to = max(self._reserved_to, self._next_message_id)
        return messages_recovered

    # ------------------------------------------------------------ journal helpers

    def batch(self) -> jpb.AppendRequest:
        return self.batcher.batch()

    def event(self, kind: int, ref: Ref, now: int = 0) -> None:
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

    def next_message_id(self) -> int:
        mid = self._next_message_id
        self._next_message_id += 1
        if self._next_message_id + ID_BLOCK // 2 >= self._reserved_to:
            self._reserve_ids()
        return mid

    def _reserve_ids(self) -> None:
        # Reserved ahead of use, so ids are never handed out twice across restarts.
        self._reserved_to = self._next_message_id + ID_BLOCK
        self.batch().reserve_message_ids_to = self._reserved_to

    def after_commit(self, refs: list[Ref]) -> None:
        """Enqueue refs now, or once the journal holds them when any is persisted."""
        if any(r.persisted for r in refs):
            fut = self.batcher.commit_future()
            fut.add_done_callback(lambda f: self.enqueue(refs) if f.result().ok else self.report_lost(refs, f.result()))
        else:
            self.enqueue(refs)

    def report_lost(self, refs: list[Ref], resp: jpb.AppendResponse) -> None:
        log.error("%d message references not stored (%s); dropped until restart", len(refs), resp.message)

    # ------------------------------------------------------------ addresses and queues

    def dup_cache(self, address: str) -> DuplicateIdCache:
        cache = self._dup_caches.get(address)
        if cache is None:
            size = self.settings(address).id_cache_size or self.id_cache_size
            cache = self._dup_caches[address] = DuplicateIdCache(address, size)
        return cache

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
            addr = self.addresses[name] = Address(name, _RT_BIT[routing_type], auto_created)
        elif not addr.has(routing_type):
            addr.routing_types |= _RT_BIT[routing_type]
        else:
            return addr
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
    ) -> Queue:
        check_name("queue", name)
        if name in self.queues:
            raise BrokerError(Reason.QUEUE_EXISTS, f"queue {name!r} already exists")
        if routing_type not in _RT_BIT:
            raise BrokerError(Reason.INVALID_REQUEST, "routing type must be ANYCAST or MULTICAST")
        selector = compile_filter(filter_text)
        addr = self.ensure_address(address or name, routing_type, auto_created=auto_created)
        durable = durable and not temporary and self.persistence_enabled
        q = Queue(
            self._next_queue_id,
            name,
            addr.name,
            routing_type,
            filter_text,
            selector,
            durable=durable,
            temporary=temporary,
            auto_created=auto_created,
        )
        self._next_queue_id += 1
        addr.add_queue(q)
        self.queues[name] = q
        if durable:
            self.batch().add_queues.add(
                queue_id=q.id,
                name=name,
                address=addr.name,
                routing_type=routing_type,
                filter=filter_text,
                auto_created=auto_created,
            )
        log.info("created queue %s on %s (%s%s)", name, addr.name, q.routing_type_name, ", durable" if durable else "")
        return q

    def delete_queue(self, name: str, *, force: bool = False) -> int:
        q = self.get_queue(name)
        if q.consumers and not force:
            raise BrokerError(Reason.QUEUE_IN_USE, f"queue {name!r} has {len(q.consumers)} consumer(s); use force")
        for c in list(q.consumers):
            c.session.close_consumer_of_deleted_queue(c)
        removed = self._remove_waiting(q)
        q.deleted = True
        del self.queues[name]
        addr = self.addresses.get(q.address)
        if addr is not None:
            addr.remove_queue(name)
        if q.durable:
            self.batch().delete_queues.append(q.id)
        if addr is not None and addr.auto_created and not addr.queues and self.settings(addr.name).auto_delete_addresses:
            del self.addresses[addr.name]
            self.batch().delete_addresses.append(addr.name)
        log.info("deleted queue %s (%d messages removed)", name, removed)
        return removed

    def purge_queue(self, name: str) -> int:
        return self._remove_waiting(self.get_queue(name))

    def _remove_waiting(self, q: Queue) -> int:
        refs = q.take_all()
        for ref in refs:
            self._release(ref, REMOVED)
        return len(refs)

    def maybe_auto_delete(self, q: Queue) -> None:
        """After the last consumer left: drop a temporary or empty auto-created queue."""
        if q.deleted or q.consumers:
            return
        if q.temporary or (
            q.auto_created and q.waiting == 0 and q.delivering == 0 and self.settings(q.address).auto_delete_queues
        ):
            self.delete_queue(q.name, force=True)

    # ------------------------------------------------------------ sending

    def accept(self, m: mpb.Message, default_address: str, user: str) -> ServerMessage:
        """Validate a client message and stamp what the router owns (id, time, node)."""
        if not m.address:
            if not default_address:
                raise BrokerError(Reason.INVALID_REQUEST, "message has no address and its producer has none")
            m.address = default_address
        if m.address not in self.addresses:
            check_name("address", m.address)
        if m.priority > 9:
            raise BrokerError(Reason.INVALID_REQUEST, f"priority {m.priority} is out of range 0..9")
        if m.routing_type not in (0, ANYCAST, MULTICAST):
            raise BrokerError(Reason.INVALID_REQUEST, f"unknown routing type {m.routing_type}")
        now = now_ms()
        m.message_id = self.next_message_id()
        if not m.timestamp:
            m.timestamp = now
        m.node_id = self.node_id
        if user:
            m.user_id = user
        if not m.expiration:
            delay = self.settings(m.address).expiry_delay
            if delay is not None and delay > 0:
                m.expiration = now + delay
        size = m.ByteSize() + (m.body_size if m.large else 0)
        return ServerMessage(m, size)

    def route(self, msg: ServerMessage) -> list[Queue]:
        """The queues a message goes to, creating its address or queue where settings allow."""
        addr = self.addresses.get(msg.address)
        rt = msg.proto.routing_type
        if addr is None or (rt and not addr.has(rt)):
            effective = rt or _RT_BY_NAME[self.settings(msg.address).default_address_routing_type]
            addr = self.ensure_address(msg.address, effective, auto_created=addr is None or addr.auto_created)
        multicast, anycast = addr.split()
        out: list[Queue] = []
        if rt != ANYCAST and multicast:
            out = [q for q in multicast if q.selector is None or q.accepts(msg)]
        if rt != MULTICAST and addr.has(ANYCAST):
            if not anycast and self.settings(addr.name).auto_create_queues:
                name = addr.name if addr.name not in self.queues else f"{addr.name}.anycast"
                self.create_queue(name, addr.name, ANYCAST, auto_created=True)
                multicast, anycast = addr.split()
            if len(anycast) == 1 and anycast[0].selector is None:
                out.append(anycast[0])
            elif anycast:
                matching = [q for q in anycast if q.accepts(msg)]
                if matching:
                    out.append(addr.next_anycast(matching))
        if not out:
            settings = self.settings(msg.address)
            if settings.send_to_dla_on_no_route and settings.dead_letter_address not in (None, msg.address):
                msg.proto.properties["_AMQ_ORIG_ADDRESS"].string_value = msg.address
                msg.proto.address = msg.address = settings.dead_letter_address
                self.ensure_dead_letter_target(msg.address)
                return self.route(msg)
        return out

    def stage(self, msg: ServerMessage, queues: Iterable[Queue]) -> list[Ref]:
        """Create a message's references and add what must be stored to the batch."""
        queues = list(queues)
        now = now_ms()
        stored = [q for q in queues if q.durable] if self.persistence_enabled and msg.durable else []
        batch = self.batch() if (stored or msg.large) else None
        if stored:
            msg.persisted = True
            msg.inline = len(stored) == 1
            batch.add_messages.add(
                message_id=msg.id,
                data=msg.proto.SerializeToString(),
                address=msg.address,
                size=msg.size,
                timestamp=msg.timestamp,
                large=msg.large,
                queue_id=stored[0].id if msg.inline else 0,
            )
        refs = []
        for q in queues:
            ref = Ref(msg, q, 0, bool(stored) and q.durable)
            msg.refs += 1
            if ref.persisted:
                if not msg.inline:
                    batch.add_refs.add(queue_id=q.id, message_id=msg.id)
                batch.events.add(
                    timestamp=now, kind=ENQUEUED, address=msg.address, queue=q.name, message_id=msg.id,
                    size=msg.size, message_timestamp=msg.timestamp,
                )
            refs.append(ref)
        if not refs and msg.large:
            batch.delete_large_messages.append(msg.id)  # its chunks were stored; nobody will read them
        return refs

    def enqueue(self, refs: Iterable[Ref]) -> None:
        for ref in refs:
            q = ref.queue
            if q.deleted:
                self._release(ref, REMOVED)
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
        for q in dirty:
            if not q.deleted:
                q.dispatch(self.expire)

    # ------------------------------------------------------------ after delivery

    def acknowledge(self, ref: Ref) -> None:
        q = ref.queue
        q.delivering -= 1
        q.messages_acknowledged += 1
        self._release(ref, ACKNOWLEDGED)

    def _release(self, ref: Ref, kind: int) -> None:
        msg = ref.msg
        msg.refs -= 1
        if ref.persisted:
            batch = self.batch()
            if msg.inline:
                # The row holds the only stored reference: it goes now, even if
                # non-durable queues still hold the message in memory.
                batch.delete_messages.append(msg.id)
                msg.persisted = False
            else:
                batch.delete_refs.add(queue_id=ref.queue.id, message_id=msg.id)
            self.event(kind, ref)
        if msg.refs == 0:
            if msg.large:
                self.batch().delete_large_messages.append(msg.id)
            elif msg.persisted:
                self.batch().delete_messages.append(msg.id)

    def cancel(self, ref: Ref) -> None:
        """A delivery came back unacknowledged (nack, consumer closed, rollback)."""
        q = ref.queue
        q.delivering -= 1
        if q.deleted:
            self._release(ref, REMOVED)
            return
        settings = self.settings(q.address)
        max_attempts = settings.max_delivery_attempts
        if max_attempts >= 0 and ref.delivery_count >= max_attempts:
            q.messages_killed += 1
            log.warning(
                "message %d on %s reached max-delivery-attempts (%d): sending to %s",
                ref.msg.id,
                q.name,
                max_attempts,
                settings.dead_letter_address or "nowhere (no dead-letter-address: dropped)",
            )
            self._move(ref, settings.dead_letter_address, DEAD_LETTERED)
            return
        if ref.persisted:
            self.batch().update_delivery_counts.add(
                queue_id=q.id, message_id=ref.msg.id, delivery_count=ref.delivery_count
            )
        delay = settings.redelivery_delay
        if delay and delay > 0:
            asyncio.get_running_loop().call_later(delay / 1000, self._redeliver, ref)
        else:
            self._redeliver(ref)

    def _redeliver(self, ref: Ref) -> None:
        q = ref.queue
        if q.deleted:
            self._release(ref, REMOVED)
            return
        q.add_back(ref)
        self.schedule_dispatch(q)

    def expire(self, ref: Ref) -> None:
        """A waiting message passed its expiration: move it to the expiry address or drop it."""
        q = ref.queue
        q.messages_expired += 1
        self._move(ref, self.settings(q.address).expiry_address, EXPIRED)

    def expire_scan(self) -> int:
        """The expiry reaper's pass over every queue (message-expiry-scan-period)."""
        now = now_ms()
        expired = 0
        for q in list(self.queues.values()):
            for ref in q.remove_expired(now):
                self.expire(ref)
                expired += 1
        return expired

    def ensure_dead_letter_target(self, address: str) -> None:
        """Dead-letter and expiry addresses that do not exist yet get an anycast queue of
        the same name, so a message moved there is kept rather than silently dropped."""
        addr = self.addresses.get(address)
        if addr is None or not addr.queues:
            if address not in self.queues:
                self.create_queue(address, address, ANYCAST, auto_created=False)

    def _move(self, ref: Ref, target: str | None, kind: int) -> None:
        src = ref.msg
        self._release(ref, kind)
        if not target:
            return
        copy = mpb.Message()
        copy.CopyFrom(src.proto)
        props = copy.properties
        props["_AMQ_ORIG_ADDRESS"].string_value = src.address
        props["_AMQ_ORIG_QUEUE"].string_value = ref.queue.name
        props["_AMQ_ORIG_MESSAGE_ID"].int_value = src.id
        if kind == EXPIRED:
            props["_AMQ_ACTUAL_EXPIRY"].int_value = now_ms()
        copy.address = target
        copy.expiration = 0
        copy.routing_type = 0
        copy.message_id = self.next_message_id()
        moved = ServerMessage(copy, copy.ByteSize() + (copy.body_size if copy.large else 0))
        self.ensure_dead_letter_target(target)
        queues = self.route(moved)
        if moved.large:
            self.batch().copy_large_messages.add(from_message_id=src.id, to_message_id=moved.id)
        self.after_commit(self.stage(moved, queues))

