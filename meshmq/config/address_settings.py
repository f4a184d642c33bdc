"""Artemis address wildcards and hierarchical address-settings merging.

Wildcard syntax (the Artemis default ``WildcardConfiguration``)
---------------------------------------------------------------
An address is a list of words separated by ``.``. In a match string:

* ``*`` matches exactly one (non-empty) word: ``news.*`` matches
  ``news.europe`` but neither ``news`` nor ``news.europe.sport``;
* ``#`` matches zero or more words: ``news.#`` matches ``news``,
  ``news.europe`` and ``news.europe.sport``; ``#`` alone matches every address;
* any other word matches itself only.

A wildcard is always a whole word (``news.eur*`` is rejected by the config
loader, not silently treated as a prefix), and, as in Artemis
(``Match.verify``), an address-settings key may use ``#`` only as its last word.
``wildcard_matches`` itself accepts ``#`` anywhere.

Which match is more specific (Artemis ``HierarchicalObjectRepository.MatchComparator``)
-------------------------------------------------------------------------------------
Artemis collects every match string that matches an address and orders them:

1. an exact match (no wildcard at all) comes first;
2. then match strings with ``*`` but no ``#``, compared word by word from the
   left: at the first word where one has a literal and the other ``*``, the
   literal one is more specific (``news.europe.*`` beats ``news.*.sport``);
3. then match strings containing ``#``: the longer match string is more
   specific (``news.europe.#`` beats ``news.#`` beats ``#``).

So for ``news.europe`` the order is ``news.europe``, ``news.*``, ``*.europe``,
``news.#``, ``#``. Note that any ``#`` match string loses to any ``*``-only
one, even with more literal words (``news.europe.#`` loses to ``*.*``), and
that two ``#`` strings compare by length, not word by word.

Where Artemis leaves two ``#`` strings of equal length unordered (it then
depends on hash order) meshmq breaks the tie word by word (literal beats ``*``
beats ``#``) and finally alphabetically, so resolution is deterministic.

Merging
-------
Artemis merges the ordered settings: each field takes its value from the most
specific entry that sets it, then the next one, and so on; a field no entry
sets takes the default from ``defaults.py``. ``id-cache-size`` falls back to the
broker-wide ``id-cache-size``. An empty string for ``dead-letter-address`` or
``expiry-address`` sets it to "none" explicitly, so a specific match can turn
off a dead-letter address a broader one set (e.g. for the DLQ itself).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from meshmq.config import defaults

if TYPE_CHECKING:
    from meshmq.config.models import AddressSettings, BrokerConfig

DELIMITER = "."
SINGLE_WORD = "*"
ANY_WORDS = "#"

_LITERAL, _SINGLE, _ANY = 0, 1, 2


def has_wildcards(pattern: str) -> bool:
    return SINGLE_WORD in pattern or ANY_WORDS in pattern


def match_syntax_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid address-settings match string, or None."""
    if not pattern:
        return "a match string must not be empty"
    words = pattern.split(DELIMITER)
    for index, word in enumerate(words):
        if not word:
            return f"empty word in {pattern!r} (check for a leading, trailing or doubled '.')"
        if word not in (SINGLE_WORD, ANY_WORDS) and (SINGLE_WORD in word or ANY_WORDS in word):
            return f"wildcard {word!r} must be a whole word ('*' or '#' between dots)"
        if word == ANY_WORDS and index != len(words) - 1:
            return "'#' may only be the last word of a match string (as in Artemis)"
    return None


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    # Matched against "." + address, so every word is preceded by a dot and
    # "#" can swallow zero or more whole ".word" groups.
    parts = []
    for word in pattern.split(DELIMITER):
        if word == SINGLE_WORD:
            parts.append(r"\.[^.]+")
        elif word == ANY_WORDS:
            parts.append(r"(?:\.[^.]*)*")
        else:
            parts.append(r"\." + re.escape(word))
    return re.compile("".join(parts))


def wildcard_matches(pattern: str, address: str) -> bool:
    """Whether the Artemis match string ``pattern`` matches ``address``."""
    if not has_wildcards(pattern):
        return pattern == address
    return _compile(pattern).fullmatch(DELIMITER + address) is not None


def _specificity_key(pattern: str) -> tuple[Any, ...]:
    """Sort key: smaller = more specific (see the module docstring)."""
    kinds = tuple(
        _SINGLE if w == SINGLE_WORD else _ANY if w == ANY_WORDS else _LITERAL for w in pattern.split(DELIMITER)
    )
    if ANY_WORDS in pattern:
        return (2, -len(pattern), kinds, pattern)
    if SINGLE_WORD in pattern:
        return (1, 0, kinds, pattern)
    return (0, 0, kinds, pattern)


