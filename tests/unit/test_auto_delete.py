"""The auto-delete decision (pure) and its timers (services/router/auto_delete.py)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config.models import AddressSettings
from services.router.auto_delete import AutoDelete, should_delete_queue
from tests.fixtures.nodes import eventually


def decide(**kw) -> bool:
    args = dict(temporary=False, auto_created=True, auto_delete_queues=True, message_count=0,
                max_message_count=0, busy=False)
    args.update(kw)
    return should_delete_queue(**args)


def test_an_empty_auto_created_queue_goes():
    assert decide()


def test_a_queue_not_auto_created_or_with_auto_delete_off_stays():
    assert not decide(auto_created=False)
    assert not decide(auto_delete_queues=False)


def test_a_temporary_queue_goes_whatever_it_holds():
    assert decide(temporary=True, auto_created=False, auto_delete_queues=False, message_count=9, busy=True)


@pytest.mark.parametrize(("count", "limit", "deleted"), [
    (1, 0, False), (2, 2, True), (3, 2, False), (1000, -1, True), (0, -1, True),
])
def test_the_message_count_limit(count, limit, deleted):
    assert decide(message_count=count, max_message_count=limit) is deleted


def test_a_queue_with_messages_on_their_way_in_stays_even_with_any_count():
    assert not decide(busy=True, max_message_count=-1)


def test_the_settings_default_as_artemis():
    s = AddressSettingsResolver().resolve("a")
    assert (s.auto_delete_queues_delay, s.auto_delete_queues_message_count, s.auto_delete_addresses_delay) == (0, 0, 0)


def test_the_settings_merge_from_the_most_specific_match():
    r = AddressSettingsResolver({
        "#": AddressSettings(auto_delete_queues_delay=100, auto_delete_queues_message_count=-1),
        "a.#": AddressSettings(auto_delete_queues_delay=300, auto_delete_addresses_delay=50),
    })
    s = r.resolve("a.b")
    assert (s.auto_delete_queues_delay, s.auto_delete_queues_message_count, s.auto_delete_addresses_delay) == (
        300, -1, 50)


def test_a_negative_delay_or_a_count_below_minus_one_is_refused():
    with pytest.raises(ValueError):
        AddressSettings(auto_delete_queues_delay=-1)
    with pytest.raises(ValueError):
        AddressSettings(auto_delete_queues_message_count=-2)


@dataclass(eq=False)
class Q:
    name: str
    address: str = "a"
    deleted: bool = False
    deleting: bool = False
    consumers: list = field(default_factory=list)


@dataclass(eq=False)
class A:
    name: str
    queues: dict = field(default_factory=dict)


def _auto(delay_ms: int, deleted: list, addresses: dict | None = None) -> AutoDelete:
    settings = SimpleNamespace(auto_delete_queues_delay=delay_ms, auto_delete_addresses_delay=delay_ms)
    addresses = addresses if addresses is not None else {}
    return AutoDelete(lambda _: settings, lambda q: True, lambda q: deleted.append(q.name),
                      lambda a: deleted.append(("address", a.name)), addresses.get)


async def test_no_delay_deletes_at_once():
    deleted: list = []
    _auto(0, deleted).queue_unused(Q("q"), temporary=False)
    assert deleted == ["q"]


async def test_a_delay_deletes_later_and_a_consumer_in_between_cancels_it():
    deleted: list = []
    auto = _auto(30, deleted)
    q, kept = Q("q"), Q("kept")
    auto.queue_unused(q, temporary=False)
    auto.queue_unused(kept, temporary=False)
    assert deleted == [] and auto.pending == 2
    auto.queue_used(kept)
    await eventually(lambda: not auto.pending, 5, "the timer to fire")
    assert deleted == ["q"]


async def test_a_temporary_queue_ignores_the_delay():
    deleted: list = []
    _auto(10_000, deleted).queue_unused(Q("tmp"), temporary=True)
    assert deleted == ["tmp"]


async def test_an_address_given_a_queue_within_its_delay_stays():
    deleted: list = []
    gone, kept = A("gone"), A("kept")
    auto = _auto(30, deleted, {"gone": gone, "kept": kept})
    auto.address_unused(gone)
    auto.address_unused(kept)
    kept.queues["q"] = object()
    await eventually(lambda: not auto.pending, 5, "both timers to fire")
    assert deleted == [("address", "gone")]


async def test_close_cancels_every_pending_deletion():
    deleted: list = []
    auto = _auto(30, deleted, {"a": A("a")})
    auto.queue_unused(Q("q"), temporary=False)
    auto.address_unused(A("a"))
    auto.close()
    await asyncio.sleep(0.1)
    assert deleted == [] and auto.pending == 0


async def test_an_address_routed_nowhere_waits_the_scan_period_once_and_not_with_minus_one():
    """address_unrouted: the longer of the scan period and the delay, one timer per
    address however many messages find it empty; -1 keeps such addresses."""
    deleted: list[str] = []
    addr = SimpleNamespace(name="t", queues={})
    settings = AddressSettingsResolver({"#": AddressSettings(auto_delete_addresses_delay=10)}).resolve
    ad = AutoDelete(settings, lambda q: True, lambda q: None, lambda a: deleted.append(a.name),
                    lambda name: addr if name == "t" else None, scan_period_ms=50)
    ad.address_unrouted(addr)
    ad.address_unrouted(addr)  # a second message: no second timer, no later deadline
    assert ad.pending == 1 and deleted == []
    await eventually(lambda: deleted == ["t"], 5, "the address to go after the scan period")
    kept = AutoDelete(settings, lambda q: True, lambda q: None, lambda a: deleted.append("kept?"),
                      lambda name: addr, scan_period_ms=-1)
    kept.address_unrouted(addr)
    assert kept.pending == 0
