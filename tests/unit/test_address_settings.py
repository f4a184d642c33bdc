"""Artemis wildcard matching and most-specific-wins merging of address settings."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshmq.config import defaults
from meshmq.config.address_settings import AddressSettingsResolver, ResolvedAddressSettings
from meshmq.config.loader import load_config_text
from meshmq.config.models import AddressSettings
from meshmq.config.wildcards import match_syntax_problem, most_specific_first, wildcard_matches

# --- matching ----------------------------------------------------------------

MATCH_TABLE = [
    ("news.#", "news", True),  # '#' matches zero words
    ("news.#", "news.europe", True),
    ("news.#", "news.europe.sport", True),
    ("news.#", "newsletter", False),
    ("news.#", "old.news", False),
    ("#", "anything.at.all", True),
    ("#", "x", True),
    ("news.*", "news.europe", True),
    ("news.*", "news", False),  # '*' is exactly one word
    ("news.*", "news.europe.sport", False),  # '*' does not cross a dot
    ("*.europe", "news.europe", True),
    ("*.europe", "europe", False),
    ("news.*.sport", "news.europe.sport", True),
    ("news.*.sport", "news.europe.uk.sport", False),
    ("*", "news", True),
    ("*", "news.europe", False),
    ("*.#", "news", True),
    ("*.#", "news.europe.sport", True),
    ("news.europe", "news.europe", True),
    ("news.europe", "news.europa", False),
    ("news.europe", "news.europe.sport", False),
    ("a+b.(c)", "a+b.(c)", True),  # regex characters are literal
    ("a+b.*", "aab.x", False),
    ("news.#.sport", "news.sport", True),  # wildcard_matches accepts '#' anywhere
    ("news.#.sport", "news.europe.uk.sport", True),
    ("news.#.sport", "news.europe", False),
]


@pytest.mark.parametrize(("pattern", "address", "expected"), MATCH_TABLE)
def test_wildcard_matches(pattern: str, address: str, expected: bool) -> None:
    assert wildcard_matches(pattern, address) is expected


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("news.#", None),
        ("#", None),
        ("*.*.x", None),
        ("", "a match string must not be empty"),
        ("news..x", "empty word in 'news..x' (check for a leading, trailing or doubled '.')"),
        ("news.", "empty word in 'news.' (check for a leading, trailing or doubled '.')"),
        ("#.news", "'#' may only be the last word of a match string (as in Artemis)"),
        ("news.eu*", "wildcard 'eu*' must be a whole word ('*' or '#' between dots)"),
        ("news.#x", "wildcard '#x' must be a whole word ('*' or '#' between dots)"),
    ],
)
def test_match_syntax(pattern: str, problem: str | None) -> None:
    assert match_syntax_problem(pattern) == problem


# --- specificity -------------------------------------------------------------


def test_precedence_exact_then_star_then_hash() -> None:
    assert most_specific_first(["#", "news.#", "news.*", "news.europe", "*.europe"]) == [
        "news.europe",
        "news.*",
        "*.europe",
        "news.#",
        "#",
    ]


def test_precedence_follows_artemis_not_word_count_for_hash() -> None:
    # Any '*'-only match beats any '#' match (Artemis MatchComparator) ...
    assert most_specific_first(["news.europe.#", "*.*"]) == ["*.*", "news.europe.#"]
    # ... and '#' matches compare by length, the longer one first.
    assert most_specific_first(["news.#", "news.europe.#", "#"]) == ["news.europe.#", "news.#", "#"]
    assert most_specific_first(["*.b.#", "a.*.#"]) == ["a.*.#", "*.b.#"]  # tie: word by word


def test_precedence_star_word_by_word() -> None:
    assert most_specific_first(["news.*.sport", "news.europe.*", "*.europe.sport"]) == [
        "news.europe.*",
        "news.*.sport",
        "*.europe.sport",
    ]


# --- resolving ---------------------------------------------------------------


def resolver_for(entries: dict[str, dict], **kwargs) -> AddressSettingsResolver:
    return AddressSettingsResolver({k: AddressSettings(**v) for k, v in entries.items()}, **kwargs)


def test_nothing_matches_gives_defaults() -> None:
    resolved = AddressSettingsResolver({}).resolve("orders")
    assert resolved == ResolvedAddressSettings()
    assert resolved.max_delivery_attempts == defaults.MAX_DELIVERY_ATTEMPTS == 10
    assert resolved.redistribution_delay == -1 and resolved.redelivery_delay == 0 and resolved.expiry_delay == -1
    assert resolved.dead_letter_address is None and resolved.expiry_address is None
    assert resolved.default_address_routing_type == "MULTICAST" == resolved.default_queue_routing_type
    assert resolved.auto_create_queues and resolved.auto_delete_addresses and not resolved.send_to_dla_on_no_route
    assert resolved.id_cache_size == 20000 and resolved.matched == ()


def test_exact_match_beats_every_wildcard() -> None:
    resolver = resolver_for(
        {
            "#": {"max_delivery_attempts": 1},
            "news.*": {"max_delivery_attempts": 2},
            "news.europe": {"max_delivery_attempts": 3},
            "news.#": {"max_delivery_attempts": 4},
        }
    )
    resolved = resolver.resolve("news.europe")
    assert resolved.max_delivery_attempts == 3
    assert resolved.matched == ("news.europe", "news.*", "news.#", "#")


@pytest.mark.parametrize(
    ("address", "attempts", "matched"),
    [
        ("news.europe", 2, ("news.*", "news.#", "#")),  # news.* beats news.# beats #
        ("news", 4, ("news.#", "#")),  # news.* needs one more word; news.# takes zero
        ("news.europe.sport", 4, ("news.#", "#")),
        ("sport", 1, ("#",)),
    ],
)
def test_star_beats_hash_beats_catch_all(address: str, attempts: int, matched: tuple[str, ...]) -> None:
    resolver = resolver_for(
        {
            "#": {"max_delivery_attempts": 1},
            "news.*": {"max_delivery_attempts": 2},
            "news.#": {"max_delivery_attempts": 4},
        }
    )
    resolved = resolver.resolve(address)
    assert (resolved.max_delivery_attempts, resolved.matched) == (attempts, matched)


def test_fields_merge_across_levels() -> None:
    resolver = resolver_for(
        {
            "#": {"dead_letter_address": "DLQ", "expiry_address": "ExpiryQueue", "max_delivery_attempts": 10},
            "orders.#": {"max_delivery_attempts": 3, "redelivery_delay": 500},
            "orders.eu": {"redelivery_delay": 1000, "default_queue_routing_type": "ANYCAST"},
        },
        id_cache_size=777,
    )
    resolved = resolver.resolve("orders.eu")
    assert resolved.redelivery_delay == 1000  # from orders.eu
    assert resolved.max_delivery_attempts == 3  # orders.eu leaves it unset -> orders.#
    assert resolved.dead_letter_address == "DLQ"  # only # sets it
    assert resolved.expiry_address == "ExpiryQueue"
    assert resolved.default_queue_routing_type == "ANYCAST"
    assert resolved.default_address_routing_type == "MULTICAST"  # nobody sets it -> default
    assert resolved.id_cache_size == 777  # nobody sets it -> broker-wide value
    other = resolver.resolve("orders.us")
    assert (other.redelivery_delay, other.max_delivery_attempts) == (500, 3)


def test_empty_dead_letter_address_switches_it_off_for_a_more_specific_match() -> None:
    resolver = resolver_for({"#": {"dead_letter_address": "DLQ"}, "DLQ": {"dead_letter_address": ""}})
    assert resolver.resolve("DLQ").dead_letter_address is None
    assert resolver.resolve("orders").dead_letter_address == "DLQ"


def test_per_match_id_cache_size_overrides_broker_wide() -> None:
    resolver = resolver_for({"dup.#": {"id_cache_size": 5}}, id_cache_size=100)
    assert resolver.resolve("dup.x").id_cache_size == 5
    assert resolver.resolve("other").id_cache_size == 100


def test_results_are_cached() -> None:
    resolver = resolver_for({"#": {"redelivery_delay": 1}}, cache_size=2)
    first = resolver.resolve("a")
    assert resolver.resolve("a") is first
    resolver.resolve("b")
    resolver.resolve("c")
    assert resolver.resolve("a") == first


def test_invalid_match_string_is_refused() -> None:
    with pytest.raises(ValueError, match="'#' may only be the last word"):
        resolver_for({"a.#.b": {}})


def test_resolver_from_loaded_config() -> None:
    cfg = load_config_text(
        'id-cache-size: 42\naddress-settings:\n  "#": {expiry-address: EXP}\n  "q.*": {redistribution-delay: 0}\n'
    )
    resolved = AddressSettingsResolver.from_config(cfg).resolve("q.1")
    assert (resolved.expiry_address, resolved.redistribution_delay, resolved.id_cache_size) == ("EXP", 0, 42)


# --- properties ----------------------------------------------------------------

WORDS = st.sampled_from(["a", "b", "c", "ab"])
ADDRESSES = st.lists(WORDS, min_size=0, max_size=5).map(".".join)


@st.composite
def artemis_patterns(draw) -> str:
    """Valid address-settings match strings: words, '*', and '#' only last."""
    words = draw(st.lists(st.one_of(WORDS, st.just("*")), min_size=0, max_size=4))
    if not words or draw(st.booleans()):
        words.append("#")
    return ".".join(words)


def artemis_regex(pattern: str) -> re.Pattern[str]:
    """Artemis Match.createPattern, transcribed: the reference implementation."""
    if pattern == "#":
        return re.compile(".*")
    text = pattern.replace(".#", "#").replace(".", r"\.").replace("*", r"[^\.]+").replace("#", r"(\..+)*")
    return re.compile(text)


def artemis_compare(o1: str, o2: str) -> int:
    """Artemis HierarchicalObjectRepository.MatchComparator, transcribed."""
    if "#" in o1 and "#" not in o2:
        return 1
    if "#" not in o1 and "#" in o2:
        return -1
    if "#" in o1 and "#" in o2:
        return len(o2) - len(o1)
    if "*" in o1 and "*" not in o2:
        return 1
    if "*" not in o1 and "*" in o2:
        return -1
    if "*" in o1 and "*" in o2:
        left, right = o1.split("."), o2.split(".")
        for i, word in enumerate(left):
            if i >= len(right):
                return -1
            if word == "*" and right[i] != "*":
                return 1
            if word != "*" and right[i] == "*":
                return -1
    return len(o1) - len(o2)


@settings(max_examples=300, deadline=None)
@given(pattern=artemis_patterns(), address=ADDRESSES)
def test_wildcard_matches_agrees_with_artemis_regex(pattern: str, address: str) -> None:
    assert match_syntax_problem(pattern) is None
    assert wildcard_matches(pattern, address) == (artemis_regex(pattern).fullmatch(address) is not None)


@settings(max_examples=300, deadline=None)
@given(pattern=artemis_patterns(), address=ADDRESSES)
def test_literal_patterns_match_only_themselves(pattern: str, address: str) -> None:
    literal = address or "x"
    assert wildcard_matches(literal, address) == (literal == address)
    assert wildcard_matches(pattern, pattern.replace("*", "q").removesuffix(".#").replace("#", "q"))


@settings(max_examples=300, deadline=None)
@given(p1=artemis_patterns(), p2=artemis_patterns(), address=ADDRESSES)
def test_order_agrees_with_artemis_comparator(p1: str, p2: str, address: str) -> None:
    if p1 == p2 or not (wildcard_matches(p1, address) and wildcard_matches(p2, address)):
        return
    expected = artemis_compare(p1, p2)
    if expected != 0:  # Artemis leaves ties unordered; meshmq breaks them deterministically
        assert most_specific_first([p1, p2]) == ([p1, p2] if expected < 0 else [p2, p1])
