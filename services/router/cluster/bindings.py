"""Remote bindings: the queues other nodes offered over links, as routing reads them.

A link's target offers a snapshot of its bindings (its own queues, and those
it reaches, up to the source's max-hops) and a new one whenever they change;
`RemoteBindings.apply` replaces what that link offered. Routing reads one
address's groups — queue name to its remote members, in node-name order —
from `Address.remote`, which this registry keeps current.

A queue reachable over two links (a symmetric cluster with max-hops 2) is
kept once, through the link with the fewest hops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import TYPE_CHECKING

from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.selector import Selector, compile_selector
from meshmq.v1 import cluster_pb2 as cpb

if TYPE_CHECKING:
    from .bridge import Bridge

NO_GROUPS: MappingProxyType = MappingProxyType({})


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
                 "consumer_filters", "consumer_selectors", "hops", "link")

    def __init__(self, b: cpb.ClusterBinding, link: Bridge, cache: dict[str, Selector | None]) -> None:
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

    @property
    def key(self) -> str:
        return f"{self.node_id}/{self.queue}"

    def accepts(self, msg) -> bool:
        return self.selector is None or self.selector.matches(msg.lookup)

    def has_consumer_for(self, msg) -> bool:
        return any(s is None or s.matches(msg.lookup) for s in self.consumer_selectors)

    def to_proto(self, hops: int) -> cpb.ClusterBinding:
        return cpb.ClusterBinding(
            node_id=self.node_id, node_name=self.node_name, queue=self.queue, address=self.address,
            routing_type=self.routing_type, filter=self.filter_text, consumer_filters=self.consumer_filters, hops=hops,
        )


class RemoteBindings:
    """Every remote binding this node knows, by link; `on_change(addresses)`
    is told which addresses' groups changed (the broker refreshes them)."""

    def __init__(self, on_change: Callable[[set[str]], None]) -> None:
        self._by_link: dict[Bridge, dict[str, RemoteBinding]] = {}
        self._best: dict[str, RemoteBinding] = {}  # key -> the binding routing uses
        self._groups: dict[str, dict[str, tuple[RemoteBinding, ...]]] = {}
        self._selectors: dict[str, Selector | None] = {}
        self._on_change = on_change

    def apply(self, link: Bridge, offered: Iterable[cpb.ClusterBinding]) -> None:
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

    def drop(self, link: Bridge) -> None:
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
        self._on_change(addresses)

    def for_address(self, address: str):
        """Queue name -> its remote members, for `address` (read-only; empty when none)."""
        groups = self._groups.get(address)
        return MappingProxyType(groups) if groups else NO_GROUPS

    def find(self, key: str) -> RemoteBinding | None:
        """The binding routing uses for ``node_id/queue``."""
        return self._best.get(key)

    def all(self) -> list[RemoteBinding]:
        return list(self._best.values())

    def through(self, link: Bridge) -> list[RemoteBinding]:
        return list(self._by_link.get(link, {}).values())
