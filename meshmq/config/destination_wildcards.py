"""ActiveMQ destination wildcards: the syntax network connectors filter
destinations with (`dynamicallyIncludedDestinations`, `excludedDestinations`,
`staticallyIncludedDestinations`), apart from Artemis's address wildcards
(config/wildcards.py), because ActiveMQ users bring their own:

* ``.`` separates the words of a destination name (``PRICE.STOCK.NASDAQ.IBM``);
* ``*`` matches exactly one word: ``PRICE.STOCK.*.IBM`` is any IBM stock price
  on any exchange;
* ``>`` matches one or more words, and only as the last word:
  ``PRICE.STOCK.>`` is any stock price on any exchange; ``>`` alone is every
  destination;
* any other word matches itself.

As in ActiveMQ a wildcard is a whole word; ``>`` anywhere but at the end is
refused on load (`check_pattern`), never read as a literal.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

SEPARATOR, ONE_WORD, ANY_WORDS = ".", "*", ">"


def check_pattern(pattern: str) -> str | None:
    """What is wrong with `pattern` as an ActiveMQ destination wildcard, or None."""
    if not pattern:
        return "an empty destination name"
    words = pattern.split(SEPARATOR)
    if any(not w for w in words):
        return f"{pattern!r} has an empty word (two dots, or a dot at an end)"
    for i, word in enumerate(words):
        if word != ONE_WORD and ONE_WORD in word or word != ANY_WORDS and ANY_WORDS in word:
            return f"{pattern!r}: a wildcard ('*' or '>') must be a whole word, not part of {word!r}"
        if word == ANY_WORDS and i != len(words) - 1:
            return f"{pattern!r}: '>' matches the rest of the name and must be the last word"
    return None


@lru_cache(maxsize=8192)
def destination_matches(pattern: str, name: str) -> bool:
    """Whether destination `name` matches `pattern` (module docstring)."""
    p, n = pattern.split(SEPARATOR), name.split(SEPARATOR)
    for i, word in enumerate(p):
        if word == ANY_WORDS:
            return len(n) > i
        if i >= len(n) or (word != ONE_WORD and word != n[i]):
            return False
    return len(n) == len(p)


class DestinationFilter:
    """Which destinations of one kind (queues or topics) a network connector
    passes: any of `included` (none given: every destination) and none of
    `excluded` — exclusions win, as in ActiveMQ."""

    __slots__ = ("included", "excluded")

    def __init__(self, included: Iterable[str] = (), excluded: Iterable[str] = ()) -> None:
        self.included = tuple(included)
        self.excluded = tuple(excluded)

    def passes(self, name: str) -> bool:
        if any(destination_matches(p, name) for p in self.excluded):
            return False
        return not self.included or any(destination_matches(p, name) for p in self.included)

    def __repr__(self) -> str:
        return f"DestinationFilter(included={self.included!r}, excluded={self.excluded!r})"
