"""A stored message's way out: enqueue → dispatch → ack, release or expire.

Once a send is committed its references join their queues (`enqueue`); the
queues that changed in one event-loop turn dispatch to their consumers once,
at the end of it (`schedule_dispatch`), reading a page back into memory when
the queue runs low (`page_in`). A delivery then ends one of three ways: the
consumer acknowledges it, it comes back (`cancel`: redelivered, or
dead-lettered past max-delivery-attempts), or it expires. Every change that
must survive a restart goes into the journal batch in the same synchronous
step that makes it in memory, as on the send side (send_pipeline.py).

The node's state (queues, settings, the journal batch) is the broker's
(broker.py), which builds this; `DeliveryNode` is what delivery asks of it.
Moving a message to a dead-letter or expiry address sends it again, so that
step is handed in (`dead_letter`: dead_letter.move, wired by the broker).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from meshmq.config.address_settings import ResolvedAddressSettings
from meshmq.journal_client import JournalAPI
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from . import paging
from .large_body import drop_body
from .memory_use import MemoryUse
from .message import Ref, ServerMessage
from .queue import Queue, now_ms
from .redelivery import redelivery_delay
from .scheduled import held_by

log = logging.getLogger("meshmq.router")

ACKNOWLEDGED, EXPIRED = jpb.ACKNOWLEDGED, jpb.EXPIRED
DEAD_LETTERED, REMOVED = jpb.DEAD_LETTERED, jpb.REMOVED

# Move a reference to `target` (none: drop it) with event `kind` (dead_letter.move).
DeadLetter = Callable[[Ref, "str | None", int], None]


class Redistributing(Protocol):
    """What the dispatch tells redistribution (cluster/redistribution.py)."""

    active: set[Queue]

    def run_new(self, q: Queue) -> None: ...

    def parked(self, q: Queue, refs: list[Ref]) -> None: ...


class DeliveryNode(Protocol):
    """What delivery asks of the node's state (broker.py's Broker)."""

    journal: JournalAPI
    event_log: bool
    persistence_enabled: bool
    queues: dict[str, Queue]
    memory: MemoryUse
    redistribution: Redistributing

    def settings(self, address: str) -> ResolvedAddressSettings: ...

    def batch(self) -> jpb.AppendRequest: ...

    def stored(self) -> asyncio.Future[jpb.AppendResponse]: ...


class Delivery:
    def __init__(self, node: DeliveryNode, dead_letter: DeadLetter) -> None:
        self.node = node
        self._dead_letter = dead_letter
        self._dirty: set[Queue] = set()
        self._dispatch_scheduled = False

    # ------------------------------------------------------------ into the queues

    def enqueue_when_stored(self, refs: list[Ref]) -> None:
        """Enqueue refs now, or once the journal holds them when any is persisted."""
        if any(r.persisted for r in refs):
            self.node.stored().add_done_callback(
                lambda f: self.enqueue(refs) if f.result().ok else self.report_lost(refs, f.result())
            )
        else:
            self.enqueue(refs)

    def report_lost(self, refs: list[Ref], resp: jpb.AppendResponse) -> None:
        memory = self.node.memory
        for ref in refs:
            ref.queue.incoming -= 1
            if ref.paged:
                ref.queue.paging_in -= 1
            else:
                memory.free(ref)
        log.error("%d message references not stored (%s); dropped until restart", len(refs), resp.message)

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
            at = ref.msg.deliver_at
            if at and self.hold_until(ref, at):
                continue
            q.add(ref)
            self.schedule_dispatch(q)

    def hold_until(self, ref: Ref, at: int) -> bool:
        """A scheduled message (scheduled.py) joins its queue's delayed
        references until `at`, then the head of the queue; False (nothing
        done) when its time has come or its queue does not hold it back."""
        delay = at - now_ms()
        if delay <= 0 or not held_by(ref.queue.name):
            return False
        ref.queue.add_scheduled(ref, asyncio.get_running_loop().call_later(delay / 1000, self._redeliver, ref))
        return True

    # ------------------------------------------------------------ dispatch

    def schedule_dispatch(self, q: Queue) -> None:
        self._dirty.add(q)
        if not self._dispatch_scheduled:
            self._dispatch_scheduled = True
            asyncio.get_running_loop().call_soon(self._run_dispatch)

    def _run_dispatch(self) -> None:
        self._dispatch_scheduled = False
        dirty, self._dirty = self._dirty, set()
        node = self.node
        redistribution = node.redistribution
        active = redistribution.active
        for q in dirty:
            if not (q.deleted or q.paused):  # a paused queue delivers nothing (not even to other nodes)
                if active and q in active:
                    redistribution.run_new(q)
                parked = q.dispatch(self.expire)
                if parked:  # messages none of its consumers takes
                    redistribution.parked(q, parked)
                if (q.consumers or q in active) and not q.depaging and paging.should_read_page(
                    q.waiting, q.paged_messages, q.paged_bytes, node.settings(q.address).page_size_bytes
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
        node = self.node
        try:
            resp = await node.journal.read_page(
                jpb.ReadPageRequest(
                    queue_id=q.id, after_message_id=q.page_cursor, max_messages=paging.MAX_PAGE_MESSAGES,
                    max_bytes=node.settings(q.address).page_size_bytes,
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
                msg = ServerMessage.of(proto, pm.size)
                msg.refs = 1
                ref = Ref(msg, q, pm.delivery_count, True)
                ref.paged = True
                q.page_cursor = pm.message_id
                q.paged_messages -= 1
                q.paged_bytes -= pm.size
                node.memory.hold(ref)
                if not (msg.deliver_at and self.hold_until(ref, msg.deliver_at)):
                    q.add(ref)
            self.schedule_dispatch(q)
        except Exception:
            log.exception("queue %s: reading its next page failed; retried at the next dispatch", q.name)
        finally:
            q.depaging = False

    # ------------------------------------------------------------ after delivery

    def acknowledge(self, ref: Ref) -> None:
        q = ref.queue
        if q.non_destructive:  # a consumer's copy: the message stays (queue_kinds.py)
            q.messages_acknowledged += 1
            return
        q.delivering -= 1
        q.messages_acknowledged += 1
        self.release(ref, ACKNOWLEDGED)

    def release(self, ref: Ref, kind: int) -> None:
        """A queue lets go of a reference (event `kind`); the message goes with its last one."""
        node = self.node
        node.memory.free(ref)
        msg = ref.msg
        msg.refs -= 1
        if ref.persisted:
            q = ref.queue
            batch = node.batch()
            if ref.paged:  # its own row in the page, for this queue only
                batch.delete_paged.add(queue_id=q.id, message_id=msg.id)
            elif msg.inline:
                # The row holds the only stored reference: it goes now, even if
                # non-durable queues still hold the message in memory.
                batch.delete_messages.append(msg.id)
                msg.persisted = False
            else:
                batch.delete_refs.add(queue_id=q.id, message_id=msg.id)
            if node.event_log:
                batch.events.add(
                    timestamp=now_ms(), kind=kind, address=msg.address, queue=q.name, message_id=msg.id,
                    size=msg.size, delivery_count=ref.delivery_count, message_timestamp=msg.timestamp,
                )
            if ref.paged:
                return
        if msg.refs == 0:
            if msg.large:
                drop_body(node, msg)
            elif msg.persisted:
                node.batch().delete_messages.append(msg.id)

    def cancel(self, ref: Ref) -> None:
        """A delivery came back unacknowledged (nack, consumer closed, rollback)."""
        q = ref.queue
        if q.non_destructive:  # a consumer's copy: the message never left (queue_kinds.py)
            return
        q.delivering -= 1
        if q.deleted:
            self.release(ref, REMOVED)
            return
        settings = self.node.settings(q.address)
        if self._exhausted(ref):
            q.messages_killed += 1
            log.warning(
                "message %d on %s reached max-delivery-attempts (%d): sending to %s",
                ref.msg.id, q.name, settings.max_delivery_attempts,
                settings.dead_letter_address or "nowhere (no dead-letter-address: dropped)",
            )
            self._dead_letter(ref, settings.dead_letter_address, DEAD_LETTERED)
            return
        q.messages_redelivered += 1
        if ref.persisted:
            batch = self.node.batch()
            counts = batch.update_paged_delivery_counts if ref.paged else batch.update_delivery_counts
            counts.add(queue_id=q.id, message_id=ref.msg.id, delivery_count=ref.delivery_count)
        delay = redelivery_delay(settings, ref.delivery_count) if settings.redelivery_delay > 0 else 0
        if delay > 0:
            q.delayed[ref] = asyncio.get_running_loop().call_later(delay / 1000, self._redeliver, ref)
        else:
            self._redeliver(ref)

    def settled(self, q: Queue) -> None:
        """Deliveries of `q` ended (acknowledged or returned) with no dispatch
        to follow: a queue whose dispatch group-rebalance-pause-dispatch holds
        resumes as soon as none is in flight (message_groups.py), not at
        whatever event comes next. Called once per batch of acks or returns
        (a session's Acknowledge, a transaction), never per message."""
        groups = q.groups
        if groups is not None and groups.paused and not q.delivering and not q.deleted:
            self.schedule_dispatch(q)

    def _exhausted(self, ref: Ref) -> bool:
        """A returned delivery has reached its address's max-delivery-attempts (-1: never)."""
        max_attempts = self.node.settings(ref.queue.address).max_delivery_attempts
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
        for q in {ref.queue for ref in refs}:  # those dead-lettered or delayed schedule no dispatch
            self.settled(q)

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
        self._dead_letter(ref, self.node.settings(q.address).expiry_address, EXPIRED)

    def expire_scan(self) -> int:
        """The expiry reaper's pass over every queue (message-expiry-scan-period)."""
        now = now_ms()
        expired = 0
        for q in list(self.node.queues.values()):
            for ref in q.remove_expired(now):
                self.expire(ref)
                expired += 1
        return expired
