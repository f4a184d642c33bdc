"""The routing decider (services/router/routing.py): where a message goes, as
plain data in and a decision out — anycast and multicast, filters, routing
types, auto-create and dead-letter decisions."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meshmq.config.address_settings import ResolvedAddressSettings
from meshmq.errors import BrokerError, Reason
from services.router.routing import ANYCAST, MULTICAST, RoutingDecision, decide
from meshmq.selector import compile_selector

DEFAULTS = ResolvedAddressSettings()


@dataclass
class Msg:
    address: str
    routing_type: int = 0
    properties: dict = field(default_factory=dict)

    def lookup(self, name):
        return self.properties.get(name)


@dataclass
class Q:
    """A binding: a queue with an optional filter (a remote queue would look the same)."""

    name: str
    routing_type: int
    filter: str = ""

    def accepts(self, msg) -> bool:
        return not self.filter or compile_selector(self.filter).matches(msg.lookup)


@dataclass
class Addr:
    name: str
    routing_types: int
    queues: list[Q] = field(default_factory=list)
    auto_created: bool = False

    def split(self):
        return (
            tuple(q for q in self.queues if q.routing_type == MULTICAST),
            tuple(q for q in self.queues if q.routing_type == ANYCAST),
        )


def anycast(name, *queues):
    return Addr(name, 1, list(queues))


def multicast(name, *queues):
    return Addr(name, 2, list(queues))


def names(decision: RoutingDecision) -> list[str]:
    assert decision.final
    return [b.name for b in decision.targets]


# ---------------------------------------------------------------- anycast


def test_anycast_single_queue_gets_the_message():
    assert names(decide(Msg("orders"), anycast("orders", Q("orders", ANYCAST)), DEFAULTS)) == ["orders"]


def test_anycast_round_robin_uses_the_given_position_and_asks_to_advance():
    addr = anycast("jobs", Q("a", ANYCAST), Q("b", ANYCAST), Q("c", ANYCAST))
    picks = [decide(Msg("jobs"), addr, DEFAULTS, round_robin=i) for i in range(4)]
    assert [names(p) for p in picks] == [["a"], ["b"], ["c"], ["a"]]
    assert all(p.advance_round_robin for p in picks)


def test_anycast_round_robin_is_over_queues_whose_filter_accepts():
    addr = anycast("jobs", Q("red", ANYCAST, "color = 'red'"), Q("blue", ANYCAST, "color = 'blue'"), Q("any", ANYCAST))
    red = Msg("jobs", properties={"color": "red"})
    assert [names(decide(red, addr, DEFAULTS, round_robin=i)) for i in range(3)] == [["red"], ["any"], ["red"]]
    green = Msg("jobs", properties={"color": "green"})
    assert names(decide(green, addr, DEFAULTS, round_robin=0)) == ["any"]


def test_anycast_filter_that_rejects_routes_nowhere():
    addr = anycast("jobs", Q("red", ANYCAST, "color = 'red'"))
    decision = decide(Msg("jobs", properties={"color": "blue"}), addr, DEFAULTS)
    assert names(decision) == [] and not decision.advance_round_robin


def test_decide_changes_nothing():
    addr = anycast("jobs", Q("a", ANYCAST), Q("b", ANYCAST))
    before = repr(addr)
    decide(Msg("jobs"), addr, DEFAULTS, round_robin=5)
    assert repr(addr) == before


# ---------------------------------------------------------------- multicast


def test_multicast_every_accepting_subscription_gets_a_copy():
    addr = multicast(
        "news", Q("all", MULTICAST), Q("sport", MULTICAST, "topic = 'sport'"), Q("tech", MULTICAST, "topic = 'tech'")
    )
    assert names(decide(Msg("news", properties={"topic": "sport"}), addr, DEFAULTS)) == ["all", "sport"]
    assert names(decide(Msg("news", properties={"topic": "cars"}), addr, DEFAULTS)) == ["all"]


def test_multicast_address_without_subscriptions_routes_nowhere_and_creates_nothing():
    decision = decide(Msg("news"), multicast("news"), DEFAULTS)
    assert names(decision) == []


def test_routing_type_of_the_message_selects_the_queues():
    addr = Addr("mixed", 3, [Q("sub1", MULTICAST), Q("sub2", MULTICAST), Q("work", ANYCAST)])
    assert names(decide(Msg("mixed"), addr, DEFAULTS)) == ["sub1", "sub2", "work"]
    assert names(decide(Msg("mixed", MULTICAST), addr, DEFAULTS)) == ["sub1", "sub2"]
    assert names(decide(Msg("mixed", ANYCAST), addr, DEFAULTS)) == ["work"]


# ---------------------------------------------------------------- auto-create


def test_missing_address_is_created_with_the_default_routing_type():
    assert decide(Msg("new"), None, DEFAULTS).create_address == MULTICAST  # Artemis's default
    settings = ResolvedAddressSettings(default_address_routing_type="ANYCAST")
    assert decide(Msg("new"), None, settings).create_address == ANYCAST


def test_missing_address_is_created_with_the_message_routing_type():
    decision = decide(Msg("new", MULTICAST), None, DEFAULTS)
    assert decision.create_address == MULTICAST and not decision.final and decision.targets == []


def test_missing_address_without_auto_create_is_refused():
    with pytest.raises(BrokerError) as err:
        decide(Msg("new"), None, ResolvedAddressSettings(auto_create_addresses=False))
    assert err.value.reason == Reason.ADDRESS_NOT_FOUND
    assert "auto-create-addresses" in err.value.message


def test_existing_address_missing_the_routing_type_gets_it_added_even_without_auto_create():
    settings = ResolvedAddressSettings(auto_create_addresses=False)
    assert decide(Msg("news", ANYCAST), multicast("news", Q("s", MULTICAST)), settings).create_address == ANYCAST


def test_anycast_address_without_queues_auto_creates_one_named_after_it():
    assert decide(Msg("orders"), anycast("orders"), DEFAULTS).create_queue == "orders"


def test_auto_created_queue_takes_another_name_when_the_address_name_is_taken():
    decision = decide(Msg("orders"), anycast("orders"), DEFAULTS, taken={"orders"})
    assert decision.create_queue == "orders.anycast"


def test_no_auto_create_queues_routes_nowhere():
    decision = decide(Msg("orders"), anycast("orders"), ResolvedAddressSettings(auto_create_queues=False))
    assert names(decision) == []


# ---------------------------------------------------------------- dead letter


def test_unroutable_message_goes_to_the_dead_letter_address_when_configured():
    settings = ResolvedAddressSettings(send_to_dla_on_no_route=True, dead_letter_address="DLA")
    decision = decide(Msg("news"), multicast("news"), settings)
    assert decision.dead_letter_address == "DLA" and not decision.final


def test_no_dead_letter_without_the_setting_or_the_address():
    assert names(decide(Msg("news"), multicast("news"), ResolvedAddressSettings(dead_letter_address="DLA"))) == []
    assert names(decide(Msg("news"), multicast("news"), ResolvedAddressSettings(send_to_dla_on_no_route=True))) == []


def test_dead_letter_address_does_not_send_to_itself():
    settings = ResolvedAddressSettings(send_to_dla_on_no_route=True, dead_letter_address="DLA")
    assert names(decide(Msg("DLA"), multicast("DLA"), settings)) == []


def test_routed_message_never_goes_to_the_dead_letter_address():
    settings = ResolvedAddressSettings(send_to_dla_on_no_route=True, dead_letter_address="DLA")
    assert names(decide(Msg("orders"), anycast("orders", Q("orders", ANYCAST)), settings)) == ["orders"]


# ---------------------------------------------------------------- properties

COLORS = ["red", "blue", "green"]
queues = st.lists(
    st.tuples(st.sampled_from([ANYCAST, MULTICAST]), st.sampled_from(["", *[f"color = '{c}'" for c in COLORS]])),
    max_size=6,
)


@given(queues, st.sampled_from(COLORS), st.sampled_from([0, ANYCAST, MULTICAST]), st.integers(0, 100))
def test_at_most_one_anycast_copy_and_every_accepting_multicast_queue(spec, color, rt, position):
    addr = Addr("a", 3, [Q(f"q{i}", r, f) for i, (r, f) in enumerate(spec)])
    msg = Msg("a", rt, {"color": color})
    decision = decide(msg, addr, ResolvedAddressSettings(auto_create_queues=False), round_robin=position)
    targets = decision.targets
    anycast_targets = [q for q in targets if q.routing_type == ANYCAST]
    assert len(anycast_targets) <= 1
    assert all(q.accepts(msg) for q in targets)
    expected_multicast = [q for q in addr.queues if q.routing_type == MULTICAST and q.accepts(msg)] if rt != ANYCAST else []
    assert [q for q in targets if q.routing_type == MULTICAST] == expected_multicast
    accepting_anycast = [q for q in addr.queues if q.routing_type == ANYCAST and q.accepts(msg)]
    assert bool(anycast_targets) == (rt != MULTICAST and bool(accepting_anycast))
