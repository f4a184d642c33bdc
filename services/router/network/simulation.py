"""Many `NetworkDemand` nodes wired together in one process, with the links'
demand messages delivered in order until the network is quiet: what the unit
tests and `bench/tree.py` drive, so both count demand messages and network
subscriptions the same way. The runtime does with gRPC what `deliver` does
here with a queue.

A link between nodes a and b is "to-b" on a and "to-a" on b.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from .demand import CHILD, PARENT, PEER, Changes, LinkPolicy, LinkSpec, NetworkDemand, OfferDelta

# Far beyond any test or bench topology's messages per event: reaching it means demand is going round.
MAX_MESSAGES_PER_EVENT = 10_000_000


@dataclass
class Traffic:
    """What one event caused across the network."""

    messages: int = 0  # demand messages sent (one per link per event)
    received_by: Counter[str] = field(default_factory=Counter)  # node -> demand messages it received
    subscriptions_created: int = 0
    subscriptions_removed: int = 0
    created_on: Counter[str] = field(default_factory=Counter)  # node -> subscriptions it created
    stranded: set[tuple[str, str]] = field(default_factory=set)  # (node, link) whose sf queue goes back


def link_to(peer: str) -> str:
    return f"to-{peer}"


def peer_of(link_id: str) -> str:
    return link_id.removeprefix("to-")


class Network:
    def __init__(self) -> None:
        self.nodes: dict[str, NetworkDemand] = {}
        self.neighbours: dict[str, set[str]] = {}  # node -> the nodes it has a link to
        self.down: set[tuple[str, str]] = set()  # (node, peer): that node's link to peer is down

    def node(self, node_id: str) -> NetworkDemand:
        """The node, created on first use."""
        found = self.nodes.get(node_id)
        if found is None:
            found = self.nodes[node_id] = NetworkDemand(node_id)
        return found

    def connect(self, a: str, b: str, policy: LinkPolicy = LinkPolicy(), *, duplex: bool = False,
                b_policy: LinkPolicy | None = None) -> Traffic:
        """A network connector defined on `a` to `b`: messages flow a→b and demand b→a; with `duplex`
        both ways. `b_policy` is what b's end follows (duplex: a's policy unless given)."""
        ends = (LinkSpec(link_to(b), b, PEER, policy, offers=duplex, subscribes=True),
                LinkSpec(link_to(a), a, PEER, b_policy or policy, offers=True, subscribes=duplex))
        return self._link(a, b, *ends)

    def connect_tree(self, child: str, parent: str, policy: LinkPolicy = LinkPolicy(tree=True)) -> Traffic:
        """A tree connector from `child` (a leaf or branch) to its `parent`: demand and messages both ways."""
        return self._link(child, parent, LinkSpec(link_to(parent), parent, PARENT, policy, True, True),
                          LinkSpec(link_to(child), child, CHILD, policy, True, True))

    def move(self, leaf: str, parent: str, incarnation: int) -> Traffic:
        """`leaf` starts again (`incarnation`, with no consumers) under another `parent`. Its old
        parent keeps its link, down — it cannot tell a move from an outage — so what it holds from
        the leaf stays there, and nothing it sends over that link arrives."""
        for old in self.neighbours.pop(leaf, set()):
            self.down.add((old, leaf))
        self.nodes[leaf] = NetworkDemand(leaf, incarnation)
        if (parent, leaf) not in self.down:
            return self.connect_tree(leaf, parent)
        # Back under a parent that kept its link: the link comes up again, and each end sends its whole
        # offer (the parent forgets what the leaf offered before).
        self.down.discard((parent, leaf))
        self.neighbours[leaf] = {parent}
        traffic = self.deliver(parent, self.nodes[parent].reset(link_to(leaf)))
        spec = LinkSpec(link_to(parent), parent, PARENT, LinkPolicy(tree=True), True, True)
        self.deliver(leaf, self.nodes[leaf].add_link(spec), traffic)
        full = OfferDelta(added=self.nodes[parent].offer(link_to(leaf)))
        return self.deliver(leaf, self.nodes[leaf].received(link_to(parent), full), traffic)

    def disconnect(self, a: str, b: str) -> Traffic:
        """The link between a and b taken out of both nodes' configuration."""
        traffic = Traffic()
        changes = [(a, self.nodes[a].remove_link(link_to(b))), (b, self.nodes[b].remove_link(link_to(a)))]
        self.neighbours[a].discard(b)
        self.neighbours[b].discard(a)
        for node_id, change in changes:
            self.deliver(node_id, change, traffic)
        return traffic

    def deliver(self, origin: str, changes: Changes, traffic: Traffic | None = None) -> Traffic:
        """Carries `changes` (an event's result on `origin`) out: each offer delta is one demand message
        to the peer, whose own changes are carried out in turn, until nothing is left to send."""
        traffic = traffic or Traffic()
        pending = deque([(origin, changes)])
        while pending:
            node_id, change = pending.popleft()
            for delta in change.subscriptions.values():
                traffic.subscriptions_created += len(delta.added)
                traffic.created_on[node_id] += len(delta.added)
                traffic.subscriptions_removed += len(delta.removed)
            traffic.stranded.update((node_id, link_id) for link_id in change.stranded)
            for link_id, offer in change.offers.items():
                peer = peer_of(link_id)
                if (node_id, peer) in self.down:
                    continue
                traffic.messages += 1
                traffic.received_by[peer] += 1
                if traffic.messages > MAX_MESSAGES_PER_EVENT:
                    raise RuntimeError(f"demand from {origin} still travelling after {traffic.messages} messages")
                pending.append((peer, self.nodes[peer].received(link_to(node_id), offer)))
        return traffic

    def _link(self, a: str, b: str, a_end: LinkSpec, b_end: LinkSpec) -> Traffic:
        traffic = Traffic()
        changes = [(a, self.node(a).add_link(a_end)), (b, self.node(b).add_link(b_end))]
        self.neighbours.setdefault(a, set()).add(b)
        self.neighbours.setdefault(b, set()).add(a)
        for node_id, change in changes:
            self.deliver(node_id, change, traffic)
        return traffic
