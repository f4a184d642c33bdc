"""Demand propagation for network connectors and the tree connector, as a
pure decider: link and consumer events in, what each link offers and which
network subscriptions this node holds out. No I/O, no clock, no asyncio: the
runtime carries the decisions out (sends each link's offer delta to its peer
as one demand message, creates and removes the forwarding subscriptions), and
`bench/tree.py` drives ten thousand of these in one process.

Demand is interest in a destination (a consumer on queue Q, a subscription on
topic T). It travels over links opposite to the messages: a node offers its
demand to a peer, and the peer, on receiving it, holds a *network
subscription* for that link — it forwards matching messages to us.

What a node offers over link L (only when `L.offers`), destination by destination:

* its local demand that passes L's policy: the link's queue/topic filter
  (ActiveMQ's dynamicallyIncluded/excluded destinations, with its wildcards),
  temporary destinations only with `bridge_temp_destinations`, a durable
  subscription without a consumer only without `dynamic_only`;
* demand received over another link R, when R may feed L — between network
  connectors (PEER) any other link, within a tree a CHILD's demand goes only
  to the PARENT and the PARENT's only to the CHILDren (AMQ-2875: a branch never
  spills a store's demand to the other stores), never across between a tree
  link and a network connector — and the item may go on: L's peer is not on
  its path (the self-avoiding paths of ActiveMQ's broker path: demand never
  returns to a node it crossed), and for a network connector the item has
  crossed fewer than `consumer_ttl` links (networkTTL; a tree ignores it).

With `conduit_subscriptions` a destination's items fold into one offer: the
OR of their selectors (each parenthesised; none if any item has none — the
guide's stuck-message case is fixed by carrying the selectors rather than
dropping them), the union of their origins, the fewest hops and the path of
the shortest item plus this node. Without, one offer per origin consumer.

The subscriptions a node holds for link L (only when `L.subscribes`) are what
L's peer offered, passing this node's filter for L, each with priority 0 or,
with `decrease_network_consumer_priority`, -5 for one hop and -1 per further
hop (the shortest route wins while it has credit), plus L's statically
included destinations. With `suppress_duplicate_queue_subscriptions` (or the
topic one) an item whose origins all reach this node more directly over
another link (fewer hops; ties: the lower link id) makes no subscription, so
a consumer has one route from each node; when the better item goes, the
suppressed one comes back.

A leaf that moves to another branch (AMQ-2875: a change of its uri) keeps
its node id but starts a new incarnation (the runtime derives it from the
epoch of the node's store, which each start raises). Every demand item carries the incarnation of each origin's node
(`attached`), and every node remembers the newest incarnation it has seen of
each node over its tree links. Demand from an older incarnation than one
seen elsewhere is *superseded*: not offered on, no subscription for it — so
the node that sees both (the root, for a move between its branches) prefers
the newer attachment at once. It tells the link that brought the older
demand (`OfferDelta.moved`), so the old branch drops the leaf's stale demand
too: nothing is routed there for the leaf any more. What waited there for
the leaf goes back up: the old branch holds a *return* subscription toward
its parent for each queue a superseded item named (`replay`: it takes back
messages that came from the parent, while the queue has no local consumer,
and never a message that has left this node before — so a message is
replayed at most once per node and cannot circle), and the runtime moves
what the leaf's store-and-forward queue held back into those queues
(`Changes.stranded`). A notice goes only toward a holder of older demand and
raises the receiver's newest to the same incarnation, so it is never sent
back: loop-free. Registrations never cause one: bench/tree.py's figures are
those of a tree without moves.

Every event returns only what changed, and touches only the destination it
concerns and the links that destination may flow to: a store's registration
at a leaf of a tree walks neither its branch's thousand children nor the
branch's other demand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from meshmq.config.destination_wildcards import DestinationFilter, destination_matches

QUEUE, TOPIC = "queue", "topic"
PARENT, CHILD, PEER = "parent", "child", "peer"  # what the peer is to this node: tree links PARENT/CHILD, connectors PEER

# ActiveMQ's decreaseNetworkConsumerPriority: a network subscription one hop away, then -1 per further hop.
NETWORK_PRIORITY = -5

# Which links' received demand may be offered over a link of a role: a tree moves demand up from the
# children and down from the parent; network connectors pass it among themselves.
FED_BY = {PARENT: CHILD, CHILD: PARENT, PEER: PEER}


@dataclass(frozen=True, slots=True)
class Destination:
    kind: str  # QUEUE or TOPIC
    name: str

    def __post_init__(self) -> None:
        if self.kind not in (QUEUE, TOPIC):
            raise ValueError(f"destination {self.name!r}: kind {self.kind!r} is neither {QUEUE!r} nor {TOPIC!r}")

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True, slots=True)
class LinkPolicy:
    """What one link follows; ActiveMQ's network connector options in snake_case, with its defaults."""

    consumer_ttl: int = 1  # networkTTL for demand: how many links demand may cross
    conduit_subscriptions: bool = True
    dynamic_only: bool = False  # True: a durable subscription is demand only while it has a consumer
    decrease_network_consumer_priority: bool = False
    suppress_duplicate_queue_subscriptions: bool = False
    suppress_duplicate_topic_subscriptions: bool = True
    bridge_temp_destinations: bool = True  # False: temporary queues are never demand over this link
    queues: DestinationFilter = DestinationFilter()  # dynamicallyIncluded/excluded queues
    topics: DestinationFilter = DestinationFilter()
    static_queues: tuple[str, ...] = ()  # staticallyIncludedDestinations: exact names, forwarded without demand
    static_topics: tuple[str, ...] = ()
    tree: bool = False  # a tree link: TTL ignored, tree rules apply

    def __post_init__(self) -> None:
        if self.consumer_ttl < 1:
            raise ValueError(f"consumer_ttl {self.consumer_ttl}: demand must be able to cross at least one link")


