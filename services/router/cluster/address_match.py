"""Which addresses a cluster connection applies to (its `address` parameter).

As Artemis: a prefix match, a comma-separated list of prefixes, `!prefix`
excludes and exclusions win over inclusions; no wildcards; an empty string
(or only exclusions) includes every address.
"""

from __future__ import annotations

from functools import lru_cache


class AddressMatch:
    __slots__ = ("spec", "_include", "_exclude", "matches")

    def __init__(self, spec: str) -> None:
        self.spec = spec
        parts = [p.strip() for p in spec.split(",") if p.strip()]
        self._exclude = tuple(p[1:] for p in parts if p.startswith("!") and p[1:])
        self._include = tuple(p for p in parts if not p.startswith("!"))
        self.matches = lru_cache(maxsize=4096)(self._matches)

    def _matches(self, address: str) -> bool:
        if any(address.startswith(p) for p in self._exclude):
            return False
        return not self._include or any(address.startswith(p) for p in self._include)

    def __repr__(self) -> str:
        return f"AddressMatch({self.spec!r})"
