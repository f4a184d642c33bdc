"""The receiving half of a link: forwarded batches stored here, then confirmed.

Every link that carries messages has one at the other end of each forwarder
(forwarder.py): the acceptor of a cluster connection's link
(link_service.py), and both ends of a duplex network link
(services/router/network/). Each batch is staged with the send pipeline's
stager (one journal commit) and confirmed once committed; a message is
admitted by its bridge duplicate id (a repeat, after a reconnect or a crash,
is dropped and confirmed) and routed to the bindings its source chose. A
large message's body follows its batch in chunks, taken by the large-body
transfer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol

from meshmq.errors import BrokerError
from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.v1 import cluster_pb2 as cpb

from .. import dead_letter
from ..duplicates import DuplicateClaim
from ..large_body import BodyReceiver
from ..message import ServerMessage
from ..routing import TO_NODE
from ..send_pipeline import StagedSend
from .bindings import TEMPORARY_MARK

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger("meshmq.cluster")

BRIDGE_CACHE = INTERNAL_PREFIX + "bridge."


class VersionWaiter(Protocol):
    """What a request's batch waits on (bindings_order.OfferedVersions, network/demand_order.DemandVersions)."""

    async def caught_up(self, node_id: str, version: int) -> bool: ...


class Receiver:
    """Takes what node `source_node_id` forwards over one link stream and
    confirms it into `out` with frames of class `frame` (the direction this
    end writes: LinkResponse at the acceptor, LinkRequest at the dialer)."""

    def __init__(self, broker: Broker, source_node_id: str, source_name: str, out: asyncio.Queue, *,
                 frame: type, scale_down: bool = False, versions: VersionWaiter | None = None,
                 toward: Callable[[str], Any] | None = None) -> None:
        self.broker = broker
        # A tree link's: the link leading to a node (its `TO_NODE` keys); None on other links.
        self._toward = toward
        self.source_node_id = source_node_id
        self.source_name = source_name
        self._out = out
        self._frame = frame
        self._scale_down = scale_down
        self._cache = BRIDGE_CACHE + source_node_id
        # Whose versions a request's batch waits for: the source's bindings (a
        # cluster bridge) or its demand (a network link).
        self._versions: VersionWaiter = versions if versions is not None else broker.offered_versions

    async def take(self, batch: cpb.ForwardBatch, frames: AsyncIterator[Any]) -> bool:
        """Stage `batch` (its body read from `frames` when it is a large
        message) and confirm it once stored; False: the link ended within a
        large message's body. A batch holding a request waits first for the
        source's bindings it was sent under (bindings_order.py)."""
        if batch.bindings_version:
            await self._versions.caught_up(self.source_node_id, batch.bindings_version)
        if len(batch.messages) == 1 and batch.messages[0].message.large:
            staged = await self._take_large(batch, frames)
            if staged is None:
                return False
        else:
            staged = self._stage(batch)
        asyncio.create_task(self._confirm_when_stored(batch.batch_id, staged))
        return True

    def declare(self, declare: cpb.DeclareQueues) -> None:
        """Create the queues a scaling-down node is about to send (those missing)."""
        b = self.broker
        for d in declare.queues:
            if d.name in b.queues:
                continue
            try:
                b.create_queue(d.name, d.address, d.routing_type, d.filter, durable=d.durable)
            except BrokerError as exc:
                log.warning("could not create queue %s for a scale-down: %s", d.name, exc)

    async def _take_large(self, batch: cpb.ForwardBatch, frames: AsyncIterator[Any]) -> StagedSend | None:
        """A large message: its body taken by the large-body transfer (the
        journal, or memory when persistence is disabled, paced by its commits),
        then routed like any forwarded message. None: the link ended."""
        b = self.broker
        fwd = batch.messages[0]
        repeat = bool(fwd.bridge_duplicate_id) and fwd.bridge_duplicate_id in b.duplicates.cache(self._cache)
        m = fwd.message
        origin = (self.source_node_id, m.message_id)
        m.message_id = b.next_message_id()
        msg = ServerMessage.of(m, m.ByteSize() + m.body_size)
        msg.origin = origin
        body = BodyReceiver(b, msg)
        async for frame in frames:
            if frame.WhichOneof("kind") != "chunk" or frame.chunk.batch_id != batch.batch_id:
                log.warning("link from %s: expected the body of large message batch %d", self.source_name,
                            batch.batch_id)
                body.drop()
                return None
            c = frame.chunk
            if not repeat and await body.add(c.data, c.last) is not None:
                return None  # the journal failed: the node halts; the source resends elsewhere or later
            if c.last:
                break
        else:
            body.drop()
            return None
        if repeat:
            return StagedSend()
        wrong_size = body.wrong_size()
        if wrong_size is not None:
            log.warning("link from %s: %s; dropped", self.source_name, wrong_size)
            body.drop()
            return StagedSend()
        return self._stage(batch, prepared={0: msg})

    def _stage(self, batch: cpb.ForwardBatch, prepared: dict[int, ServerMessage] | None = None) -> StagedSend:
        """Route and stage a forwarded batch (one journal commit) with the send
        pipeline's stager: each message admitted by its bridge duplicate id
        (a repeat is dropped), routed to the bindings the source chose."""
        b = self.broker
        cache = self._cache
        claims: list = []  # the clients' ids a scale-down brings, stored with the batch

        def admit(item: tuple[int, cpb.ForwardedMessage]) -> tuple[ServerMessage, DuplicateClaim | None] | None:
            i, fwd = item
            claim = None
            if fwd.bridge_duplicate_id:
                try:
                    claim = b.duplicates.claim(cache, fwd.bridge_duplicate_id)
                except BrokerError:
                    return None  # already taken: a resend after a reconnect or a crash
            m = fwd.message
            msg = prepared.get(i) if prepared else None
            if msg is None:
                origin = (self.source_node_id, m.message_id)
                m.message_id = b.next_message_id()
                msg = ServerMessage.of(m, m.ByteSize())
                msg.origin = origin
            m.node_id = b.node_id
            if self._scale_down and m.duplicate_id:  # the clients' ids come along, so their resends are caught
                with contextlib.suppress(BrokerError):
                    user_claim = b.duplicates.claim(m.address, m.duplicate_id)
                    b.duplicates.persist(user_claim)
                    claims.append(user_claim)
            return msg, claim

        def route(item: tuple[int, cpb.ForwardedMessage], msg: ServerMessage) -> list:
            try:
                return self._targets(msg, item[1].route_to)
            except BrokerError as exc:
                log.warning("forwarded message to %s from %s routed nowhere: %s", msg.address, self.source_name,
                            exc)
                return []

        def staged_one(item: tuple[int, cpb.ForwardedMessage], msg: ServerMessage, refs: list) -> None:
            fwd = item[1]
            if fwd.delivery_count:
                for ref in refs:
                    ref.delivery_count = fwd.delivery_count
                    if ref.persisted and not ref.paged:
                        b.batch().update_delivery_counts.add(
                            queue_id=ref.queue.id, message_id=msg.id, delivery_count=fwd.delivery_count)

        staged = b.sender.stage_batch(list(enumerate(batch.messages)), admit, route, staged_one=staged_one)
        staged.claims.extend(claims)
        return staged

    def _targets(self, msg: ServerMessage, route_to) -> list:
        """The bindings the source chose: our queues, and (in a chain) remote
        bindings further on; if none of them is known any more (or it named
        none: a network link's topic message), the message is routed here as
        if sent here (so it is not lost) — unless it was sent to a temporary
        queue of ours that is gone: then it goes to another node's temporary
        queue of that name (a connection's temporary queue held on several
        nodes, client_connections.py) or, when there is none (a late reply
        whose requester left), nowhere, as a message no queue takes
        (`_unroutable`), rather than into a queue auto-created for nobody."""
        b = self.broker
        local = []
        forwards: dict = {}
        temporary_gone = False
        for key in route_to:
            if key[:1] == TO_NODE:
                return self._to_node(msg, key)
            node_id, _, queue = key.partition("/")
            if node_id == b.node_id:
                temporary = queue[-1:] == TEMPORARY_MARK
                if temporary:
                    queue = queue[:-1]
                q = b.queues.get(queue)
                if q is not None and (q.address == msg.address
                                      or (q.home is not None and q.home.wildcard
                                          and b.wildcards.matches(q.address, msg.address))):
                    local.append(q)
                elif temporary:
                    temporary_gone = True
            else:
                rb = b.remote.find(key)
                if rb is not None:
                    forwards.setdefault(rb.link, []).append(key)
        if forwards:
            msg.forwards = forwards
        if local or forwards:
            return local
        if temporary_gone:
            # A connection's temporary queue may live on in copies on other nodes (the
            # source's among them): the message goes to one of those, never into a new queue here.
            if b.sender.forward_only(msg):
                return []
            return self._unroutable(msg, "the temporary queue it was sent to is gone")
        queues = b.sender.route(msg, moved=True)
        msg.forwards = None  # never back into the cluster: the source already balanced it
        return queues

    def _to_node(self, msg: ServerMessage, key: str) -> list:
        """A copy for one node's topic subscriptions (routing.TO_NODE): routed
        here as usual when this is that node, else passed on toward it with
        the same key — never into this node's own subscriptions on the way."""
        b = self.broker
        node_id = key[1:]
        if node_id == b.node_id:
            queues = b.sender.route(msg, moved=True)
            msg.forwards = None
            return queues
        onward = self._toward(node_id) if self._toward is not None else None
        if onward is None:
            return self._unroutable(msg, f"no link leads to node {node_id} from here", warn=True)
        msg.forwards = {onward: [key]}
        return []

    def _unroutable(self, msg: ServerMessage, why: str, warn: bool = False) -> list:
        """A message for a temporary queue of ours that is gone, or for a node
        no link leads to from here (`_to_node`): to the
        dead-letter address when its address settings say
        send-to-dla-on-no-route, else dropped (as Artemis drops a message
        whose route-to queue is gone)."""
        b = self.broker
        settings = b.settings(msg.address)
        dla = settings.dead_letter_address
        if settings.send_to_dla_on_no_route and dla not in (None, msg.address):
            dead_letter.redirect_unroutable(b, msg, dla)
            queues = b.sender.route(msg, moved=True)
            msg.forwards = None
            return queues
        (log.warning if warn else log.info)("forwarded message to %s from %s dropped: %s", msg.address,
                                            self.source_name, why)
        return []

    async def _confirm_when_stored(self, batch_id: int, staged: StagedSend) -> None:
        resp = await staged.stored if staged.stored is not None else None
        self.broker.sender.settle(staged, resp)
        refused = "" if resp is None or resp.ok else f"{resp.reason}: {resp.message}"
        self._out.put_nowait(self._frame(confirm=cpb.ForwardConfirm(batch_id=batch_id, refused=refused)))
