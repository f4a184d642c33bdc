"""One node's network connectors and tree connector: which links exist, to
whom, and the demand decider that drives them.

Each network connector dials every target of its `uri` (a `static:` list, a
failover pair followed as one target, or every node of a discovery group)
and keeps one link per target; the tree connector dials its parent. Links
other nodes open here are accepted by `accept` (the Cluster service hands
them over). Every event — a local consumer coming or going, a peer's demand,
a link added — goes through the one decider (demand.py), and its changes are
carried out: demand sent to peers, network subscriptions reconciled.

A tree has one root, the node without a tree-connector. Links check the
shape: a leaf links to a branch, a branch to the root; anything else is
refused with the reason, at both ends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import grpc

from meshmq.aio import wait_for
from meshmq.config import defaults
from meshmq.config.models import BrokerConfig
from meshmq.security.cluster_proof import ClusterProver
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc

from ..cluster.bridge import retry_delays
from ..cluster.link_identity import LinkIdentity
from .demand import CHILD, PARENT, PEER, Changes, NetworkDemand, OfferDelta
from .demand_order import DemandVersions
from .link import DISCONNECTED, RETRYING, STOPPED, NetworkLink, read_with_ttl
from .local_demand import LocalConsumer, local_demand
from .wire import connector_policy, demand_from_proto, link_policy, tree_policy

if TYPE_CHECKING:
    from meshmq.discovery import TopologyWatcher

    from ..broker import Broker

log = logging.getLogger("meshmq.network")

TREE = "tree"
ROOT, BRANCH, LEAF = "root", "branch", "leaf"
# Local consumers changing within this long are one scan.
LOCAL_DEBOUNCE_S = 0.01
# Who may link to whom in a tree: the child's node type -> the parent's it needs.
TREE_PARENT = {LEAF: BRANCH, BRANCH: ROOT}


class LinkRefused(Exception):
    """The other end refused the link for a reason that retrying will not mend."""


def tree_refusal(own_type: str, own_name: str, child_type: str, child_name: str) -> str | None:
    """Why a tree link from `child_name` (a `child_type`) to this node (a
    `own_type`) is wrong, or None when it is right."""
    wanted = TREE_PARENT.get(child_type)
    if wanted is None:
        return f"{child_name} says it is a {child_type!r}: a tree link comes from a leaf or a branch"
    if own_type == wanted:
        return None
    if own_type == ROOT:
        return (f"{own_name} has no tree-connector, so it is the root, but {child_name} is a leaf: a leaf links "
                f"to its branch. A tree has one root: if {own_name} is a branch, give it tree-connector "
                f"{{node-type: branch, uri: <the root>}}; otherwise point {child_name}'s uri at its branch")
    if own_type == LEAF:
        return f"{own_name} is a leaf and a leaf has no children: {child_name} must link to a branch or the root"
    return (f"{own_name} is a branch but {child_name} is a branch too: a branch links to the root (the node "
            f"without a tree-connector)")


# Incarnations count the activations of the node's store: its epoch, which every start and every
# takeover raises, so no clock is trusted (a leaf whose clock went back between two starts would look
# older than itself). Scaled above the start times in ms that earlier versions sent, so a store
# upgraded in place still supersedes the attachment it had before (int64: epochs up to 922,337).
INCARNATION_PER_EPOCH = 10**13


def incarnation(epoch: int) -> int:
    """The incarnation a node's demand carries while its store is active at `epoch`."""
    return epoch * INCARNATION_PER_EPOCH