def most_specific_first(patterns: Iterable[str]) -> list[str]:
    """``patterns`` ordered as Artemis orders matches of one address."""
    return sorted(patterns, key=_specificity_key)


@dataclasses.dataclass(frozen=True)
class ResolvedAddressSettings:
    """The settings in force for one address; every field has a value.

    ``matched`` lists the address-settings keys that matched, most specific first.
    """

    dead_letter_address: str | None = defaults.DEAD_LETTER_ADDRESS
    expiry_address: str | None = defaults.EXPIRY_ADDRESS
    expiry_delay: int = defaults.EXPIRY_DELAY
    max_delivery_attempts: int = defaults.MAX_DELIVERY_ATTEMPTS
    redelivery_delay: int = defaults.REDELIVERY_DELAY
    redistribution_delay: int = defaults.REDISTRIBUTION_DELAY
    auto_create_queues: bool = defaults.AUTO_CREATE_QUEUES
    auto_create_addresses: bool = defaults.AUTO_CREATE_ADDRESSES
    auto_delete_queues: bool = defaults.AUTO_DELETE_QUEUES
    auto_delete_addresses: bool = defaults.AUTO_DELETE_ADDRESSES
    default_address_routing_type: str = defaults.DEFAULT_ADDRESS_ROUTING_TYPE
    default_queue_routing_type: str = defaults.DEFAULT_QUEUE_ROUTING_TYPE
    send_to_dla_on_no_route: bool = defaults.SEND_TO_DLA_ON_NO_ROUTE
    id_cache_size: int = defaults.ID_CACHE_SIZE
    max_size_bytes: int = defaults.MAX_SIZE_BYTES
    max_size_messages: int = defaults.MAX_SIZE_MESSAGES
    page_size_bytes: int = defaults.PAGE_SIZE_BYTES
    address_full_policy: str = defaults.ADDRESS_FULL_POLICY
    matched: tuple[str, ...] = ()


_SETTING_FIELDS = tuple(f.name for f in dataclasses.fields(ResolvedAddressSettings) if f.name != "matched")
# Empty string = explicitly "no address" (see the module docstring).
_EMPTY_MEANS_NONE = frozenset({"dead_letter_address", "expiry_address"})


class AddressSettingsResolver:
    """Answers "which settings apply to this address" for one node's config.

    Immutable: build a new resolver when the configuration changes. Results are
    cached per address (LRU, ``cache_size`` entries) because the router asks on
    every routing decision.
    """

    def __init__(
        self,
        address_settings: Mapping[str, AddressSettings] | None = None,
        *,
        id_cache_size: int = defaults.ID_CACHE_SIZE,
        cache_size: int = 10_000,
    ) -> None:
        settings = dict(address_settings or {})
        for pattern in settings:
            problem = match_syntax_problem(pattern)
            if problem is not None:
                raise ValueError(f"address-settings {pattern!r}: {problem}")
        self._exact = {p: s for p, s in settings.items() if not has_wildcards(p)}
        self._wildcards = [(p, _compile(p), settings[p]) for p in most_specific_first(settings) if has_wildcards(p)]
        self._id_cache_size = id_cache_size
        self._policies = frozenset(s.address_full_policy for s in settings.values() if s.address_full_policy)
        # `resolve(address)`: the settings for one address. The cached function
        # itself, not a method around it: the router calls it for every message.
        self.resolve: Callable[[str], ResolvedAddressSettings] = functools.lru_cache(maxsize=cache_size)(self._resolve)

    @classmethod
    def from_config(cls, config: BrokerConfig, *, cache_size: int = 10_000) -> AddressSettingsResolver:
        return cls(config.address_settings, id_cache_size=config.id_cache_size, cache_size=cache_size)

    def uses_policy(self, policy: str) -> bool:
        """Whether any address can have this address-full-policy (the default counts)."""
        return policy in self._policies or policy == defaults.ADDRESS_FULL_POLICY

    def matching(self, address: str) -> tuple[str, ...]:
        """The keys that match ``address``, most specific first."""
        return self.resolve(address).matched

    def _resolve(self, address: str) -> ResolvedAddressSettings:
        chain: list[tuple[str, Any]] = []
        if address in self._exact:
            chain.append((address, self._exact[address]))
        subject = DELIMITER + address
        chain.extend((p, s) for p, regex, s in self._wildcards if regex.fullmatch(subject))

        values: dict[str, Any] = {"id_cache_size": self._id_cache_size}
        for name in _SETTING_FIELDS:
            for _, entry in chain:
                value = getattr(entry, name)
                if value is not None:
                    values[name] = None if (name in _EMPTY_MEANS_NONE and value == "") else value
                    break
        return ResolvedAddressSettings(**values, matched=tuple(p for p, _ in chain))
