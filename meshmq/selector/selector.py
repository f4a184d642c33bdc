"""The public face of the package: compile once, match many messages."""

from __future__ import annotations

from .compiler import Lookup, compile_tree
from .parser import parse


class Selector:
    """A compiled message selector; immutable, so one instance can serve every consumer and thread."""

    __slots__ = ("text", "identifiers", "_evaluate")

    def __init__(self, text: str, identifiers: frozenset[str], evaluate) -> None:
        self.text = text
        self.identifiers = identifiers  # lets the router skip decoding properties a selector never reads
        self._evaluate = evaluate

    def matches(self, lookup: Lookup) -> bool:
        """Whether a message matches: True only when the selector is TRUE, not FALSE or UNKNOWN.

        `lookup(name)` returns a property or header value (str, int, float,
        bool, bytes) or None when absent. It is called only for identifiers
        the evaluation reaches (AND/OR short-circuit). Ill-typed operands make
        UNKNOWN rather than raising; an exception raised by `lookup` itself is
        the caller's and propagates.
        """
        return self._evaluate(lookup) is True

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"


def compile_selector(text: str) -> Selector:
    """Parse and compile `text`, raising SelectorError (with a position) if it is not a valid selector.

    Empty or whitespace-only text is an error here; JMS treats an empty
    selector as "no selector", and that choice belongs to the caller.
    """
    tree, identifiers = parse(text)
    return Selector(text, identifiers, compile_tree(text, tree))
