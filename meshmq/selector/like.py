"""LIKE patterns matched without backtracking.

A pattern is split at `%` into fixed-length segments (literal characters and
`_`). The first segment must sit at the start, the last at the end, and each
middle one is placed at its leftmost occurrence after the previous one, which
is always optimal. Cost is O(len(value) * len(pattern)) at worst, so a
pattern like `%a%a%a%a%b` cannot stall the router the way a naive regular
expression translation (`.*a.*a.*...`) can.

Escapes follow Artemis/ActiveMQ: the escape character makes the next
character literal (any character, not only `%` and `_`), and an escape at
the very end of the pattern stands for itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_ANY_CHAR = None  # marks `_` inside a segment


class _Segment:
    """A fixed-length piece of the pattern between two `%`."""

    __slots__ = ("length", "literal", "_regex")

    def __init__(self, items: list[str | None]) -> None:
        self.length = len(items)
        if _ANY_CHAR in items:
            self.literal = None
            body = "".join("." if c is _ANY_CHAR else re.escape(c) for c in items)
            self._regex = re.compile(body, re.DOTALL)  # fixed length: no quantifiers, no backtracking
        else:
            self.literal = "".join(items)  # type: ignore[arg-type]
            self._regex = None

    def matches_at(self, value: str, pos: int) -> bool:
        if self.literal is not None:
            return value.startswith(self.literal, pos)
        return self._regex.match(value, pos) is not None

    def find(self, value: str, start: int, end: int) -> int:
        """Leftmost start of this segment lying wholly inside value[start:end], or -1."""
        if self.literal is not None:
            return value.find(self.literal, start, end)
        found = self._regex.search(value, start, end)
        return -1 if found is None else found.start()


def compile_like(pattern: str, escape: str | None) -> Callable[[str], bool]:
    """A predicate telling whether a whole string matches `pattern`."""
    pieces: list[list[str | None]] = [[]]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == escape and i + 1 < n:
            pieces[-1].append(pattern[i + 1])
            i += 2
            continue
        if c == "%":
            pieces.append([])
        else:
            pieces[-1].append(_ANY_CHAR if c == "_" else c)
        i += 1

    if len(pieces) == 1:
        only = _Segment(pieces[0])
        if only.literal is not None:
            literal = only.literal
            return lambda value: value == literal
        return lambda value: len(value) == only.length and only.matches_at(value, 0)

    head, tail = _Segment(pieces[0]), _Segment(pieces[-1])
    middle = [_Segment(p) for p in pieces[1:-1] if p]
    min_length = head.length + tail.length + sum(s.length for s in middle)

    def match(value: str) -> bool:
        end = len(value) - tail.length
        if end < 0 or len(value) < min_length:
            return False
        if not head.matches_at(value, 0) or not tail.matches_at(value, end):
            return False
        pos = head.length
        for segment in middle:
            found = segment.find(value, pos, end)
            if found < 0:
                return False
            pos = found + segment.length
        return True

    return match
