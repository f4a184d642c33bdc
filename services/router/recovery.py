"""Rebuilding a node's state from its journal at start.

`load_state` reads every page the journal streams (addresses, queues,
duplicate ids, messages with their queue references) and returns the state
as router objects; the broker installs it before it accepts any client. Queue
references are added in message-id order, which is arrival order, so every
queue comes back in the order it had. A scheduled message whose time has
not come is set aside (`scheduled`) to wait for it again: the time is a
property of the stored message, so it is the original one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb
from meshmq.journal_client import JournalAPI

from .addresses import Address, compile_filter
from .message import Ref, ServerMessage
from .queue import Queue, QueueAttributes, now_ms
from .queue_kinds import install
from .routing import RT_BIT
from .scheduled import held_by


@dataclass
class RecoveredState:
    addresses: dict[str, Address] = field(default_factory=dict)
    queues: dict[str, Queue] = field(default_factory=dict)
    # (address, duplicate id, position), oldest first.
    duplicate_ids: list[tuple[str, str, int]] = field(default_factory=list)
    # A LOCAL grouping handler's stored decisions: (handler, full group id, node id).
    group_bindings: list[tuple[str, str, str]] = field(default_factory=list)
    # Queues stored before their message-group attributes were kept (journal
    # schema version 6): the broker gives them the address settings' defaults.
    groups_unrecorded: set[str] = field(default_factory=set)
    next_queue_id: int = 1
    next_message_id: int = 1
    messages: int = 0
    paged: int = 0
    # Last-value queues' older messages of a key, replaced as the stored ones
    # were added back in order: the broker releases them once it can write.
    replaced: list[Ref] = field(default_factory=list)
    # References of scheduled messages not yet due, in no queue yet: the broker
    # holds them until their time (Delivery.hold_until).
    scheduled: list[Ref] = field(default_factory=list)


async def load_state(journal: JournalAPI, epoch: int, next_message_id: int) -> RecoveredState:
    state = RecoveredState(next_message_id=next_message_id)
    now = now_ms()
    by_queue_id: dict[int, Queue] = {}
    pending: dict[int, ServerMessage] = {}
    paged: list[jpb.PagedQueue] = []
    async for page in journal.load(jpb.LoadRequest(epoch=epoch)):
        paged.extend(page.paged)
        for a in page.addresses:
            state.addresses[a.name] = Address(a.name, a.routing_types, a.auto_created)
        for qr in page.queues:
            q = Queue(
                qr.queue_id, qr.name, qr.address, qr.routing_type, qr.filter, compile_filter(qr.filter),
                durable=True, auto_created=qr.auto_created,
            )
            if qr.HasField("group_buckets"):
                attributes = QueueAttributes(
                    qr.last_value_key or None, qr.non_destructive, qr.exclusive,
                    group_rebalance=qr.group_rebalance, group_rebalance_pause_dispatch=qr.group_rebalance_pause_dispatch,
                    group_buckets=qr.group_buckets, group_first_key=qr.group_first_key or None,
                )
            else:
                attributes = QueueAttributes(qr.last_value_key or None, qr.non_destructive, qr.exclusive)
                state.groups_unrecorded.add(qr.name)
            q.attributes = attributes
            if not attributes.ordinary:
                q.replaced = state.replaced.append
                install(q, attributes)
            addr = state.addresses.get(qr.address)
            if addr is None:
                addr = state.addresses[qr.address] = Address(qr.address, RT_BIT[qr.routing_type], True)
            addr.add_queue(q)
            state.queues[q.name] = q
            by_queue_id[q.id] = q
            state.next_queue_id = max(state.next_queue_id, q.id + 1)
        state.duplicate_ids.extend((d.address, d.duplicate_id, d.position) for d in page.duplicate_ids)
        state.group_bindings.extend((b.handler, b.group_id, b.node_id) for b in page.group_bindings)
        pending.clear()
        refs = [(r.message_id, r.queue_id, r.delivery_count) for r in page.refs]
        for sm in page.messages:
            proto = mpb.Message()
            proto.ParseFromString(sm.data)
            msg = ServerMessage.of(proto, sm.size)
            msg.persisted = True
            pending[sm.message_id] = msg
            state.next_message_id = max(state.next_message_id, sm.message_id + 1)
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
            ref = Ref(msg, q, delivery_count, persisted=True)
            if msg.deliver_at and msg.deliver_at > now and held_by(q.name):
                state.scheduled.append(ref)
            else:
                q.add(ref)
        state.messages += len(page.messages)
    for pq in paged:  # not loaded: each queue reads its page back from the start as it drains
        q = by_queue_id.get(pq.queue_id)
        if q is not None:
            q.paged_messages, q.paged_bytes = pq.messages, pq.bytes
            state.paged += pq.messages
    return state