class NetworkConnectors:
    def __init__(self, config: BrokerConfig, broker: Broker) -> None:
        self.config = config
        self.broker = broker
        self.links: dict[str, NetworkLink] = {}
        self.decider: NetworkDemand | None = None
        self._policies: dict[str, cpb.NetworkPolicy] = {}  # link name -> its connector's policy
        self._local: dict[str, LocalConsumer] = {}
        self._identity: LinkIdentity | None = None
        self._identities: dict[str, LinkIdentity] = {}  # connector -> its own credential (userName/password)
        self._tasks: list[asyncio.Task] = []
        self._watchers: list[TopologyWatcher] = []
        self._apis: list = []
        self._stop_watching = lambda: None
        self._scan_scheduled: asyncio.TimerHandle | None = None
        # Request/reply ordering (demand_order.py): raised whenever demand is sent on any link.
        self.demand_version = 0
        self.versions = DemandVersions()

    @property
    def node_type(self) -> str:
        tc = self.config.tree_connector
        return tc.node_type if tc is not None else ROOT

    @property
    def in_use(self) -> bool:
        return bool(self.config.network_connectors or self.config.tree_connector or self.links)

    # ------------------------------------------------------------ starting and stopping

    def start(self, identity: LinkIdentity) -> None:
        self._identity = identity
        # This activation's incarnation: a leaf moved to another branch supersedes its demand under the old one.
        self.decider = NetworkDemand(self.broker.node_id, incarnation=incarnation(self.broker.epoch))
        for name, nc in self.config.network_connectors.items():
            policy = connector_policy(nc)
            if nc.user_name is not None:  # the other network's cluster credential, for this connector's links
                self._identities[name] = LinkIdentity(ClusterProver(nc.user_name, nc.password),
                                                      identity.credentials, identity.connector)
            for target in nc.targets:
                self._dial(name, "network", target, policy, duplex=nc.duplex)
            group = nc.discovery or (self.config.discovery_groups[nc.discovery_group_ref]
                                     if nc.discovery_group_ref else None)
            if group is not None:
                self._tasks.append(asyncio.create_task(self._follow(name, group, policy, nc.duplex)))
        tc = self.config.tree_connector
        if tc is not None:
            self._dial(TREE, TREE, tc.target, tree_policy(tc), duplex=True)

    async def stop(self) -> None:
        self._stop_watching()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        for link in self.links.values():
            link.close_stream()
            link.state = STOPPED
            link.detach()
            link.close_subscriptions()
        for watcher in self._watchers:
            await watcher.close()
        for api in self._apis:
            await api.close()

    # ------------------------------------------------------------ the decider's changes

    def _apply(self, *steps: Changes) -> None:
        """Carry out the decider's changes: the steps' demand folded into one
        update per peer; then each touched link's subscriptions reconciled
        once (a peer's full offer after a reconnect must not tear down what
        it keeps). One update, not one per step: a consumer leaving a durable
        subscription is two steps here (the consumer gone, the idle
        subscription come), and sent apart they made the peer delete the
        subscription's queue and create it again, dropping the messages on
        their way into the deleted one."""
        merged = Changes()
        touched: set[str] = set()
        for changes in steps:
            merged.merge(changes)
            touched.update(changes.subscriptions)
        if merged.offers:
            self.demand_version += 1
        for link_id, delta in merged.offers.items():
            link = self.links.get(link_id)
            if link is not None:
                link.send_demand(delta)
        for link_id in touched:
            link = self.links.get(link_id)
            if link is not None:
                link.reconcile(self.decider.subscriptions(link_id))
        for link_id in merged.stranded:  # after the reconcile: the return subscriptions are there to take them
            link = self.links.get(link_id)
            if link is not None:
                link.return_stranded()

    def _local_changed(self) -> None:
        if self._scan_scheduled is None and self.decider is not None:
            self._scan_scheduled = asyncio.get_running_loop().call_later(LOCAL_DEBOUNCE_S, self._scan)

    def before_request(self, link: NetworkLink) -> int:
        """A batch holding a request is about to go over `link`: this node's
        consumers as they are now become demand (a pending scan runs at once),
        every link offering demand to the same peer has been sent the current
        demand version, and that version is what the batch carries
        (demand_order.py)."""
        if self._scan_scheduled is not None:
            self._scan_scheduled.cancel()
            self._scan()
        version = self.demand_version
        for other in self.links.values():
            if other.target_node_id == link.target_node_id and other.sent_version < version:
                other.send_demand(OfferDelta([], []))  # only the version: nothing else went there since
        return version

    def _scan(self) -> None:
        """Local consumers now against the last scan: the differences to the decider."""
        self._scan_scheduled = None
        now = local_demand(list(self.broker.queues.values()))
        before, self._local = self._local, now
        steps = []
        for key, was in before.items():
            if now.get(key) != was:
                steps.append(self.decider.consumer_removed(key))
        for key, c in now.items():
            if before.get(key) != c:
                steps.append(self.decider.consumer_added(
                    key, c.destination, c.selector, durable_subscription=c.durable_subscription, active=c.active,
                    temporary=c.temporary))
        if steps:
            self._apply(*steps)

    def _link_toward(self, node_id: str) -> NetworkLink | None:
        """The tree link leading to where node `node_id` is now, if this node knows."""
        link_id = self.decider.toward(node_id) if self.decider is not None else None
        return self.links.get(link_id) if link_id is not None else None

    def _demand(self, link: NetworkLink, update: cpb.DemandUpdate) -> None:
        """A peer's demand arrived over `link`."""
        if update.full:
            self._apply(self.decider.reset(link.link_id), self.decider.received(link.link_id, _delta(update)))
            link.drop_stale_topic_queues()
        elif update.added or update.removed or update.moved:
            self._apply(self.decider.received(link.link_id, _delta(update)))
        # Applied (the reply queues' subscriptions are there): requests sent after it may be taken.
        self.versions.seen(link.link_id, link.target_node_id, update.version)

    def _register(self, link: NetworkLink, peer: str) -> None:
        """`link` leads to node `peer` (first contact, or another node answers there now)."""
        if link.target_node_id == peer and link.link_id in self._policies:
            return
        if link.link_id in self._policies:  # the endpoint is another node now: its demand and queue are another
            self.versions.lost(link.link_id, link.target_node_id)
            self._apply(self.decider.remove_link(link.link_id))
            link.close_subscriptions()
            link.forget_queue()
        link.target_node_id = peer
        if not self._policies:
            # The first link: from now on this node's consumers are demand. (A
            # node without network links never scans its consumers.)
            self._stop_watching = self.broker.watch_bindings(self._local_changed)
            self._scan()
        policy = self._policies[link.link_id] = link.policy
        self._apply(self.decider.add_link(link.spec(link_policy(policy, tree=link.kind == TREE))))

    def _new_link(self, connector: str, kind: str, name: str, policy: cpb.NetworkPolicy, *, dialer: bool,
                  duplex: bool, role: str) -> NetworkLink:
        link = NetworkLink(self.broker, connector, kind, name=name, policy=policy, dialer=dialer,
                           duplex=duplex or kind == TREE,
                           role=role, prefetch=policy.prefetch_size or defaults.NC_PREFETCH_SIZE,
                           message_ttl=None if kind == TREE else policy.message_ttl or 1,
                           replay=policy.replay_when_no_consumers, on_demand=self._demand, ordering=self,
                           toward=self._link_toward)
        self.links[name] = link
        return link

    # ------------------------------------------------------------ dialing

    def _dial(self, connector: str, kind: str, target: tuple[str, ...], policy: cpb.NetworkPolicy, *,
              duplex: bool) -> None:
        name = f"{connector}->{target[0]}"
        if name in self.links:
            return
        link = self._new_link(connector, kind, name, policy, dialer=True, duplex=duplex,
                              role=PARENT if kind == TREE else PEER)
        link.endpoint = ",".join(target)
        self._tasks.append(asyncio.create_task(self._keep_dialing(link, target), name=f"network link {name}"))

    def _hello(self, link: NetworkLink) -> cpb.LinkRequest:
        kind = cpb.NetworkHello.TREE_CONNECTOR if link.kind == TREE else cpb.NetworkHello.NETWORK_CONNECTOR
        network = cpb.NetworkHello(kind=kind, duplex=link.duplex, policy=link.policy,
                                   node_type=self.node_type if link.kind == TREE else "")
        return self._identity.hello(link.connector, self.broker.node_id, self.config.name,
                                    check_period_ms=defaults.CC_CHECK_PERIOD, network=network)

    async def _keep_dialing(self, link: NetworkLink, target: tuple[str, ...]) -> None:
        """Dial `target` (its alternatives in turn: a live and its backup) until stopped."""
        delays = retry_delays(defaults.CC_RETRY_INTERVAL, defaults.CC_RETRY_INTERVAL_MULTIPLIER,
                              defaults.CC_MAX_RETRY_INTERVAL)
        attempt = 0
        while True:
            endpoint = target[attempt % len(target)]
            try:
                await self._dial_once(link, endpoint)
                delays = retry_delays(defaults.CC_RETRY_INTERVAL, defaults.CC_RETRY_INTERVAL_MULTIPLIER,
                                      defaults.CC_MAX_RETRY_INTERVAL)
            except asyncio.CancelledError:
                raise
            except LinkRefused as exc:
                if link.problem != str(exc):
                    log.error("network link %s refused: %s", link.name, exc)
                link.problem = str(exc)
            except Exception as exc:
                problem = _describe(exc)
                if link.state == "connected":
                    log.warning("network link %s to %s broke: %s; reconnecting", link.name, endpoint, problem)
                link.problem = problem
            link.state = RETRYING
            link.retries += 1
            attempt += 1
            await asyncio.sleep(next(delays) / 1000)

    async def _dial_once(self, link: NetworkLink, endpoint: str) -> None:
        identity = self._identities.get(link.connector, self._identity)
        timeout = defaults.CC_CALL_TIMEOUT / 1000
        channel = identity.open(endpoint)
        try:
            try:
                call = cgrpc.ClusterStub(channel).Link(metadata=await identity.metadata(channel, endpoint,
                                                                                        timeout_s=timeout))
                await wait_for(call.write(self._hello(link)), timeout)
                first = await wait_for(call.read(), timeout)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                                  grpc.StatusCode.FAILED_PRECONDITION):
                    raise LinkRefused(exc.details()) from None
                raise
            if first is grpc.aio.EOF or first.WhichOneof("kind") != "welcome":
                raise ConnectionError("the target ended the link before welcoming it")
            welcome = first.welcome
            if welcome.node_id == self.broker.node_id:
                raise LinkRefused(f"{endpoint} is this node")
            if link.kind == TREE and welcome.tree_node_type != TREE_PARENT[self.node_type]:
                call.cancel()
                raise LinkRefused(tree_refusal(welcome.tree_node_type or ROOT, welcome.node_name, self.node_type,
                                               self.config.name))
            link.target_node_name = welcome.node_name
            link.endpoint = endpoint
            self._register(link, welcome.node_id)
            log.info("network link %s: linked to %s (%s) at %s", link.name, welcome.node_name, welcome.node_id,
                     endpoint)
            await link.serve(read_with_ttl(call, defaults.CC_CONNECTION_TTL / 1000), call.write,
                             OfferDelta(self.decider.offer(link.link_id), []))
        finally:
            await channel.close()

    async def _follow(self, connector: str, group, policy: cpb.NetworkPolicy, duplex: bool) -> None:
        """A link to every node of a discovery group (this one excepted), as they come."""
        from meshmq.discovery.groups import group_watcher

        api, watcher = group_watcher(self.config, group)
        self._apis.append(api)
        self._watchers.append(watcher)
        sub = watcher.subscribe()
        try:
            while True:
                if watcher.synced:
                    for node in watcher.nodes():
                        if node.node_id != self.broker.node_id and node.connector:
                            self._dial(connector, "network", (node.connector,), policy, duplex=duplex)
                await sub.queue.get()
        finally:
            sub.close()

    # ------------------------------------------------------------ accepting

    async def accept(self, hello: cpb.LinkHello, frames: Any, context: grpc.aio.ServicerContext) -> None:
        """Serve a network or tree link another node opened to this one."""
        network = hello.network
        tree = network.kind == cpb.NetworkHello.TREE_CONNECTOR
        if self.decider is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "this node is starting")
        if tree:
            refusal = tree_refusal(self.node_type, self.config.name, network.node_type, hello.node_name)
            if refusal is not None:
                log.error("tree link from %s refused: %s", hello.node_name, refusal)
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, refusal)
        connector = TREE if tree else hello.cluster_connection
        name = f"{connector}<-{hello.node_name}({hello.node_id})"
        link = self.links.get(name)
        if link is None:
            link = self._new_link(connector, TREE if tree else "network", name, network.policy, dialer=False,
                                  duplex=network.duplex, role=CHILD if tree else PEER)
        await link.take_over()
        link.endpoint = hello.connector
        link.target_node_name = hello.node_name
        self._register(link, hello.node_id)
        log.info("network link %s: accepted from %s", link.name, hello.node_name)
        await context.write(cpb.LinkResponse(welcome=cpb.LinkWelcome(
            node_id=self.broker.node_id, node_name=self.config.name,
            tree_node_type=self.node_type if tree else "")))
        try:
            await link.serve(frames, context.write, OfferDelta(self.decider.offer(link.link_id), []))
        except Exception as exc:
            log.info("network link %s ended: %s", link.name, _describe(exc))
        finally:
            link.state = DISCONNECTED


def _delta(update: cpb.DemandUpdate) -> OfferDelta:
    return OfferDelta(added=[demand_from_proto(d) for d in update.added], removed=list(update.removed),
                      moved=dict(update.moved))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return str(exc) or type(exc).__name__
