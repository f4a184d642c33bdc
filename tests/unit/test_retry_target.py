"""Where a retried dead letter goes (`retry_target` in services/router/message_moves.py):
back to its queue while it exists, else to its address with the routing type
of the queue it died on, else nowhere — and why."""

from __future__ import annotations

from meshmq.v1 import messages_pb2 as mpb
from services.router.message_moves import NO_ORIGIN, ORIGIN_IS_SOURCE, RetryTarget, retry_target

EXISTING = {"orders", "DLQ"}.__contains__


def target(queue="", address="", routing_type="", source="DLQ", source_address="DLQ"):
    return retry_target(queue, address, routing_type, source, source_address, EXISTING)


def test_a_queue_that_still_exists_gets_its_message_back():
    assert target("orders", "orders", "ANYCAST") == RetryTarget(queue="orders")


def test_a_gone_queue_sends_the_message_to_its_address_with_the_routing_type_it_died_with():
    assert target("gone", "events", "MULTICAST") == RetryTarget(address="events", routing_type=mpb.MULTICAST)
    assert target("gone", "gone", "ANYCAST") == RetryTarget(address="gone", routing_type=mpb.ANYCAST)


def test_without_a_recorded_routing_type_a_queue_named_like_its_address_is_taken_as_anycast():
    assert target("gone", "gone") == RetryTarget(address="gone", routing_type=mpb.ANYCAST)
    assert target("gone.sub", "gone") == RetryTarget(address="gone", routing_type=0)
    assert target("", "unroutable") == RetryTarget(address="unroutable", routing_type=0)


def test_a_message_with_nowhere_to_go_stays_and_says_why():
    assert target().reason == NO_ORIGIN and "_AMQ_ORIG_QUEUE" in target().detail
    gone = target("gone")
    assert gone.reason == NO_ORIGIN and "'gone' is gone" in gone.detail
    assert target("DLQ", "DLQ").reason == ORIGIN_IS_SOURCE
    assert target("gone", "DLQ").reason == ORIGIN_IS_SOURCE
