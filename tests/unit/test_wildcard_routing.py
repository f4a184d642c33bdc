"""The wildcard matcher in a configured syntax, and which queues each address is bound to."""

from __future__ import annotations

import pytest

from meshmq.config.wildcards import WildcardSyntax, wildcard_matches
from services.router.addresses import Address
from services.router.queue import Queue
from services.router.routing import MULTICAST
from services.router.wildcard_routing import WildcardRouting

SLASH = WildcardSyntax("/", ">", "+")


@pytest.mark.parametrize(("pattern", "address", "expected"), [
    ("news/>", "news/europe/sport", True),
    ("news/>", "news", True),
    ("news/+", "news/europe", True),
    ("news/+", "news/europe/sport", False),
    ("news/+/sport", "news/europe/sport", True),
    ("news.#", "news.europe", False),  # '.' and '#' are plain characters in this syntax
    ("news.#", "news.#", True),
])
def test_matching_in_a_custom_syntax(pattern, address, expected):
    assert wildcard_matches(pattern, address, SLASH) is expected


@pytest.mark.parametrize(("syntax", "problem"), [
    (WildcardSyntax("#"), "three different characters"),
    (WildcardSyntax("::"), "delimiter must be one character"),
    (WildcardSyntax(".", " "), "any-words must be one character"),
])
def test_bad_syntax(syntax, problem):
    assert problem in syntax.problem()


def _address(name: str, queues: tuple[str, ...] = ()) -> Address:
    addr = Address(name, 2, False)
    for i, q in enumerate(queues):
        addr.add_queue(Queue(i + 1, q, name, MULTICAST, "", None, durable=False))
    return addr


def test_concrete_addresses_are_bound_to_matching_wildcard_queues_old_and_new():
    routing = WildcardRouting(WildcardSyntax())
    addresses = {a.name: a for a in (_address("news.europe"), _address("news.#", ("all",)))}
    routing.rebuild(addresses)
    assert [q.name for q in addresses["news.europe"].bound] == ["all"]
    assert addresses["news.europe"].sole is None and addresses["news.europe"].shares
    later = addresses["news.europe.sport"] = _address("news.europe.sport")
    other = addresses["sport.news"] = _address("sport.news")
    routing.address_added(later)
    routing.address_added(other)
    assert [q.name for q in later.bound] == ["all"] and other.bound == () and not other.shares
    star = addresses["news.*"] = _address("news.*")
    routing.address_added(star)
    star.add_queue(Queue(9, "one", "news.*", MULTICAST, "", None, durable=False))
    routing.queues_changed(star, addresses)
    assert [q.name for q in addresses["news.europe"].bound] == ["all", "one"]
    assert [q.name for q in later.bound] == ["all"]
    assert star.bound == ()  # wildcard addresses are not bound to each other
    multicast, _ = addresses["news.europe"].split()
    assert [q.name for q in multicast] == ["all", "one"]


def test_routing_disabled_binds_nothing():
    routing = WildcardRouting(None)
    addresses = {a.name: a for a in (_address("news.europe"), _address("news.#", ("all",)))}
    routing.rebuild(addresses)
    assert addresses["news.europe"].bound == () and not addresses["news.#"].wildcard
