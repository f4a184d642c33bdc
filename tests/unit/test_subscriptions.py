"""Subscription queue names and the plan for a consumer asking for a named
subscription (services/router/subscriptions.py), as Artemis and JMS 2.0."""

from __future__ import annotations

import pytest

from meshmq.errors import BrokerError, Reason
from services.router.subscriptions import Existing, Step, Wanted, check, escape, plan, queue_name


@pytest.mark.parametrize(("sub", "client_id", "durable", "name"), [
    ("orders", "app", True, "app.orders"),
    ("orders", "", True, "orders"),
    ("orders", "app", False, "nonDurable.app.orders"),
    ("orders", "", False, "nonDurable.orders"),
    ("a.b", "c", True, "c.a\\.b"),
    ("b", "c.a", True, "c\\.a.b"),
    ("x\\y", "", True, "x\\\\y"),
])
def test_queue_names_as_artemis(sub, client_id, durable, name):
    assert queue_name(sub, client_id, durable=durable) == name


def test_escaping_keeps_client_id_and_name_apart():
    assert queue_name("b.c", "a", durable=True) != queue_name("c", "a.b", durable=True)
    assert escape("a\\.b") == "a\\\\\\.b"


def test_two_client_ids_get_two_subscriptions_of_one_name():
    assert queue_name("s", "one", durable=True) != queue_name("s", "two", durable=True)


def _wanted(**kw) -> Wanted:
    args = dict(address="news", name="s", filter="", client_id="app", shared=False, durable=True)
    args.update(kw)
    return Wanted(**args)


def _refusal(fn, *args) -> Reason:
    with pytest.raises(BrokerError) as exc:
        fn(*args)
    return exc.value.reason


def test_an_unshared_durable_subscription_needs_a_client_id():
    assert _refusal(check, _wanted(client_id="")) is Reason.INVALID_REQUEST
    check(_wanted(client_id="", shared=True))
    check(_wanted(client_id="", shared=True, durable=False))


def test_a_named_non_durable_subscription_must_be_shared():
    assert _refusal(check, _wanted(durable=False)) is Reason.INVALID_REQUEST


def test_a_missing_subscription_is_created_and_an_identical_one_used():
    assert plan(_wanted(), "app.s", None) is Step.CREATE
    assert plan(_wanted(), "app.s", Existing("news", True, "", 0)) is Step.USE
    assert plan(_wanted(shared=True), "app.s", Existing("news", True, "", 3)) is Step.USE


def test_an_unshared_subscription_takes_one_consumer_at_a_time():
    assert _refusal(plan, _wanted(), "app.s", Existing("news", True, "", 1)) is Reason.QUEUE_IN_USE


def test_another_address_or_filter_replaces_an_idle_subscription_and_is_refused_for_a_busy_one():
    assert plan(_wanted(filter="x = 1"), "app.s", Existing("news", True, "", 0)) is Step.REPLACE
    assert plan(_wanted(address="sport"), "app.s", Existing("news", True, "", 0)) is Step.REPLACE
    busy = Existing("news", True, "", 2)
    assert _refusal(plan, _wanted(shared=True, filter="x = 1"), "app.s", busy) is Reason.QUEUE_IN_USE


def test_an_anycast_queue_of_that_name_is_no_subscription():
    assert _refusal(plan, _wanted(), "app.s", Existing("news", False, "", 0)) is Reason.QUEUE_EXISTS
