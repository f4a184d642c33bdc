"""LIKE patterns matched without backtracking, at a bounded cost per message.

A pattern is split at `%` into fixed-length segments (literal characters and
`_`). The first segment must sit at the start, the last at the end, and each
middle one is placed at its leftmost occurrence after the previous one, which
is always optimal: no backtracking, so `%a%a%a%a%b` cannot stall the router
the way a regular expression translation (`.*a.*a.*...`) can.

Finding a middle segment is where the cost lies. A segment without `_` is a
`str.find` (linear). A segment with `_` searched naively costs its length at
every position of the value: issue #26 measured `%a_a_…b%` (8,103
characters) against a 260 KB property at ~1.5 s per message, on the router's
event loop. So a long search over a long value is done bit-parallel instead:
one Python int per distinct literal character marks where the value holds it
(a `bytes.translate` and a base-2 parse, both linear C loops), and the
segment's occurrences are the AND of those masks shifted by each character's
offset; offsets of one character in arithmetic progression (`a_a_a_…`) are
ANDed by doubling, in O(log count) shifts. That pattern now costs a few
milliseconds at the 256 KiB property limit (tests/unit/test_like_cost.py).

Some patterns are costly either way (thousands of distinct characters, or
thousands of irregularly spaced ones). `cost` estimates the work per
character of the value, and the compiler rejects a selector whose LIKE
patterns together exceed MAX_LIKE_COST, so no selector can buy more than a
few milliseconds per message with a maximal property.

Escapes follow Artemis/ActiveMQ: the escape character makes the next
character literal (any character, not only `%` and `_`), and an escape at
the very end of the pattern stands for itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

_ANY_CHAR = None  # marks `_` inside a segment

# Estimated work per character of the value, in character comparisons of a
# regular-expression scan (measured on CPython 3.11: a mask costs about as
# much as a 12-character scan, a shift of a mask a tenth of one).
MASK_COST = 12.0
SHIFT_COST = 0.1
# The most one selector's LIKE patterns may cost together: at the 256 KiB
# property limit, roughly 10 ms of matching per message.
MAX_LIKE_COST = 64.0
# Below this many comparisons a plain scan beats building masks; it is what
# keeps short values (the usual case) on the scan.
SCAN_STEPS = 4096


class _Segment:
    """A fixed-length piece of the pattern between two `%`."""

    __slots__ = ("length", "literal", "_regex", "_progressions", "scan_cost", "mask_cost", "chars")

    def __init__(self, items: list[str | None]) -> None:
        self.length = len(items)
        self._progressions: list[tuple[str, int, int, int]] = []
        self.chars: frozenset[str] = frozenset()
        self.scan_cost = self.mask_cost = 0.0
        if _ANY_CHAR in items:
            self.literal = None
            body = "".join("." if c is _ANY_CHAR else re.escape(c) for c in items)
            self._regex = re.compile(body, re.DOTALL)  # fixed length: no quantifiers, no backtracking
            offsets: dict[str, list[int]] = {}
            for offset, c in enumerate(items):
                if c is not _ANY_CHAR:
                    offsets.setdefault(c, []).append(offset)
            self._progressions = [(c, *p) for c, found in offsets.items() for p in _progressions(found)]
            self.chars = frozenset(offsets)
            shifts = sum(2 * count.bit_length() for _, _, _, count in self._progressions)
            self.scan_cost = float(self.length)
            self.mask_cost = MASK_COST * len(self.chars) + SHIFT_COST * shifts
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
        last = end - self.length  # the last start that still fits
        if last < start:
            return -1
        if (last - start + 1) * self.length <= SCAN_STEPS or self.scan_cost <= self.mask_cost:
            found = self._regex.search(value, start, end)
            return -1 if found is None else found.start()
        return self._find_by_masks(start, last, _Masks(value))

    def _find_by_masks(self, start: int, last: int, masks: _Masks) -> int:
        # Bit n-1-i of a mask stands for value[i] (int(..., 2) reads the first
        # character as the highest bit), so `mask << j` puts value[i+j] at i's bit.
        n = masks.length
        hits = -1
        for c, first, step, count in self._progressions:
            shifted = _and_progression(masks.of(c), step, count) << first
            hits &= shifted
            if not hits:
                return -1
        window = hits & ((1 << (n - start)) - 1)  # drop starts before `start`
        top = window.bit_length() - 1
        if top < n - 1 - last:
            return -1
        return n - 1 - top


def _progressions(offsets: list[int]) -> list[tuple[int, int, int]]:
    """Sorted offsets as maximal (first, step, count) arithmetic progressions."""
    runs: list[tuple[int, int, int]] = []
    i = 0
    while i < len(offsets):
        if i + 1 == len(offsets):
            runs.append((offsets[i], 0, 1))
            break
        step = offsets[i + 1] - offsets[i]
        j = i + 1
        while j + 1 < len(offsets) and offsets[j + 1] - offsets[j] == step:
            j += 1
        runs.append((offsets[i], step, j - i + 1))
        i = j + 1
    return runs


def _and_progression(mask: int, step: int, count: int) -> int:
    """AND of `mask << (t * step)` for t in range(count), in O(log count) shifts."""
    result = -1
    block, span, offset = mask, 1, 0  # block = AND of the first `span` shifts
    while count:
        if count & 1:
            result &= block << offset
            offset += span * step
        count >>= 1
        if count:
            block &= block << (span * step)
            span *= 2
    return result


class _Masks:
    """One value's bit masks of where each character occurs, built on first use.

    A segment's search makes its own; costs are estimated per segment (a
    character in two segments is counted twice), which this matches.
    """

    __slots__ = ("length", "_value", "_encoded", "_exact", "_made")

    def __init__(self, value: str) -> None:
        self.length = len(value)
        self._value = value
        self._encoded = b""
        self._exact = True
        self._made: dict[str, int] = {}

    def of(self, c: str) -> int:
        mask = self._made.get(c)
        if mask is None:
            if not self._made:
                try:
                    self._encoded = self._value.encode("latin-1")
                except UnicodeEncodeError:  # other characters become '?', told apart in `_build`
                    self._encoded, self._exact = self._value.encode("latin-1", "replace"), False
            mask = self._made[c] = self._build(c)
        return mask

    def _build(self, c: str) -> int:
        code = ord(c)
        if code < 256 and (self._exact or c != "?"):
            return _positions(self._encoded, code)
        if self._exact:  # a character outside latin-1 cannot occur in this value
            return 0
        # c is '?' or outside latin-1: it became '?' in the encoding, along with
        # every other character outside latin-1; a second encoding tells it apart.
        marked = self._value.replace(c, "A").encode("latin-1", "replace")
        return _positions(marked, ord("A")) & _positions(self._encoded, ord("?"))


_TABLES: dict[int, bytes] = {}


def _positions(encoded: bytes, code: int) -> int:
    """An int whose bit len-1-i is set where encoded[i] == code."""
    table = _TABLES.get(code)
    if table is None:
        table = _TABLES[code] = bytes(0x31 if b == code else 0x30 for b in range(256))
    return int(encoded.translate(table), 2) if encoded else 0


class LikeMatcher(Protocol):
    """A predicate telling whether a whole string matches a LIKE pattern.

    `cost` estimates the work per character of the value (see MAX_LIKE_COST);
    it rides on the function itself so a match is one plain call.
    """

    cost: float

    def __call__(self, value: str) -> bool: ...


def _with_cost(match: Callable[[str], bool], cost: float) -> LikeMatcher:
    match.cost = cost  # type: ignore[attr-defined]
    return match  # type: ignore[return-value]


def compile_like(pattern: str, escape: str | None) -> LikeMatcher:
    """A matcher telling whether a whole string matches `pattern`."""
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
            return _with_cost(lambda value: value == literal, 0.0)
        return _with_cost(lambda value: len(value) == only.length and only.matches_at(value, 0), 0.0)

    head, tail = _Segment(pieces[0]), _Segment(pieces[-1])
    middle = [_Segment(p) for p in pieces[1:-1] if p]
    min_length = head.length + tail.length + sum(s.length for s in middle)
    cost = sum(min(s.scan_cost, s.mask_cost) for s in middle)

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

    return _with_cost(match, cost)
