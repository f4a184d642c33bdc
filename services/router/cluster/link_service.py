"""The target end of links: the router's `Cluster` gRPC service.

For each link (its caller's proof of cluster membership was checked before
it runs, by the router's ClusterIdentityCheck: services/router/server.py):
welcome it, offer this node's bindings — its own queues and the
remote ones it reaches, up to the source's max-hops, never the source's own —
and offer them again whenever they change; take forwarded batches, route each
message to the bindings the source chose, and confirm the batch once it is
committed. A repeat of a message already taken (same bridge duplicate id,
after a reconnect or a crash) is dropped and confirmed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING

import grpc

from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.routing_names import INTERNAL_PREFIX
from meshmq.transport import read_hello
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc

from ..broker import StagedSend
from ..message import ServerMessage
from ..queue import now_ms

if TYPE_CHECKING:
    from ..broker import Broker

log = logging.getLogger("meshmq.cluster")

# Bindings changes within this long go out as one snapshot.
OFFER_DEBOUNCE_S = 0.01
BRIDGE_CACHE = INTERNAL_PREFIX + "bridge."
PING = cpb.LinkResponse(ping=cpb.LinkPing())


def offered_bindings(broker: Broker, source_node_id: str, max_hops: int) -> list[cpb.ClusterBinding]:
    """What this node offers a link from `source_node_id` with `max_hops`."""
    if max_hops < 1:
        return []
    out = [
        cpb.ClusterBinding(
            node_id=broker.node_id, node_name=broker.name, queue=q.name, address=q.address,
            routing_type=q.routing_type, filter=q.filter_text,
            consumer_filters=[c.filter_text for c in q.consumers], hops=1,
        )
        for q in broker.queues.values() if not q.name.startswith(INTERNAL_PREFIX)
    ]
    for rb in broker.remote.all():
        if rb.hops + 1 <= max_hops and rb.node_id != source_node_id:
            out.append(rb.to_proto(rb.hops + 1))
    out.sort(key=lambda b: (b.node_id, b.queue))
    return out


def answer_vote(request: cpb.VoteRequest, members: list[cpb.ClusterMember], stale_copies: Collection[str]
                ) -> cpb.VoteReply:
    """A classic quorum vote, as Artemis's server-connect vote handler answers
    it: `members` are this node and the nodes it is linked to now. A backup
    asking to take the target's place gets a vote when the target is not among
    them — and, beyond Artemis, only if its copy is not one the target declared
    stale (ForgetCopy); the target asking to stay live gets one when it is seen
    (with where: a backup that took its place serves the same node id elsewhere).
    Every answer carries `members`: the voter's view of the lives, from which
    the asking node counts the quorum size."""
    connector = next((m.connector for m in members if m.node_id == request.target_node_id), "")
    seen = connector != ""
    vote = seen if request.request_to_stay_active else not seen and request.copy_id not in stale_copies
    return cpb.VoteReply(vote=vote, connector=connector, members=members)


# Stale copies remembered per live (a backup re-copies at most this often between two failures of its
# live), and lives remembered (the oldest are forgotten first).
STALE_COPIES_KEPT = 64
STALE_LIVES_KEPT = 1024


def _remember(copies: dict[str, deque[str]], target_node_id: str, copy_id: str) -> None:
    """Add `copy_id` to the copies remembered for `target_node_id` (bounded both ways)."""
    kept = copies.pop(target_node_id, None) or deque(maxlen=STALE_COPIES_KEPT)
    copies[target_node_id] = kept  # the most recently told last
    while len(copies) > STALE_LIVES_KEPT:
        del copies[next(iter(copies))]
    if copy_id not in kept:
        kept.append(copy_id)


# Answers a colocated live's request for a backup (services/ha-coordinator/colocated.py, composed by
# services/embedded.py).
BackupRequests = Callable[[cpb.BackupRequest], Awaitable[cpb.BackupReply]]


class ClusterServicer(cgrpc.ClusterServicer):
    """Every method here is for other nodes only: the router refuses a caller
    without the cluster credential before any of them runs."""

    def __init__(self, broker: Broker, members: Callable[[], list[cpb.ClusterMember]] = list,
                 group_name: str = "", linked_from: Callable[[cpb.LinkHello], None] = lambda hello: None,
                 backup_requests: BackupRequests | None = None) -> None:
        self.broker = broker
        # This node's scale-down group-name, told to every link (a scaling-down node checks it).
        self._group_name = group_name
        # This node and the nodes it links to (ClusterConnections.members), offered with the bindings.
        self._members = members
        # Told of every link opened to this node (ClusterConnections.linked_from: it may link back).
        self._linked_from = linked_from
        self.links: dict[str, cpb.LinkHello] = {}
        self._outs: set[asyncio.Queue] = set()
        # Copies of each live's store its live declared stale (classic replication votes refuse them),
        # and copies this node voted for: a vote cannot be taken back, so the notice for one is refused.
        self._stale: dict[str, deque[str]] = {}
        self._voted: dict[str, deque[str]] = {}
        self._backup_requests = backup_requests

    def close(self) -> None:
        """End every link now (the node is stopping): the sources see the
        stream close and start retrying, instead of waiting out the grace."""
        for out in self._outs:
            out.put_nowait(None)

    async def Vote(self, request: cpb.VoteRequest, context: grpc.aio.ServicerContext) -> cpb.VoteReply:
        if not request.target_node_id:
            await abort_with(context, BrokerError(Reason.INVALID_REQUEST, "a vote needs target_node_id"))
        reply = answer_vote(request, self._members(), self._stale.get(request.target_node_id, ()))
        reply.node_id, reply.node_name = self.broker.node_id, self.broker.name
        if reply.vote and not request.request_to_stay_active:
            _remember(self._voted, request.target_node_id, request.copy_id)
        if not request.request_to_stay_active:
            log.info("quorum vote: a backup of %s asked to take over (copy %s): %s", request.target_node_id,
                     request.copy_id, "voted for it" if reply.vote else
                     f"voted against (the live is seen at {reply.connector})" if reply.connector
                     else "voted against (its live declared that copy stale)")
        return reply

    async def Members(self, request: cpb.MembersRequest, context: grpc.aio.ServicerContext) -> cpb.MembersReply:
        return cpb.MembersReply(node_id=self.broker.node_id, members=self._members())

    async def RequestBackup(self, request: cpb.BackupRequest, context: grpc.aio.ServicerContext) -> cpb.BackupReply:
        if not request.node_id or not request.kind:
            await abort_with(context, BrokerError(Reason.INVALID_REQUEST, "a backup request needs node_id and kind"))
        if self._backup_requests is None:
            return cpb.BackupReply(accepted=False, node_name=self.broker.name,
                                   reason="this node has no colocated ha-policy: it hosts no backups")
        return await self._backup_requests(request)

    async def ForgetCopy(self, request: cpb.ForgetCopyRequest, context: grpc.aio.ServicerContext
                         ) -> cpb.ForgetCopyReply:
        if not request.target_node_id or not request.copy_id:
            await abort_with(context, BrokerError(Reason.INVALID_REQUEST,
                                                  "ForgetCopy needs target_node_id and copy_id"))
        _remember(self._stale, request.target_node_id, request.copy_id)
        voted = request.copy_id in self._voted.get(request.target_node_id, ())
        if voted:
            log.warning("quorum vote: %s declared its backup's copy %s stale, but this node already voted for that "
                        "copy to take over: notice refused (the live may not count it)", request.target_node_id,
                        request.copy_id)
        else:
            log.info("quorum vote: %s declared its backup's copy %s stale; no vote for it from here",
                     request.target_node_id, request.copy_id)
        return cpb.ForgetCopyReply(node_id=self.broker.node_id, members=self._members(), voted_for_copy=voted)

    async def Link(self, request_iterator, context: grpc.aio.ServicerContext) -> None:
        opened = await read_hello(request_iterator, context, "a link")
        if opened is None:
            return
        it, hello = opened
        link_id = f"{hello.node_name}({hello.node_id}).{hello.cluster_connection}"
        out: asyncio.Queue[cpb.LinkResponse | None] = asyncio.Queue()
        out.put_nowait(cpb.LinkResponse(welcome=cpb.LinkWelcome(
            node_id=self.broker.node_id, node_name=self.broker.name, group_name=self._group_name)))
        if hello.node_id == self.broker.node_id:
            await context.write(out.get_nowait())
            return
        self.links[link_id] = hello
        self._outs.add(out)
        log.info("cluster link from %s (cluster connection %s, max-hops %d)", hello.node_name,
                 hello.cluster_connection, hello.max_hops)
        self._linked_from(hello)
        changed = asyncio.Event()
        changed.set()
        stop_watching = self.broker.watch_bindings(changed.set)
        offer = asyncio.create_task(self._offer(hello, changed, out))
        pinger = asyncio.create_task(self._ping(hello, out))
        reader = asyncio.create_task(self._take(hello, it, out))
        try:
            while True:
                resp = await out.get()
                if resp is None:
                    break
                await context.write(resp)
        finally:
            stop_watching()
            self._outs.discard(out)
            offer.cancel()
            pinger.cancel()
            reader.cancel()
            self.links.pop(link_id, None)
            log.info("cluster link from %s ended", hello.node_name)

    @staticmethod
    async def _ping(hello: cpb.LinkHello, out: asyncio.Queue) -> None:
        """A ping every check-period, so the source tells a quiet link from a dead node (connection-ttl)."""
        period = (hello.check_period_ms or 30000) / 1000
        while True:
            await asyncio.sleep(period)
            out.put_nowait(PING)

    async def _offer(self, hello: cpb.LinkHello, changed: asyncio.Event, out: asyncio.Queue) -> None:
        last: cpb.BindingsSnapshot | None = None
        while True:
            await changed.wait()
            await asyncio.sleep(OFFER_DEBOUNCE_S)
            changed.clear()
            snapshot = cpb.BindingsSnapshot(bindings=offered_bindings(self.broker, hello.node_id, hello.max_hops),
                                            members=self._members())
            if snapshot != last:
                last = snapshot
                out.put_nowait(cpb.LinkResponse(bindings=snapshot))

    async def _take(self, hello: cpb.LinkHello, it, out: asyncio.Queue) -> None:
        try:
            async for req in it:
                kind = req.WhichOneof("kind")
                if kind == "declare":
                    self._declare(req.declare)
                    continue
                if kind != "forward":
                    continue
                if len(req.forward.messages) == 1 and req.forward.messages[0].message.large:
                    staged = await self._take_large(hello, req.forward, it)
                    if staged is None:
                        return
                    asyncio.create_task(self._confirm_when_stored(req.forward.batch_id, staged, out))
                    continue
                staged = self._stage(hello, req.forward)
                asyncio.create_task(self._confirm_when_stored(req.forward.batch_id, staged, out))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("cluster link from %s ended: %s", hello.node_name, exc)
        finally:
            out.put_nowait(None)

    def _declare(self, declare: cpb.DeclareQueues) -> None:
        """Create the queues a scaling-down node is about to send (those missing)."""
        b = self.broker
        for d in declare.queues:
            if d.name in b.queues:
                continue
            try:
                b.create_queue(d.name, d.address, d.routing_type, d.filter, durable=d.durable)
            except BrokerError as exc:
                log.warning("could not create queue %s for a scale-down: %s", d.name, exc)

    async def _take_large(self, hello: cpb.LinkHello, batch: cpb.ForwardBatch, it) -> StagedSend | None:
        """A large message: its chunks straight into the journal (memory when
        persistence is disabled), a commit every few chunks so the link is
        paced, then routed like any forwarded message. None: the link ended."""
        from ..large_messages import COMMIT_EVERY_CHUNKS

        b = self.broker
        fwd = batch.messages[0]
        repeat = bool(fwd.bridge_duplicate_id) and fwd.bridge_duplicate_id in b.duplicates.cache(
            BRIDGE_CACHE + hello.node_id)
        m = fwd.message
        origin = (hello.node_id, m.message_id)
        m.message_id = b.next_message_id()
        msg = ServerMessage(m, m.ByteSize() + m.body_size)
        msg.origin = origin
        if not b.persistence_enabled:
            msg.chunks = []
        seq = received = 0
        async for req in it:
            if req.WhichOneof("kind") != "chunk" or req.chunk.batch_id != batch.batch_id:
                log.warning("link from %s: expected the body of large message batch %d", hello.node_name,
                            batch.batch_id)
                b.drop_large_body(msg)
                return None
            c = req.chunk
            if not repeat:
                if msg.chunks is not None:
                    msg.chunks.append(c.data)
                else:
                    b.batch().add_large_chunks.add(message_id=msg.id, seq=seq, data=c.data)
                seq += 1
                received += len(c.data)
                if msg.chunks is None and (seq % COMMIT_EVERY_CHUNKS == 0 or c.last):
                    resp = await b.stored()
                    if not resp.ok:
                        return None  # the journal failed: the node halts; the source resends elsewhere or later
            if c.last:
                break
        else:
            b.drop_large_body(msg)
            return None
        if repeat:
            return b.seal(StagedSend())
        if received != m.body_size:
            log.warning("link from %s: large message body was %d bytes, header said %d; dropped", hello.node_name,
                        received, m.body_size)
            b.drop_large_body(msg)
            return b.seal(StagedSend())
        return self._stage(hello, batch, prepared={0: msg})

    def _stage(self, hello: cpb.LinkHello, batch: cpb.ForwardBatch,
               prepared: dict[int, ServerMessage] | None = None) -> StagedSend:
        """Route and stage a forwarded batch (one journal commit)."""
        b = self.broker
        staged = StagedSend()
        cache = BRIDGE_CACHE + hello.node_id
        for i, fwd in enumerate(batch.messages):
            claim = None
            if fwd.bridge_duplicate_id:
                try:
                    claim = b.duplicates.claim(cache, fwd.bridge_duplicate_id)
                except BrokerError:
                    continue  # already taken: a resend after a reconnect or a crash
            m = fwd.message
            msg = prepared.get(i) if prepared else None
            if msg is None:
                origin = (hello.node_id, m.message_id)
                m.message_id = b.next_message_id()
                msg = ServerMessage(m, m.ByteSize())
                msg.origin = origin
            m.node_id = b.node_id
            if hello.scale_down and m.duplicate_id:  # the clients' ids come along, so their resends are caught
                with contextlib.suppress(BrokerError):
                    user_claim = b.duplicates.claim(m.address, m.duplicate_id)
                    b.duplicates.persist(user_claim)
                    staged.claims.append(user_claim)
            try:
                queues = self._targets(msg, fwd.route_to)
            except BrokerError as exc:
                log.warning("forwarded message to %s from %s routed nowhere: %s", m.address, hello.node_name, exc)
                queues = []
            first = len(staged.refs)
            b.stage_send(staged, i, msg, queues, claim)
            if fwd.delivery_count:
                for ref in staged.refs[first:]:
                    ref.delivery_count = fwd.delivery_count
                    if ref.persisted and not ref.paged:
                        b.batch().update_delivery_counts.add(
                            queue_id=ref.queue.id, message_id=msg.id, delivery_count=fwd.delivery_count)
        return b.seal(staged)

    def _targets(self, msg: ServerMessage, route_to) -> list:
        """The bindings the source chose: our queues, and (in a chain) remote
        bindings further on; if none of them is known any more, the message
        is routed here as if sent here (so it is not lost)."""
        b = self.broker
        local = []
        forwards: dict = {}
        for key in route_to:
            node_id, _, queue = key.partition("/")
            if node_id == b.node_id:
                q = b.queues.get(queue)
                if q is not None and q.address == msg.address:
                    local.append(q)
            else:
                rb = b.remote.find(key)
                if rb is not None:
                    forwards.setdefault(rb.link, []).append(key)
        if forwards:
            msg.forwards = forwards
        if local or forwards:
            return local
        queues = b.route(msg, moved=True)
        msg.forwards = None  # never back into the cluster: the source already balanced it
        return queues

    async def _confirm_when_stored(self, batch_id: int, staged: StagedSend, out: asyncio.Queue) -> None:
        resp = await staged.stored if staged.stored is not None else None
        self.broker.settle(staged, resp)
        refused = "" if resp is None or resp.ok else f"{resp.reason}: {resp.message}"
        out.put_nowait(cpb.LinkResponse(confirm=cpb.ForwardConfirm(batch_id=batch_id, refused=refused)))