@dataclass(frozen=True, slots=True)
class LinkSpec:
    link_id: str  # unique per node
    peer: str  # the peer's node id
    role: str  # PARENT | CHILD | PEER: what the peer is to this node
    policy: LinkPolicy
    offers: bool  # this node offers demand over it (the peer forwards messages to us)
    subscribes: bool  # this node forwards to the peer (takes demand from it, holds subscriptions)

    def __post_init__(self) -> None:
        if self.role not in FED_BY:
            raise ValueError(f"link {self.link_id!r}: role {self.role!r} is none of {PARENT!r}, {CHILD!r}, {PEER!r}")
        if self.policy.tree != (self.role != PEER):
            raise ValueError(f"link {self.link_id!r}: a {self.role} link must have policy.tree={self.role != PEER}")


@dataclass(frozen=True, slots=True)
class Demand:
    """One item of demand as offered over a link."""

    key: str  # stable per link offer: conduit "queue:ORDERS"; without conduit one per origin consumer
    destination: Destination
    selector: str  # "" = everything; conduit: the OR of its consumers' selectors, each parenthesised
    path: tuple[str, ...]  # node ids the demand crossed, origin first, the offering node last
    hops: int  # links crossed when it arrives at the peer (a local consumer offered: 1)
    origins: frozenset[str]  # the consumers folded in, as "node_id/consumer_id"
    attached: frozenset[tuple[str, int]] = frozenset()  # (node id, incarnation) of the origins' nodes


@dataclass(frozen=True, slots=True)
class Subscription:
    """A network subscription this node holds for a link: it forwards matching messages to the peer."""

    key: str
    destination: Destination
    selector: str
    priority: int  # 0, or with decreaseNetworkConsumerPriority: -5 for one hop, -1 more per further hop
    static: bool = False
    replay: bool = False  # a return subscription: may take back what came from the peer (module docstring)


