"""The broker's state on one node — addresses and queues, message ids, the
journal batch — its lifecycle (start, stop, halt) and its management (create
and delete addresses and queues, pause, purge).

This object owns addresses and queues; sessions, bridges and management ask
it. A message moves through two other objects it builds over this state: the
send pipeline (send_pipeline.py: accept, route, stage, settle) and delivery
(delivery.py: enqueue, dispatch, ack, release, expire). Every change that must
survive a restart is added to the journal batch in the same synchronous step
that makes it in memory, so one group-commit request always holds a
consistent set of changes. Recovery, duplicate detection, dead-lettering and
the count of bytes in memory have their own modules.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from meshmq.activation import EpochGrant, local_grant
from meshmq.config import defaults
from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config.wildcards import DEFAULT_SYNTAX, WildcardSyntax
from meshmq.errors import BrokerError, Reason
from meshmq.journal_client import JournalAPI
from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.v1 import journal_pb2 as jpb

from . import dead_letter, paging
from .addresses import Address, check_name, compile_filter, not_internal
from .auto_delete import AutoDelete, should_delete_queue
from .cluster.bindings import RemoteBindings
from .cluster.bindings_order import OfferedVersions
from .cluster.grouping import Grouping
from .cluster.redistribution import Redistribution
from .delivery import Delivery
from .duplicates import DuplicateDetection
from .journal_batcher import JournalBatcher
from .memory_use import MemoryUse
from .message import Ref
from .message_groups import install as install_groups
from .message_groups import recovered as recovered_groups
from .queue import INTERNAL, Queue, QueueAttributes, now_ms
from .queue_kinds import install as install_kind
from .queue_kinds import resolve as resolve_kind
from .recovery import load_state
from .routing import ANYCAST, MULTICAST, RT_BIT, routing_type_names
from .send_pipeline import SendPipeline
from .temporary_queues import Owner
from .wildcard_routing import WildcardRouting

log = logging.getLogger("meshmq.router")

REMOVED = jpb.REMOVED
ID_BLOCK = 1_000_000


class Broker:
    """The node's state and management; a message's way in is `sender`
    (send_pipeline.py), its way out `delivery` (delivery.py).

    Keep a started node's instance attributes at 30 or fewer (MAX_INSTANCE_ATTRIBUTES,
    tests/unit/test_attribute_fast_path.py): CPython 3.11 reads an object's
    attributes through its fast path (shared keys, inline values) only up to
    30 keys, and the send and delivery paths read the broker's on every
    message. At 31 they measured 860 more instructions per message
    (bench/router_cpu.py under callgrind). State most nodes never set lives
    on the class as its default (`grouping`, `recovered_group_bindings`, `halt_reason`).
    """

    MAX_INSTANCE_ATTRIBUTES = 30
    # Clustered grouping (cluster/grouping.py), set by the node when a grouping-handler is configured;
    # the decisions a LOCAL handler stored, read back at start, until it takes them.
    grouping: Grouping | None = None
    recovered_group_bindings: list[tuple[str, str, str]] | tuple = ()
    # Why the node halted (set with `halted`).
    halt_reason = ""

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
        wildcard_syntax: WildcardSyntax | None = DEFAULT_SYNTAX,
        address_queue_scan_period: int = defaults.ADDRESS_QUEUE_SCAN_PERIOD,
    ) -> None:
        self.name = name
        # journal.event-log-enabled: write the event log analytics reads (two rows per message).
        self.event_log = event_log
        self.journal = journal
        self.settings = address_settings.resolve
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
        # Set when the node must stop: fenced by a newer owner of its store, or a
        # journal write failed (memory and store no longer agree; a restart
        # recovers the stored state, as Artemis stops on a critical IO error).
        self.halted = asyncio.Event()
        self.started_at = 0
        # Bytes of messages in memory against the limits (memory_use.py), and the producers waiting for room.
        self.memory = MemoryUse(self.settings, global_max_size, address_settings.uses_policy(paging.BLOCK))
        # Cluster connections (cluster/): what other nodes offered, and who
        # wants to hear when this node's bindings change (the link service).
        # wildcard-addresses: queues on news.# bound to news.europe (None: routing-enabled false).
        self.wildcards = WildcardRouting(wildcard_syntax)
        self.remote = RemoteBindings(self._remote_changed, self.wildcards)
        self._binding_watchers: set[Callable[[], None]] = set()
        # Raised at each change of this node's bindings, offered with them; and the
        # versions other nodes offered us, which forwarded requests wait for (bindings_order.py).
        self.bindings_version = 0
        self.offered_versions = OfferedVersions()
        # A message's way out (delivery.py) and in (send_pipeline.py): this object is their state.
        self.delivery = Delivery(self, lambda ref, target, kind: dead_letter.move(self, ref, target, kind))
        self.sender = SendPipeline(self, self.delivery)
        self.redistribution = Redistribution(self)
        # auto-delete-queues / -addresses and their delays (auto_delete.py).
        self.auto_delete = AutoDelete(
            self.settings, self._auto_deletable,
            lambda q: self.delete_queue(q.name, force=True),
            self._drop_address, self.addresses_get, address_queue_scan_period,
        )

    # ------------------------------------------------------------ lifecycle

    async def start(self, grant: EpochGrant = local_grant) -> None:
        """Open the journal, activate it at the epoch `grant` gives from the
        store's (meshmq/activation.py), rebuild state, reserve message ids."""
        opened = await self.journal.open(jpb.OpenRequest(node_name=self.name))
        self.node_id = opened.node_id
        self.events_kept_from = opened.events_kept_from
        self.epoch = await self._activate(grant(opened.epoch))
        self.batcher = JournalBatcher(self.journal, self.epoch, self.halt)
        state = await load_state(self.journal, self.epoch, max(1, opened.next_message_id))
        self.addresses, self.queues = state.addresses, state.queues
        self.wildcards.rebuild(self.addresses)
        self._next_queue_id = state.next_queue_id
        self._next_message_id = state.next_message_id
        if state.group_bindings:
            self.recovered_group_bindings = state.group_bindings
        for address, dup_id, position in state.duplicate_ids:
            self.duplicates.restore(address, dup_id, position)
        for q in self.queues.values():
            for ref in q.iter_waiting():
                self.memory.hold(ref)
            if not q.attributes.ordinary:
                q.replaced = self._replaced
            if q.name in state.groups_unrecorded:  # stored before the group attributes were kept
                install_groups(q, recovered_groups(q.attributes, self.settings(q.address),
                                                   q.name.startswith(INTERNAL_PREFIX)))
            else:
                install_groups(q, q.attributes)
        self.batcher.start()
        for ref in state.replaced:  # older last values found in the store: their rows go now
            self.memory.hold(ref)
            self._replaced(ref)
        # Scheduled messages once the journal takes writes (one due now may replace a last value).
        for ref in state.scheduled:
            self.memory.hold(ref)
            if not self.delivery.hold_until(ref, ref.msg.deliver_at):  # its time came while recovering
                ref.queue.add(ref)
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
        """Activate the store at the granted `epoch` (fencing): from now on it
        refuses every write stamped with an older one."""
        resp = await self.journal.activate(jpb.ActivateRequest(epoch=epoch))
        return resp.epoch

    async def stop(self) -> None:
        self.stopping = True
        self.auto_delete.close()
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
            self.wildcards.address_added(addr)
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
        attributes: QueueAttributes | None = None,
    ) -> Queue:
        """A new queue; `attributes` (queue_kinds.resolve) make it last-value,
        non-destructive or exclusive; None: the address settings' defaults
        (default-last-value-key, default-non-destructive, default-exclusive-queue),
        except for the router's own queues, which are always ordinary."""
        check_name("queue", name)
        if name in self.queues:
            raise BrokerError(Reason.QUEUE_EXISTS, f"queue {name!r} already exists")
        if routing_type not in RT_BIT:
            raise BrokerError(Reason.INVALID_REQUEST, "routing type must be ANYCAST or MULTICAST")
        selector = compile_filter(filter_text)
        addr = self.ensure_address(address or name, routing_type, auto_created=auto_created)
        durable = durable and not temporary and self.persistence_enabled
        if attributes is None:
            attributes = INTERNAL if name.startswith(INTERNAL_PREFIX) else resolve_kind(self.settings(addr.name))
        q = Queue(
            self._next_queue_id, name, addr.name, routing_type, filter_text, selector,
            durable=durable, temporary=temporary, auto_created=auto_created, owner=owner,
        )
        self._next_queue_id += 1
        self._install(q, attributes)
        addr.add_queue(q)
        self.queues[name] = q
        if addr.wildcard:
            self.wildcards.queues_changed(addr, self.addresses)
        if durable:
            self.batch().add_queues.add(
                queue_id=q.id, name=name, address=addr.name, routing_type=routing_type, filter=filter_text,
                auto_created=auto_created, last_value_key=attributes.last_value_key or "",
                non_destructive=attributes.non_destructive, exclusive=attributes.exclusive,
                group_buckets=attributes.group_buckets, group_rebalance=attributes.group_rebalance,
                group_rebalance_pause_dispatch=attributes.group_rebalance_pause_dispatch,
                group_first_key=attributes.group_first_key or "",
            )
        log.info("created queue %s on %s (%s%s%s)", name, addr.name, q.routing_type_name, ", durable" if durable else "",
                 "" if attributes.ordinary and attributes.default_groups else f", {attributes.describe()}")
        self.bindings_changed()
        self.redistribution.consider(q)  # another node may have a consumer for it already
        return q

    def _install(self, q: Queue, attributes: QueueAttributes) -> None:
        """Give `q` its kind and its message groups; a last-value queue's replaced messages leave as removed."""
        if not attributes.ordinary:
            q.replaced = self._replaced
            install_kind(q, attributes)
        install_groups(q, attributes)

    def _replaced(self, ref: Ref) -> None:
        self.delivery.release(ref, REMOVED)

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
            if addr.wildcard:
                self.wildcards.queues_changed(addr, self.addresses)
        if q.durable:
            self.batch().delete_queues.append(q.id)
        log.info("deleted queue %s (%d messages removed)", name, removed)
        if addr is not None and addr.auto_created and not addr.queues and self.settings(addr.name).auto_delete_addresses:
            self.auto_delete.address_unused(addr)
        self.bindings_changed()
        return removed

    def address_unrouted(self, addr: Address) -> None:
        """A message to auto-created `addr` was routed nowhere: it has no
        queues, and without one it goes after address-queue-scan-period
        (auto_delete.py), as Artemis's reaper would take it."""
        if addr.auto_created and not addr.queues and self.settings(addr.name).auto_delete_addresses:
            self.auto_delete.address_unrouted(addr)

    def addresses_get(self, name: str) -> Address | None:
        """The address named `name` now (None: there is none)."""
        return self.addresses.get(name)

    def _drop_address(self, addr: Address) -> None:
        """Remove `addr` (which has no queues) from memory and the store."""
        del self.addresses[addr.name]
        self.wildcards.address_removed(addr)
        self.duplicates.drop(addr.name)
        if self.persistence_enabled:
            self.batch().delete_addresses.append(addr.name)

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
            self._drop_address(addr)
        log.info("deleted address %s (%d messages removed)", name, removed)
        return removed

    def pause_queue(self, name: str, paused: bool) -> Queue:
        """Pause (no delivery until resumed) or resume a queue; not persisted."""
        q = self.get_queue(name)
        if q.paused != paused:
            q.paused = paused
            log.info("queue %s %s", name, "paused" if paused else "resumed")
            if not paused:
                self.delivery.schedule_dispatch(q)
        return q

    def purge_queue(self, name: str) -> int:
        return self._remove_waiting(self.get_queue(name))

    def _remove_waiting(self, q: Queue) -> int:
        refs = q.take_all()
        for ref in refs:
            self.delivery.release(ref, REMOVED)
        paged = q.paged_messages
        if q.has_page:
            self.batch().purge_paged.append(q.id)
            q.paged_messages = q.paged_bytes = 0
        return len(refs) + paged

    def maybe_auto_delete(self, q: Queue) -> None:
        """After the last consumer left: delete a temporary queue, or an
        auto-created one its address settings let go (auto_delete.py), at once
        or after auto-delete-queues-delay. A connection's temporary queue
        lives with its connection (client_connections.py), consumers or not."""
        if q.owner is not None and q.owner.connection is not None:
            return
        self.auto_delete.queue_unused(q, temporary=q.temporary)

    def _auto_deletable(self, q: Queue) -> bool:
        s = self.settings(q.address)
        return should_delete_queue(
            temporary=q.temporary, auto_created=q.auto_created, auto_delete_queues=s.auto_delete_queues,
            message_count=q.message_count, max_message_count=s.auto_delete_queues_message_count,
            busy=bool(q.incoming),
        )

    # ------------------------------------------------------------ sending

    # ------------------------------------------------------------ cluster

    def bindings_changed(self, local: bool = True) -> None:
        """Queues or consumers changed: links offering our bindings re-offer them.
        A change of this node's own queues or consumers (`local`) raises the
        bindings version; what other nodes offered (passed on with max-hops)
        does not: raised on every snapshot taken, the version would make each
        answer a new snapshot, and two nodes re-offer to each other for ever."""
        if local:
            self.bindings_version += 1
        for notify in self._binding_watchers:
            notify()

    def consumer_attached(self, q: Queue) -> None:
        self.auto_delete.queue_used(q)
        self.redistribution.consumer_attached(q)
        self.bindings_changed()

    def consumer_detached(self, q: Queue) -> None:
        if q.groups:  # its pins to the closed consumer go (the next message of each group pins afresh)
            q.groups.drop_closed()
        if not q.consumers:
            self.redistribution.consider(q)
        self.bindings_changed()

    def watch_bindings(self, notify: Callable[[], None]) -> Callable[[], None]:
        """Call `notify` whenever bindings change; returns the function that stops it."""
        self._binding_watchers.add(notify)
        return lambda: self._binding_watchers.discard(notify)

    def _remote_changed(self, addresses: set[str]) -> None:
        wildcards = [name for name in addresses if self.wildcards.is_wildcard(name)]
        if wildcards:  # another node's queue on news.#: demand for each of our addresses it matches
            addresses = addresses | {a for a in self.addresses if any(self.wildcards.matches(w, a) for w in wildcards)}
        for name in addresses:
            addr = self.addresses.get(name)
            if addr is not None:
                addr.set_remote(self.remote.for_address(name))
                for q in list(addr.queues.values()):
                    if q in self.redistribution.active:
                        self.redistribution.run(q)
                    else:
                        self.redistribution.consider(q)
        self.bindings_changed(local=False)
