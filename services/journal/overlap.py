"""Which group-commit transactions may be in flight together.

On PostgreSQL a transaction's commit waits for its WAL flush, and the writer
used to wait for that before starting the next one: the appends arriving
meanwhile waited a whole commit, then one more for their own. Two
transactions on two connections overlap that wait (PostgreSQL flushes both
commit records together when they arrive together) — but only when neither
can see the other's rows. In READ COMMITTED, a delete or update in the later
transaction of a row the earlier one inserted and has not committed finds
nothing: the acknowledgement would be lost and the message come back at
recovery. So two transactions overlap only when they mention disjoint
messages and duplicate ids, and hold nothing but rows (no definitions, no
large messages, no paged purge, no id reservation, no event pruning): anything else waits for
the transactions before it, as it always did.

Paging adds one more rule: a router reads a queue's page as "the stored
messages after the last id it read", so a later transaction's paged messages
must not become readable before an earlier one's for the same queue (the
read would step over the earlier ones). Two transactions that page messages
into the same queue do not overlap.

In the steady state the two are disjoint by construction: a router delivers
a durable message only after its commit is answered (SendPipeline.settle), so an
acknowledgement never names a message whose insert is still in flight.

A pure decider over plain protobuf data; the writer process does the I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from meshmq.v1 import journal_pb2 as jpb


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a transaction touches that another one in flight must not."""

    message_ids: frozenset[int]
    duplicate_ids: frozenset[tuple[str, str]]
    paged_queues: frozenset[int]


def only_rows(r: jpb.AppendRequest) -> bool:
    """True when a request holds nothing but message rows, references, delivery
    counts, paged rows, duplicate ids and events: the journal applies such
    requests together in one set of multi-row statements (store._apply_rows)."""
    return not (r.reserve_message_ids_to or r.add_addresses or r.add_queues or r.add_large_chunks
                or r.copy_large_messages or r.delete_large_messages or r.delete_queues
                or r.delete_addresses or r.HasField("prune_events") or r.add_group_bindings
                or r.delete_group_bindings)


def footprint(batch: list[jpb.AppendRequest]) -> Footprint | None:
    """The messages and duplicate ids `batch` mentions; None when it holds
    anything else, which must not overlap any other transaction."""
    ids: set[int] = set()
    dups: set[tuple[str, str]] = set()
    paged: set[int] = set()
    for r in batch:
        if not only_rows(r) or r.purge_paged:  # a paged purge groups with rows, but overlaps nothing
            return None
        ids.update(m.message_id for m in r.add_messages)
        ids.update(p.message_id for p in r.add_paged)
        paged.update(p.queue_id for p in r.add_paged)
        ids.update(r.delete_messages)
        for refs in (r.add_refs, r.delete_refs, r.update_delivery_counts, r.delete_paged,
                     r.update_paged_delivery_counts):
            ids.update(f.message_id for f in refs)
        ids.update(e.message_id for e in r.events if e.message_id)
        for d in (*r.add_duplicate_ids, *r.delete_duplicate_ids):
            dups.add((d.address, d.duplicate_id))
    return Footprint(frozenset(ids), frozenset(dups), frozenset(paged))


def may_overlap(earlier: Footprint | None, later: Footprint | None) -> bool:
    """True when `later` may start while `earlier` is still committing."""
    if earlier is None or later is None:
        return False
    return (earlier.message_ids.isdisjoint(later.message_ids)
            and earlier.duplicate_ids.isdisjoint(later.duplicate_ids)
            and earlier.paged_queues.isdisjoint(later.paged_queues))