@dataclass
class OfferDelta:
    """What to send a peer: items added or updated (an update keeps its key) and keys withdrawn; on a
    tree link, nodes whose older demand the peer holds is superseded (node id -> newest incarnation)."""

    added: list[Demand] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    moved: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.moved)

    def merge(self, later: OfferDelta) -> None:
        _merge_delta(self, later)
        for node, incarnation in later.moved.items():
            self.moved[node] = max(incarnation, self.moved.get(node, incarnation))


@dataclass
class SubscriptionDelta:
    """Network subscriptions created (or updated, same key) and removed on this node for one link."""

    added: list[Subscription] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)

    def merge(self, later: SubscriptionDelta) -> None:
        _merge_delta(self, later)


def _merge_delta(earlier: OfferDelta | SubscriptionDelta, later: OfferDelta | SubscriptionDelta) -> None:
    """`later` applied after `earlier`, as one delta: a later add is an update that cancels an earlier
    removal; a later removal cancels an earlier add and is kept (the key may have existed before both)."""
    gone, fresh = set(later.removed), {item.key for item in later.added}
    earlier.added[:] = [item for item in earlier.added if item.key not in gone and item.key not in fresh]
    earlier.added.extend(later.added)
    already = set(earlier.removed)
    earlier.removed[:] = [key for key in earlier.removed if key not in fresh]
    earlier.removed.extend(key for key in later.removed if key not in already)


@dataclass
class Changes:
    """What one event changed, per link; empty (false) when nothing did."""

    offers: dict[str, OfferDelta] = field(default_factory=dict)  # link_id -> one demand message to the peer
    subscriptions: dict[str, SubscriptionDelta] = field(default_factory=dict)  # link_id -> on this node
    # Links whose peer's demand was superseded (a leaf moved away): while such a link is down, what
    # waits in its store-and-forward queue for a queue it no longer subscribes to goes back to that queue.
    stranded: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.offers or self.subscriptions or self.stranded)

    def merge(self, other: Changes) -> Changes:
        """`other` (a later event's changes) folded into these; returns self."""
        for link_id, offer in other.offers.items():
            self.offers.setdefault(link_id, OfferDelta()).merge(offer)
        for link_id, subs in other.subscriptions.items():
            self.subscriptions.setdefault(link_id, SubscriptionDelta()).merge(subs)
        self.stranded |= other.stranded
        self.offers = {k: v for k, v in self.offers.items() if v}
        self.subscriptions = {k: v for k, v in self.subscriptions.items() if v}
        return self


@dataclass(frozen=True, slots=True)
class _Local:
    """A local consumer, with its demand as an item that has crossed no link yet (path (), hops 0), so
    local and received demand fold alike."""

    demand: Demand
    durable_subscription: bool
    active: bool
    temporary: bool


def _destinations(policy: LinkPolicy, kind: str) -> DestinationFilter:
    return policy.queues if kind == QUEUE else policy.topics


def _suppresses_duplicates(policy: LinkPolicy, kind: str) -> bool:
    return policy.suppress_duplicate_queue_subscriptions if kind == QUEUE else policy.suppress_duplicate_topic_subscriptions


def _priority(policy: LinkPolicy, hops: int) -> int:
    return NETWORK_PRIORITY - (hops - 1) if policy.decrease_network_consumer_priority else 0


def _or_selectors(items: list[Demand]) -> str:
    """The OR of the items' selectors, in the order of their first origin (stable across re-offers)."""
    selectors = [item.selector for item in sorted(items, key=lambda item: min(item.origins))]
    if "" in selectors:
        return ""
    distinct = list(dict.fromkeys(selectors))
    return distinct[0] if len(distinct) == 1 else " OR ".join(f"({s})" for s in distinct)


def _static_subscriptions(policy: LinkPolicy) -> list[Subscription]:
    """The link's statically included destinations, less its excluded ones (exclusions win, as in ActiveMQ)."""
    found = []
    for kind, names in ((QUEUE, policy.static_queues), (TOPIC, policy.static_topics)):
        excluded = _destinations(policy, kind).excluded
        for name in names:
            if not any(destination_matches(pattern, name) for pattern in excluded):
                dest = Destination(kind, name)
                found.append(Subscription(f"static:{dest}", dest, "", 0, static=True))
    return found


