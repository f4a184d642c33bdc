"""The one exception a bad selector produces.

The router turns it into an `INVALID_SELECTOR` gRPC status; the position lets a
client point at the offending character instead of guessing.
"""

from __future__ import annotations


class SelectorError(ValueError):
    """A selector that cannot be compiled.

    `position` is the 0-based character offset of the offending token (or
    `len(text)` when the text ended too early); `reason` says what was wrong
    without repeating the position.
    """

    def __init__(self, text: str, position: int, reason: str) -> None:
        super().__init__(f"invalid selector at position {position}: {reason}")
        self.text = text
        self.position = position
        self.reason = reason

    def __reduce__(self):  # keep the attributes across pickling (process pools, test runners)
        return (type(self), (self.text, self.position, self.reason))
