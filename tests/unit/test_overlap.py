"""The decider for which journal transactions may commit at once
(services/journal/overlap.py): disjoint rows overlap, anything shared or any
definition waits."""

from __future__ import annotations

import pytest

from meshmq.v1 import journal_pb2 as jpb
from services.journal.overlap import footprint, may_overlap


def send(*ids: int, dup: str = "") -> jpb.AppendRequest:
    """A producer's batch: each message stored with its ENQUEUED event."""
    r = jpb.AppendRequest()
    for i in ids:
        r.add_messages.add(message_id=i, address="a", queue_id=1)
        r.events.add(message_id=i, kind=jpb.ENQUEUED)
    if dup:
        r.add_duplicate_ids.add(address="a", duplicate_id=dup, position=1)
    return r


def ack(*ids: int) -> jpb.AppendRequest:
    r = jpb.AppendRequest()
    for i in ids:
        r.delete_messages.append(i)
        r.events.add(message_id=i, kind=jpb.ACKNOWLEDGED)
    return r


def overlap(earlier: list[jpb.AppendRequest], later: list[jpb.AppendRequest]) -> bool:
    return may_overlap(footprint(earlier), footprint(later))


def test_new_messages_and_acks_of_older_ones_overlap():
    # the steady state: a batch of sends and acks of messages committed before
    assert overlap([send(10, 11), ack(1, 2)], [send(12, 13), ack(3, 4)])


@pytest.mark.parametrize(
    "later",
    [
        ack(11),  # the ack of a message whose insert is in flight would delete nothing
        jpb.AppendRequest(delete_refs=[jpb.MessageRef(queue_id=1, message_id=11)]),
        jpb.AppendRequest(update_delivery_counts=[jpb.MessageRef(queue_id=1, message_id=11, delivery_count=2)]),
        jpb.AppendRequest(add_refs=[jpb.MessageRef(queue_id=2, message_id=11)]),
        jpb.AppendRequest(delete_paged=[jpb.MessageRef(queue_id=1, message_id=11)]),
        jpb.AppendRequest(update_paged_delivery_counts=[jpb.MessageRef(queue_id=1, message_id=11)]),
        jpb.AppendRequest(events=[jpb.Event(message_id=11, kind=jpb.DELIVERED)]),
    ],
    ids=["ack", "delete-ref", "delivery-count", "add-ref", "delete-paged", "paged-count", "event"],
)
def test_anything_naming_a_message_of_the_earlier_transaction_waits(later):
    assert not overlap([send(10, 11)], [later])
    assert not overlap([later], [send(10, 11)])  # and the other way round


def test_a_paged_message_counts_as_named():
    earlier = jpb.AppendRequest(add_paged=[jpb.PagedMessage(queue_id=1, message_id=11)])
    assert not overlap([earlier], [ack(11)])
    assert overlap([earlier], [ack(12)])


def test_messages_paged_into_the_same_queue_wait_other_queues_overlap():
    # a page read takes "the stored messages after the last id read": the later ones
    # must not be readable before the earlier ones of the same queue
    def paged(queue_id: int, message_id: int) -> jpb.AppendRequest:
        return jpb.AppendRequest(add_paged=[jpb.PagedMessage(queue_id=queue_id, message_id=message_id)])

    assert not overlap([paged(1, 10)], [paged(1, 11)])
    assert overlap([paged(1, 10)], [paged(2, 11)])
    assert overlap([paged(1, 10)], [send(11)])


def test_the_same_duplicate_id_waits_other_ids_overlap():
    assert not overlap([send(10, dup="x")], [send(11, dup="x")])
    removed = jpb.AppendRequest(delete_duplicate_ids=[jpb.DuplicateIdRecord(address="a", duplicate_id="x")])
    assert not overlap([send(10, dup="x")], [removed])
    assert overlap([send(10, dup="x")], [send(11, dup="y")])
    other_address = jpb.AppendRequest(add_duplicate_ids=[jpb.DuplicateIdRecord(address="b", duplicate_id="x")])
    assert overlap([send(10, dup="x")], [other_address])


@pytest.mark.parametrize(
    "definition",
    [
        jpb.AppendRequest(reserve_message_ids_to=1000),
        jpb.AppendRequest(add_addresses=[jpb.AddressRecord(name="b")]),
        jpb.AppendRequest(add_queues=[jpb.QueueRecord(queue_id=7, name="q", address="b")]),
        jpb.AppendRequest(add_large_chunks=[jpb.LargeMessageChunk(message_id=99, seq=0, data=b"x")]),
        jpb.AppendRequest(copy_large_messages=[jpb.CopyLargeMessage(from_message_id=98, to_message_id=99)]),
        jpb.AppendRequest(delete_large_messages=[99]),
        jpb.AppendRequest(delete_queues=[7]),
        jpb.AppendRequest(delete_addresses=["b"]),
        jpb.AppendRequest(purge_paged=[7]),
        jpb.AppendRequest(prune_events=jpb.PruneEvents(before_ts=1000, max_rows=10)),
    ],
    ids=["reserve", "address", "queue", "large-chunk", "large-copy", "large-delete", "delete-queue",
         "delete-address", "purge-paged", "prune-events"],
)
def test_a_transaction_holding_anything_but_rows_overlaps_nothing(definition):
    # even with nothing in common: these are rare, and reasoning about them is not worth it
    assert footprint([send(10), definition]) is None
    assert not overlap([send(1)], [definition])
    assert not overlap([definition], [send(1)])


def test_an_empty_request_overlaps():
    assert overlap([jpb.AppendRequest()], [send(1)])