def _diff(old: dict, new: dict) -> tuple[list, list[str]]:
    return [item for key, item in new.items() if old.get(key) != item], [key for key in old if key not in new]


class NetworkDemand:
    """One node's demand state over its links (module docstring for the rules)."""

    def __init__(self, node_id: str, incarnation: int = 0) -> None:
        self.node_id = node_id
        self.incarnation = incarnation  # this node's, carried by its own demand (a move supersedes older ones)
        self._links: dict[str, LinkSpec] = {}
        self._by_role: dict[str, set[str]] = {role: set() for role in FED_BY}
        self._offering: dict[str, set[str]] = {role: set() for role in FED_BY}  # links with `offers`, by role
        self._locals: dict[str, _Local] = {}
        self._locals_by_dest: dict[Destination, dict[str, _Local]] = {}
        self._received: dict[str, dict[str, Demand]] = {}  # link -> key -> item the peer offered
        self._received_by_dest: dict[Destination, dict[str, dict[str, Demand]]] = {}  # dest -> link -> key -> item
        self._offered: dict[str, dict[Destination, dict[str, Demand]]] = {}  # link -> dest -> key -> item
        self._subscribed: dict[str, dict[Destination, dict[str, Subscription]]] = {}  # dynamic ones
        self._static: dict[str, list[Subscription]] = {}
        self._returning: dict[str, dict[Destination, Subscription]] = {}  # parent link -> dest -> return sub
        self._latest: dict[str, int] = {}  # node id -> newest incarnation seen over a tree link
        self._via: dict[str, str] = {}  # node id -> the tree link its newest incarnation was seen over

    # --- events -------------------------------------------------------------------------------------

    def add_link(self, spec: LinkSpec) -> Changes:
        """A new link: the current demand is offered over it and its static subscriptions appear."""
        if spec.link_id in self._links:
            raise ValueError(f"node {self.node_id}: link {spec.link_id!r} exists already")
        link_id = spec.link_id
        self._links[link_id] = spec
        self._by_role[spec.role].add(link_id)
        self._received[link_id], self._offered[link_id], self._subscribed[link_id] = {}, {}, {}
        self._returning[link_id] = {}
        changes = Changes()
        if spec.offers:
            self._offering[spec.role].add(link_id)
            for dest in self._destinations_for(spec):
                self._refresh_offer(link_id, dest, changes)
        self._static[link_id] = _static_subscriptions(spec.policy) if spec.subscribes else []
        if self._static[link_id]:
            changes.subscriptions[link_id] = SubscriptionDelta(added=list(self._static[link_id]))
        return changes

    def remove_link(self, link_id: str) -> Changes:
        """A link taken out of the configuration: what it brought goes, from every other link's offer and
        from its subscriptions; nothing is sent over it any more."""
        spec = self._link(link_id)
        changes = self._forget_received(link_id)
        changes.offers.pop(link_id, None)
        gone = SubscriptionDelta(removed=[s.key for s in self._static[link_id]]
                                 + [s.key for s in self._returning[link_id].values()])
        changes.merge(Changes(subscriptions={link_id: gone}))
        changes.stranded.discard(link_id)
        for table in (self._links, self._received, self._offered, self._subscribed, self._static,
                      self._returning):
            del table[link_id]
        for node in [n for n, via in self._via.items() if via == link_id]:
            del self._via[node]
        self._by_role[spec.role].discard(link_id)
        self._offering[spec.role].discard(link_id)
        return changes

    def consumer_added(self, consumer_id: str, destination: Destination, selector: str = "", *,
                       durable_subscription: bool = False, active: bool = True, temporary: bool = False) -> Changes:
        if consumer_id in self._locals:
            raise ValueError(f"node {self.node_id}: consumer {consumer_id!r} is registered already")
        origin = f"{self.node_id}/{consumer_id}"
        local = _Local(Demand(origin, destination, selector, (), 0, frozenset((origin,)),
                              frozenset(((self.node_id, self.incarnation),))),
                       durable_subscription, active, temporary)
        self._locals[consumer_id] = local
        self._locals_by_dest.setdefault(destination, {})[consumer_id] = local
        return self._local_changed(destination)

    def consumer_removed(self, consumer_id: str) -> Changes:
        local = self._locals.pop(consumer_id, None)
        if local is None:
            raise ValueError(f"node {self.node_id}: no consumer {consumer_id!r}")
        dest = local.demand.destination
        same = self._locals_by_dest[dest]
        del same[consumer_id]
        if not same:
            del self._locals_by_dest[dest]
        return self._local_changed(dest)

    def received(self, link_id: str, delta: OfferDelta) -> Changes:
        """The peer's demand over `link_id`, as a delta of its offer."""
        spec = self._link(link_id)
        if not spec.subscribes:
            raise ValueError(f"node {self.node_id}: link {link_id!r} takes no demand (subscribes=False), "
                             f"yet {spec.peer} offered some")
        mine = self._received[link_id]
        tree = spec.policy.tree
        changes = Changes()
        touched: set[Destination] = set()
        for key in [*delta.removed, *(item.key for item in delta.added)]:
            old = mine.pop(key, None)
            if old is not None:
                self._unindex_received(link_id, old)
                touched.add(old.destination)
        for item in delta.added:
            touched.add(item.destination)
            if self.node_id in item.path:
                continue  # our own demand come back round a loop: never taken (self-avoiding paths)
            mine[item.key] = item
            self._received_by_dest.setdefault(item.destination, {}).setdefault(link_id, {})[item.key] = item
        if tree:
            for item in delta.added:
                if item.key in mine:
                    for node, incarnation in item.attached:
                        self._seen(node, incarnation, link_id, changes)
            for node, incarnation in delta.moved.items():
                self._seen(node, incarnation, link_id, changes)
        for dest in touched:
            self._received_changed(link_id, dest, changes)
        return changes

    def reset(self, link_id: str) -> Changes:
        """Forget what the peer offered (before its full offer again after a reconnect)."""
        self._link(link_id)
        return self._forget_received(link_id)

    # --- views --------------------------------------------------------------------------------------

    def offer(self, link_id: str) -> list[Demand]:
        """The whole current offer over a link (sent in full when it (re)connects)."""
        self._link(link_id)
        return [item for per_dest in self._offered[link_id].values() for item in per_dest.values()]

    def subscriptions(self, link_id: str) -> list[Subscription]:
        self._link(link_id)
        return [*self._static[link_id],
                *(sub for per_dest in self._subscribed[link_id].values() for sub in per_dest.values()),
                *self._returning[link_id].values()]

    # --- internals ----------------------------------------------------------------------------------

    def _link(self, link_id: str) -> LinkSpec:
        spec = self._links.get(link_id)
        if spec is None:
            raise ValueError(f"node {self.node_id}: no link {link_id!r}")
        return spec

    def _local_changed(self, dest: Destination) -> Changes:
        changes = Changes()
        for links in self._offering.values():
            for link_id in links:
                self._refresh_offer(link_id, dest, changes)
        return changes

    def _received_changed(self, source: str, dest: Destination, changes: Changes) -> None:
        """Offers that may carry `source`'s demand for `dest`, and every subscription on `dest` (one
        link's item may suppress another's)."""
        for link_id in self._offering[FED_BY[self._links[source].role]]:
            if link_id != source:
                self._refresh_offer(link_id, dest, changes)
        for link_id in {source, *self._received_by_dest.get(dest, ())}:
            self._refresh_subscriptions(link_id, dest, changes)
        if self._links[source].role == CHILD and dest.kind == QUEUE and self._by_role[PARENT]:
            self._refresh_returns(dest, changes)

    # --- a leaf that moved --------------------------------------------------------------------------

    def _superseded(self, item: Demand) -> bool:
        """Whether every origin node of `item` has been seen in a newer incarnation (tree links only)."""
        latest = self._latest
        return bool(item.attached) and all(latest.get(node, inc) > inc for node, inc in item.attached)

    def _seen(self, node: str, incarnation: int, source: str, changes: Changes) -> None:
        """`node` in `incarnation`, seen over tree link `source` (in demand or a notice). Newer than
        before: what the tree links hold from its older incarnations is superseded — the links that
        brought it are told (not `source`, nor the node itself), and their destinations refreshed.
        Older than what is known: `source` holds stale demand, and is told."""
        if node == self.node_id:
            return
        known = self._latest.get(node)
        if known is not None and known > incarnation:
            changes.stranded.add(source)
            if self._links[source].peer != node:
                self._tell_moved(source, node, known, changes)
            return
        if known is None or known == incarnation:
            self._latest[node] = incarnation  # first sight: nothing older is held (every held item was seen)
            self._via.setdefault(node, source)
            return
        self._latest[node] = incarnation
        self._via[node] = source
        for link_id, items in self._received.items():
            spec = self._links[link_id]
            if not spec.policy.tree:
                continue
            older = {item.destination for item in items.values()
                     if any(n == node and inc < incarnation for n, inc in item.attached)}
            if not older:
                continue
            changes.stranded.add(link_id)
            if link_id != source and spec.peer != node:
                self._tell_moved(link_id, node, incarnation, changes)
            for dest in older:
                self._received_changed(link_id, dest, changes)

    def toward(self, node: str) -> str | None:
        """The tree link leading to where `node` is now (the one its newest incarnation was seen over;
        after a move notice, toward the node that told it): the way a moved leaf's topic messages go
        on (link.py's `_return_stranded`, receiver.py's `TO_NODE` keys). None: not known here."""
        return self._via.get(node)

    def _tell_moved(self, link_id: str, node: str, incarnation: int, changes: Changes) -> None:
        if self._links[link_id].offers:
            changes.offers.setdefault(link_id, OfferDelta()).moved[node] = incarnation

    def _refresh_returns(self, dest: Destination, changes: Changes) -> None:
        """The return subscription toward the parent for `dest`: while a child's demand for it is
        superseded, what waits here for it goes back up (module docstring)."""
        stale = [item for link_id, items in self._received_by_dest.get(dest, {}).items()
                 if self._links[link_id].role == CHILD
                 for item in items.values() if self._superseded(item)]
        new = Subscription(f"return:{dest}", dest, _or_selectors(stale), 0, replay=True) if stale else None
        for link_id in self._by_role[PARENT]:
            if not self._links[link_id].subscribes:
                continue
            returning = self._returning[link_id]
            if returning.get(dest) == new:
                continue
            delta = changes.subscriptions.setdefault(link_id, SubscriptionDelta())
            if new is None:
                delta.removed.append(returning.pop(dest).key)
            else:
                returning[dest] = new
                delta.added.append(new)

    def _forget_received(self, link_id: str) -> Changes:
        gone = self._received[link_id]
        self._received[link_id] = {}
        for item in gone.values():
            self._unindex_received(link_id, item)
        changes = Changes()
        for dest in {item.destination for item in gone.values()}:
            self._received_changed(link_id, dest, changes)
        return changes

    def _unindex_received(self, link_id: str, item: Demand) -> None:
        by_link = self._received_by_dest[item.destination]
        items = by_link[link_id]
        del items[item.key]
        if not items:
            del by_link[link_id]
            if not by_link:
                del self._received_by_dest[item.destination]

    def _destinations_for(self, spec: LinkSpec) -> set[Destination]:
        """Every destination that may be in the offer over `spec` (only when a link is added)."""
        feeders = self._by_role[FED_BY[spec.role]]
        found = set(self._locals_by_dest)
        found.update(dest for dest, by_link in self._received_by_dest.items()
                     if any(source in feeders and source != spec.link_id for source in by_link))
        return found

    def _contributions(self, spec: LinkSpec, dest: Destination) -> list[Demand]:
        """The local and received items for `dest` that may be offered over `spec`."""
        policy = spec.policy
        if not _destinations(policy, dest.kind).passes(dest.name):
            return []
        found = [local.demand for local in self._locals_by_dest.get(dest, {}).values()
                 if not (local.temporary and not policy.bridge_temp_destinations)
                 and not (local.durable_subscription and not local.active and policy.dynamic_only)]
        feeders = self._by_role[FED_BY[spec.role]]
        for source, items in self._received_by_dest.get(dest, {}).items():
            if source == spec.link_id or source not in feeders:
                continue
            found.extend(item for item in items.values()
                         if spec.peer not in item.path and (policy.tree or item.hops < policy.consumer_ttl)
                         and not (policy.tree and self._superseded(item)))
        return found

    def _fold(self, key: str, dest: Destination, items: list[Demand]) -> Demand:
        shortest = min(items, key=lambda item: (item.hops, item.path))
        if len(items) == 1:
            origins, attached = items[0].origins, items[0].attached
        else:
            origins = frozenset().union(*(item.origins for item in items))
            attached = frozenset().union(*(item.attached for item in items))
        return Demand(key, dest, _or_selectors(items), shortest.path + (self.node_id,), shortest.hops + 1, origins,
                      attached)

    def _offer_for(self, spec: LinkSpec, dest: Destination) -> dict[str, Demand]:
        items = self._contributions(spec, dest)
        if not items:
            return {}
        if spec.policy.conduit_subscriptions:
            key = str(dest)
            return {key: self._fold(key, dest, items)}
        by_origins: dict[frozenset[str], list[Demand]] = {}
        for item in items:
            by_origins.setdefault(item.origins, []).append(item)
        keys = ((f"{dest}#{','.join(sorted(origins))}", group) for origins, group in by_origins.items())
        return {key: self._fold(key, dest, group) for key, group in keys}

    def _refresh_offer(self, link_id: str, dest: Destination, changes: Changes) -> None:
        new = self._offer_for(self._links[link_id], dest)
        offered = self._offered[link_id]
        added, removed = _diff(offered.get(dest, {}), new)
        if new:
            offered[dest] = new
        else:
            offered.pop(dest, None)
        if added or removed:
            delta = changes.offers.setdefault(link_id, OfferDelta())
            delta.added.extend(added)
            delta.removed.extend(removed)

    def _refresh_subscriptions(self, link_id: str, dest: Destination, changes: Changes) -> None:
        spec = self._links[link_id]
        if not spec.subscribes:
            return
        items = self._received_by_dest.get(dest, {}).get(link_id, {})
        new: dict[str, Subscription] = {}
        if items and _destinations(spec.policy, dest.kind).passes(dest.name):
            for item in items.values():
                if not self._suppressed(spec, item) and not (spec.policy.tree and self._superseded(item)):
                    new[item.key] = Subscription(item.key, dest, item.selector, _priority(spec.policy, item.hops))
        subscribed = self._subscribed[link_id]
        added, removed = _diff(subscribed.get(dest, {}), new)
        if new:
            subscribed[dest] = new
        else:
            subscribed.pop(dest, None)
        if added or removed:
            delta = changes.subscriptions.setdefault(link_id, SubscriptionDelta())
            delta.added.extend(added)
            delta.removed.extend(removed)

    def _suppressed(self, spec: LinkSpec, item: Demand) -> bool:
        """Whether every origin of `item` reaches this node more directly over another subscribing link."""
        dest = item.destination
        if not _suppresses_duplicates(spec.policy, dest.kind):
            return False
        mine = (item.hops, spec.link_id)
        for other_id, others in self._received_by_dest.get(dest, {}).items():
            other = self._links[other_id]
            if other_id == spec.link_id or not other.subscribes \
                    or not _destinations(other.policy, dest.kind).passes(dest.name):
                continue
            if any((o.hops, other_id) < mine and item.origins <= o.origins
                   and not (other.policy.tree and self._superseded(o)) for o in others.values()):
                return True
        return False

