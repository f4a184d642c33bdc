"""Remote bindings: the queues other nodes offered over links, as routing reads them.

A link's target offers a snapshot of its bindings (its own queues, and those
it reaches, up to the source's max-hops) and a new one whenever they change;
`RemoteBindings.apply` replaces what that link offered. Routing reads one
address's groups — queue name to its remote members, in node-name order —
from `Address.remote`, which this registry keeps current.

A queue reachable over two links (a symmetric cluster with max-hops 2) is
kept once, through the link with the fewest hops.

A queue offered on a wildcard address (``news.#``, wildcard_routing.py) is
demand for every address it matches: `for_address("news.europe")` holds the
groups of ``news.europe`` and of each offered wildcard address matching it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Protocol

from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.selector import Selector, compile_selector
from meshmq.v1 import cluster_pb2 as cpb



class Link(Protocol):
    """What bindings and routing ask of the link a remote binding is reached
    through (cluster/bridge.py's Bridge; named by this so that routing, below
    the bridge, never imports it)."""

    name: str
    local_node_id: str
    load_balancing: str
    routed: int

    def matches(self, address: str) -> bool: ...

    def store_and_forward_queue(self): ...

NO_GROUPS: MappingProxyType = MappingProxyType({})
# Ends the key (``node_id/queue``) of a temporary queue's binding, so the
# forwarded message names it as temporary (receiver.py); no queue name holds
# a control character (addresses.check_name).
TEMPORARY_MARK = "\x1f"


class Wildcards(Protocol):
    """Which addresses are wildcard addresses and what they match (wildcard_routing.py)."""

    def is_wildcard(self, name: str) -> bool: ...

    def matches(self, pattern: str, address: str) -> bool: ...


class _NoWildcards:
    def is_wildcard(self, name: str) -> bool:
        return False

    def matches(self, pattern: str, address: str) -> bool:
        return False


def _selector(text: str, cache: dict[str, Selector | None]) -> Selector | None:
    if not text:
        return None
    if text not in cache:
        try:
            cache[text] = compile_selector(text)
        except Exception:  # the other node accepted it; a filter we cannot read matches nothing
            cache[text] = _NEVER
    return cache[text]


class _Never:
    def matches(self, lookup) -> bool:
        return False


_NEVER = _Never()


class RemoteBinding:
    """A queue on another node, reached through `link`."""

    __slots__ = ("node_id", "node_name", "queue", "address", "routing_type", "filter_text", "selector",
                 "consumer_filters", "consumer_selectors", "hops", "link", "temporary", "key")

    def __init__(self, b: cpb.ClusterBinding, link: Link, cache: dict[str, Selector | None]) -> None:
        self.node_id = b.node_id
        self.node_name = b.node_name
        self.queue = b.queue
        self.address = b.address
        self.routing_type = b.routing_type
        self.filter_text = b.filter
        self.selector = _selector(b.filter, cache)
        self.consumer_filters = tuple(b.consumer_filters)
        self.consumer_selectors = tuple(_selector(f, cache) for f in b.consumer_filters)
        self.hops = b.hops
        self.link = link
        self.temporary = b.temporary
        # What a forwarded message's route names it by (and `find` finds it by).
        self.key = f"{b.node_id}/{b.queue}" + (TEMPORARY_MARK if b.temporary else "")

    def accepts(self, msg) -> bool:
        return self.selector is None or self.selector.matches(msg.lookup)

    def has_consumer_for(self, msg) -> bool:
        return any(s is None or s.matches(msg.lookup) for s in self.consumer_selectors)

    def to_proto(self, hops: int) -> cpb.ClusterBinding:
        return cpb.ClusterBinding(
            node_id=self.node_id, node_name=self.node_name, queue=self.queue, address=self.address,
            routing_type=self.routing_type, filter=self.filter_text, consumer_filters=self.consumer_filters, hops=hops,
            temporary=self.temporary,
        )


class RemoteBindings:
    """Every remote binding this node knows, by link; `on_change(addresses)`
    is told which addresses' groups changed (the broker refreshes them)."""

    def __init__(self, on_change: Callable[[set[str]], None], wildcards: Wildcards = _NoWildcards()) -> None:
        self._by_link: dict[Link, dict[str, RemoteBinding]] = {}
        self._best: dict[str, RemoteBinding] = {}  # key -> the binding routing uses
        self._groups: dict[str, dict[str, tuple[RemoteBinding, ...]]] = {}
        self._selectors: dict[str, Selector | None] = {}
        self._on_change = on_change
        self._wildcards = wildcards
        self._wildcard_groups: set[str] = set()  # addresses in _groups that are wildcard addresses
        # Round-robin positions of addresses this node does not have, routed to
        # their remote groups only (SendPipeline.forward_only); an existing
        # address keeps its own (Address.cluster_round_robin).
        self._positions: dict[str, dict[str, int]] = {}

    def apply(self, link: Link, offered: Iterable[cpb.ClusterBinding]) -> None:
        """Replace what `link` offers (a new snapshot; empty: the link is gone)."""
        own = {}
        for b in offered:
            if b.node_id == link.local_node_id or b.queue.startswith(INTERNAL_PREFIX):
                continue  # our own queues coming back round a ring, or another node's internals
            if not link.matches(b.address):
                continue
            rb = RemoteBinding(b, link, self._selectors)
            own[rb.key] = rb
        before = self._by_link.get(link, {})
        if own:
            self._by_link[link] = own
        else:
            self._by_link.pop(link, None)
        touched = {rb.address for rb in before.values()} | {rb.address for rb in own.values()}
        if touched:
            self._rebuild(touched)

    def drop(self, link: Link) -> None:
        self.apply(link, ())

    def _rebuild(self, addresses: set[str]) -> None:
        best: dict[str, RemoteBinding] = {}
        for bindings in self._by_link.values():
            for key, rb in bindings.items():
                have = best.get(key)
                if have is None or (rb.hops, rb.link.name) < (have.hops, have.link.name):
                    best[key] = rb
        self._best = best
        for address in addresses:
            groups: dict[str, list[RemoteBinding]] = {}
            for rb in best.values():
                if rb.address == address:
                    groups.setdefault(rb.queue, []).append(rb)
            if groups:
                self._groups[address] = {
                    name: tuple(sorted(members, key=lambda m: (m.node_name, m.node_id)))
                    for name, members in groups.items()
                }
            else:
                self._groups.pop(address, None)
            if address in self._groups and self._wildcards.is_wildcard(address):
                self._wildcard_groups.add(address)
            else:
                self._wildcard_groups.discard(address)
        if self._positions:  # those of addresses no remote binding makes known any more go
            for address in [a for a in self._positions if not self.for_address(a)]:
                del self._positions[address]
        self._on_change(addresses)

    def for_address(self, address: str):
        """Queue name -> its remote members, for `address` (read-only; empty when none)."""
        groups = self._groups.get(address)
        if self._wildcard_groups and not self._wildcards.is_wildcard(address):
            matching = [w for w in sorted(self._wildcard_groups) if self._wildcards.matches(w, address)]
            if matching:
                merged = dict(groups or {})
                for w in matching:
                    for name, members in self._groups[w].items():
                        merged[name] = merged.get(name, ()) + members
                groups = merged
        return MappingProxyType(groups) if groups else NO_GROUPS

    def positions(self, address: str) -> dict[str, int]:
        """The round-robin positions (queue name -> position) of `address`,
        which this node does not have: kept while remote bindings make it known."""
        return self._positions.setdefault(address, {})

    def find(self, key: str) -> RemoteBinding | None:
        """The binding routing uses for ``node_id/queue`` (TEMPORARY_MARK after a temporary queue's)."""
        return self._best.get(key)

    def all(self) -> list[RemoteBinding]:
        return list(self._best.values())

    def through(self, link: Link) -> list[RemoteBinding]:
        return list(self._by_link.get(link, {}).values())
