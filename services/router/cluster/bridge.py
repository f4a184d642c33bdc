"""The source end of a cluster connection's link: dials one other node,
forwards a local store-and-forward queue to it (forwarder.py: within
`confirmation-window-size`, duplicate ids with `use-duplicate-detection`),
and hears what that node offers (its bindings).

Reconnecting follows `retry-interval` × `retry-interval-multiplier` up to
`max-retry-interval`; when `initial-connect-attempts` (never connected) or
`reconnect-attempts` (after a break) are spent, the node is considered down:
its bindings are dropped, so nothing more is routed to it, while what its
queue already holds stays there, counted; the bridge keeps probing every
`max-retry-interval` and forwards it when the node is back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc

from meshmq.aio import wait_for
from meshmq.config.models import ClusterConnection
from meshmq.link_kinds import CLUSTER
from meshmq.routing_names import store_and_forward_queue_name
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc

from ..consumer import ServerConsumer
from .address_match import AddressMatch
from .forwarder import Forwarder, write_frames
from .link_identity import LinkIdentity

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger("meshmq.cluster")

CONNECTING, CONNECTED, RETRYING, DOWN, SELF, STOPPED = "connecting", "connected", "retrying", "down", "self", "stopped"
# A bridge to a node that left the discovery group, kept for its state and metrics (cluster/manager.py).
DEPARTED = "departed"


def gives_up(failed: int, ever_connected: bool, initial_connect_attempts: int, reconnect_attempts: int) -> bool:
    """Whether the target is now considered down: `failed` attempts since the
    link was last up. Before it ever was, `initial-connect-attempts` attempts
    in all (at least the one made); after a break, `reconnect-attempts` more
    (0: down at the break). -1 = never."""
    if ever_connected:
        return reconnect_attempts >= 0 and failed >= reconnect_attempts
    return initial_connect_attempts >= 0 and failed >= max(initial_connect_attempts, 1)


def retry_delays(retry_interval: int, multiplier: float, max_retry_interval: int):
    """The waits (ms) between connection attempts: `retry-interval`, then each
    `retry-interval-multiplier` times the last, never above `max-retry-interval`."""
    delay = float(retry_interval)
    while True:
        yield min(delay, max_retry_interval)
        delay = min(delay * multiplier, max_retry_interval)


class LinkRefused(Exception):
    """The target refused the link for good (e.g. a wrong cluster password)."""


class Bridge(Forwarder):
    """One link of cluster connection `cc_name` to the node at `endpoint`."""

    # As a network link (network/link.py) says what it is: management and
    # metrics list every link of the bridge engine alike. A bridge is always
    # dialed by the node that holds it.
    kind = CLUSTER
    dialer = True

    def __init__(self, broker: Broker, cc_name: str, cc: ClusterConnection, endpoint: str, *,
                 identity: LinkIdentity, node_name: str,
                 on_members: Callable[[Bridge, list[cpb.ClusterMember]], None] = lambda bridge, members: None,
                 scale_down: bool = False) -> None:
        super().__init__(broker, f"{cc_name}->{endpoint}", cc.client_id or f"{node_name}.{cc_name}",
                         frame=cpb.LinkRequest, window=cc.confirmation_window_size,
                         min_large_message_size=cc.min_large_message_size,
                         duplicate_ids=cc.use_duplicate_detection)
        self.cc_name = cc_name
        self.cc = cc
        self.demand_received = 0  # bindings snapshots the target offered: a cluster connection's demand
        self.endpoint = endpoint
        self.load_balancing = cc.message_load_balancing
        self.matches = AddressMatch(cc.address).matches
        self._identity = identity
        self._on_members = on_members
        self._scale_down = scale_down
        self._node_name = node_name
        self.target_node_name = ""
        self.grouping_local: str | None = None
        self.state = CONNECTING
        self.problem = ""
        self.retries = 0
        self._call: grpc.aio.StreamStreamCall | None = None
        self._channel: grpc.aio.Channel | None = None
        self._out: asyncio.Queue = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self.connected = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"bridge {self.name}")

    async def stop(self) -> None:
        self.state = STOPPED
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        self._detach()
        self._close_channel()
        self.broker.remote.drop(self)

    def sf_name(self) -> str:
        return store_and_forward_queue_name(self.cc_name, self.target_node_id)

    # ------------------------------------------------------------ connecting

    async def _run(self) -> None:
        failed = 0  # connection attempts failed since the link was last up (or since start)
        ever_connected = False
        delays = self._delays()
        while True:
            try:
                await self._connect_and_serve()
            except asyncio.CancelledError:
                raise
            except LinkRefused as exc:
                if self.problem != str(exc):  # once per refusal, not at every retry-interval
                    log.error("cluster connection %s: link to %s refused: %s", self.cc_name, self.endpoint, exc)
                self.problem = str(exc)
            except _Self:
                self.state = SELF
                log.debug("cluster connection %s: %s is this node; no link", self.cc_name, self.endpoint)
                return
            except Exception as exc:  # the target is down, the link broke
                self.problem = _describe(exc)
            if self.connected.is_set():  # it was up: a break, not a failed attempt
                ever_connected = True
                failed = 0
                delays = self._delays()
                log.warning("cluster connection %s: link to %s (%s) broke: %s; reconnecting", self.cc_name,
                            self.target_node_name or self.endpoint, self.endpoint, self.problem)
                self.connected.clear()
                self.broker.bindings_changed(local=False)
            else:
                failed += 1
                self.retries += 1
            self._detach()
            self.broker.offered_versions.lost(self.target_node_id)
            if self.state != DOWN and gives_up(failed, ever_connected, self.cc.initial_connect_attempts,
                                               self.cc.reconnect_attempts):
                self.state = DOWN
                self.broker.remote.drop(self)
                log.warning("cluster connection %s: %s considered down after %d failed attempts (%s); nothing more "
                            "is routed to it; %d messages wait in its store-and-forward queue", self.cc_name,
                            self.endpoint, failed, self.problem, self.pending)
            elif self.state != DOWN:
                self.state = RETRYING
            wait = self.cc.max_retry_interval if self.state == DOWN else next(delays)
            await asyncio.sleep(wait / 1000)

    def _delays(self):
        return retry_delays(self.cc.retry_interval, self.cc.retry_interval_multiplier, self.cc.max_retry_interval)

    async def _connect_and_serve(self) -> None:
        # A new channel per attempt (one in TRANSIENT_FAILURE would fail the hello at
        # once), opened before the last one is closed, so the two share gRPC's
        # connection to the target and its backoff carries over: against a target
        # that accepts TCP but never answers (frozen), each fresh connection would
        # time out at gRPC's first connect deadline (min-reconnect-backoff, 100 ms)
        # with UNAVAILABLE, before call-timeout could ever apply.
        previous, self._channel = self._channel, self._identity.open(self.endpoint)
        stub = cgrpc.ClusterStub(self._channel)
        timeout = self.cc.call_timeout / 1000
        try:
            call = stub.Link(metadata=await self._identity.metadata(self._channel, self.endpoint, timeout_s=timeout))
            self._call = call
            await wait_for(call.write(self._identity.hello(
                self.cc_name, self.broker.node_id, self._node_name, max_hops=self.cc.max_hops,
                scale_down=self._scale_down, check_period_ms=self.cc.check_period)), timeout)
            first = await wait_for(call.read(), timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                raise LinkRefused(exc.details()) from None
            raise
        finally:
            if previous is not None:
                await previous.close()
        if first is grpc.aio.EOF or first.WhichOneof("kind") != "welcome":
            raise ConnectionError("the target ended the link before welcoming it")
        welcome = first.welcome
        if welcome.node_id == self.broker.node_id:
            raise _Self()
        if self.target_node_id and welcome.node_id != self.target_node_id:
            log.warning("cluster connection %s: %s is now node %s (was %s)", self.cc_name, self.endpoint,
                        welcome.node_id, self.target_node_id)
            self.broker.remote.drop(self)
            self.forget_queue()
        self.target_node_id = welcome.node_id
        self.target_node_name = welcome.node_name
        # Clustered grouping: the target holds the LOCAL grouping handler for this address (None: not).
        # Kept while the link is down: a REMOTE handler keeps asking there until its timeout.
        self.grouping_local = welcome.grouping_local_address if welcome.HasField("grouping_local_address") else None
        self.state = CONNECTED
        self.problem = ""
        self.connected.set()
        self.broker.bindings_changed(local=False)  # our links are part of what we offer (members)
        log.info("cluster connection %s: linked to %s (%s) at %s", self.cc_name, welcome.node_name,
                 welcome.node_id, self.endpoint)
        self._out = asyncio.Queue()
        self.attach(self._out)
        tasks = (asyncio.create_task(write_frames(self._out, call.write)), asyncio.create_task(self._read(call)),
                 asyncio.create_task(self._watch_confirms()))
        try:
            # Whichever ends first ends the link: a write that fails breaks it as a
            # read does, and so does a confirm overdue by call-timeout.
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
            raise ConnectionError("the link's writer stopped")
        finally:
            for task in tasks:
                task.cancel()

    async def _read(self, call) -> None:
        """What the target says; nothing at all (not even a ping) for connection-ttl breaks the link."""
        ttl = self.cc.connection_ttl / 1000
        while True:
            resp = await wait_for(call.read(), ttl)
            if resp is grpc.aio.EOF:
                raise ConnectionError("the target closed the link")
            kind = resp.WhichOneof("kind")
            if kind == "bindings":
                self.demand_received += 1
                self.broker.remote.apply(self, resp.bindings.bindings)
                self.broker.offered_versions.seen(self.target_node_id, resp.bindings.version)
                self._on_members(self, list(resp.bindings.members))
            elif kind == "confirm":
                self.take_confirm(resp.confirm)
            elif kind == "groups_removed" and self.broker.grouping is not None:
                remote = self.broker.grouping.remote
                if remote is not None:
                    remote.forget(resp.groups_removed.group_ids)

    async def _watch_confirms(self) -> None:
        """call-timeout for the confirms: a batch written and not confirmed
        within it breaks the link (Artemis's call-timeout on blocking calls).
        Its messages go back to the head of the store-and-forward queue and are
        sent again on the next link; the target's bridge duplicate ids drop
        what it had already stored."""
        timeout = self.cc.call_timeout / 1000
        while True:
            await asyncio.sleep(min(timeout / 4, 1.0))
            batch_id = self.overdue(timeout)
            if batch_id is not None:
                raise TimeoutError(f"batch {batch_id} not confirmed within call-timeout "
                                   f"({self.cc.call_timeout} ms)")

    def _detach(self) -> None:
        self.detach()
        if self._call is not None:
            self._call.cancel()
            self._call = None

    def _close_channel(self) -> None:
        if self._channel is not None:
            asyncio.ensure_future(self._channel.close())
            self._channel = None

    def declare(self, queues: list[cpb.QueueDeclaration]) -> None:
        """Ask the target to create these queues before what is forwarded next."""
        self._out.put_nowait(cpb.LinkRequest(declare=cpb.DeclareQueues(queues=queues)))

    def queue_deleted(self, consumer: ServerConsumer) -> None:
        log.warning("cluster connection %s: store-and-forward queue %s deleted", self.cc_name, consumer.queue.name)
        super().queue_deleted(consumer)


class _Self(Exception):
    """The endpoint is this node (a static connector listing every member)."""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    if isinstance(exc, TimeoutError):
        return str(exc) or "no answer within call-timeout / connection-ttl"
    return str(exc) or type(exc).__name__
