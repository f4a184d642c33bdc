"""Artemis address wildcards: the match-string syntax, matching an address,
and which of several matching strings is the most specific. Address settings
(``address_settings.py``) and security settings (``meshmq/security/authorization.py``)
both match addresses this way; the config models check the syntax on load.

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
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

DELIMITER = "."
SINGLE_WORD = "*"
ANY_WORDS = "#"

_LITERAL, _SINGLE, _ANY = 0, 1, 2


@dataclass(frozen=True, slots=True)
class WildcardSyntax:
    """The three characters of a match string (Artemis ``wildcard-addresses``:
    ``delimiter``, ``any-words``, ``single-word``). Address and security
    settings use the default; wildcard routing (services/router/wildcard_routing.py)
    the node's configured one."""

    delimiter: str = DELIMITER
    any_words: str = ANY_WORDS
    single_word: str = SINGLE_WORD

    def problem(self) -> str | None:
        """Why these characters cannot make a match string, or None."""
        chars = {"delimiter": self.delimiter, "any-words": self.any_words, "single-word": self.single_word}
        for key, char in chars.items():
            if len(char) != 1 or char.isspace():
                return f"{key} must be one character that is not a space, got {char!r}"
        if len(set(chars.values())) != 3:
            return (f"delimiter, any-words and single-word must be three different characters, got "
                    f"{self.delimiter!r}, {self.any_words!r}, {self.single_word!r}")
        return None


DEFAULT_SYNTAX = WildcardSyntax()


def has_wildcards(pattern: str, syntax: WildcardSyntax = DEFAULT_SYNTAX) -> bool:
    return syntax.single_word in pattern or syntax.any_words in pattern


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
def compile_match(pattern: str, syntax: WildcardSyntax = DEFAULT_SYNTAX) -> re.Pattern[str]:
    """A regex that fully matches delimiter + an address the match string matches (cached:
    the resolver compiles each of its patterns once, `wildcard_matches` on every call)."""
    # Matched against delimiter + address, so every word is preceded by a
    # delimiter and the any-words wildcard can swallow zero or more whole words.
    d = re.escape(syntax.delimiter)
    parts = []
    for word in pattern.split(syntax.delimiter):
        if word == syntax.single_word:
            parts.append(rf"{d}[^{d}]+")
        elif word == syntax.any_words:
            parts.append(rf"(?:{d}[^{d}]*)*")
        else:
            parts.append(d + re.escape(word))
    return re.compile("".join(parts))


def wildcard_matches(pattern: str, address: str, syntax: WildcardSyntax = DEFAULT_SYNTAX) -> bool:
    """Whether the match string ``pattern`` (in ``syntax``) matches ``address``."""
    if not has_wildcards(pattern, syntax):
        return pattern == address
    return compile_match(pattern, syntax).fullmatch(syntax.delimiter + address) is not None


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
