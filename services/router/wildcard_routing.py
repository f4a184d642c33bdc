"""Wildcard routing (Artemis ``wildcard-addresses``): a queue on ``news.#`` gets
what is sent to ``news.europe``.

As in Artemis, an address whose name has a wildcard word (``news.#``,
``news.*.sport``) is a *wildcard address*: its queues are bound to every
matching concrete address, existing and future, and routing there treats them
as that address's own (multicast: each gets a copy; anycast: they join the
round robin). A message sent to the wildcard address itself goes to that
address's own queues only. Wildcard addresses are not bound to each other.

The binding is computed when it can change — a concrete address is created,
a wildcard address's queues change — and kept on each concrete `Address` as
`bound` (addresses.py), so a send costs nothing more while no wildcard queue
matches its address. Matching is `meshmq.config.wildcards` in the node's
configured syntax; with ``routing-enabled: false`` (``syntax`` None) every
name is literal, as it is without this module.
"""

from __future__ import annotations

from meshmq.config.wildcards import WildcardSyntax, has_wildcards, wildcard_matches

from .addresses import Address


class WildcardRouting:
    """Which addresses are wildcard addresses, and the queues each concrete
    address gets from them. The broker owns the addresses; this keeps their
    `wildcard` and `bound` fields current when it is told of a change."""

    def __init__(self, syntax: WildcardSyntax | None) -> None:
        self.syntax = syntax
        self._wildcards: dict[str, Address] = {}

    def is_wildcard(self, name: str) -> bool:
        return self.syntax is not None and has_wildcards(name, self.syntax)

    def matches(self, pattern: str, address: str) -> bool:
        """Whether wildcard address `pattern` binds to concrete `address`."""
        return self.syntax is not None and wildcard_matches(pattern, address, self.syntax)

    def rebuild(self, addresses: dict[str, Address]) -> None:
        """Every binding from scratch (after recovery)."""
        self._wildcards = {}
        for addr in addresses.values():
            if self.is_wildcard(addr.name):
                addr.mark_wildcard()
                self._wildcards[addr.name] = addr
        for addr in addresses.values():
            if not addr.wildcard:
                self.address_added(addr)

    def address_added(self, addr: Address) -> None:
        """A new address: register a wildcard one, bind a concrete one to the wildcard queues it matches."""
        if self.is_wildcard(addr.name):
            addr.mark_wildcard()
            self._wildcards[addr.name] = addr
        elif self._wildcards:
            addr.set_bound(self._queues_for(addr.name))

    def address_removed(self, addr: Address) -> None:
        self._wildcards.pop(addr.name, None)

    def queues_changed(self, wildcard: Address, addresses: dict[str, Address]) -> None:
        """A wildcard address's queues changed: rebind every concrete address it matches."""
        for addr in addresses.values():
            if not addr.wildcard and self.matches(wildcard.name, addr.name):
                addr.set_bound(self._queues_for(addr.name))

    def _queues_for(self, name: str) -> tuple:
        """The queues of every wildcard address matching concrete address `name`, in name order."""
        return tuple(
            q for pattern in sorted(self._wildcards) if self.matches(pattern, name)
            for q in self._wildcards[pattern].queues.values()
        )
