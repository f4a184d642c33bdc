"""A client session: one bidirectional stream to a router carrying this
session's producers, consumers, acks and transaction calls.

One writer task owns the stream's write side and one reader task routes each
response to the producer, consumer or call waiting for it, so application
code never touches the stream directly.

When the stream is lost and reconnectAttempts allows, the session fails over
(docs/client-failover.md): calls in flight are unblocked (UnblockedError; a
commit raises TransactionRolledBackError), a transaction with work done becomes
rollback-only, and a new stream on the node failover.py picks gets this
session's producers and consumers again under the same ids; the objects the
application holds carry on. Calls made meanwhile wait up to callFailoverTimeout.

A planned move (a rebalance, rebalance.py) is gentler: at a quiet moment a new
stream opens on the target with the same producers and consumers, and the old
one stays until what it owes is settled (confirms of sends made on it, acks of
messages handed on it), so the application sees no error and no redelivery.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from typing import Protocol

import grpc

from meshmq.config import defaults
from meshmq.aio import wait_for
from meshmq.errors import (
    ConnectionFailedError, InvalidRequestError, MeshMQError, QueueExistsError, Reason, ScaledDownError,
    TransactionRolledBackError, UnblockedError, error_for, from_rpc_error,
)
from meshmq.properties import PropertyValue
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import broker_pb2_grpc as bgrpc
from meshmq.v1 import management_pb2 as mgpb

from . import request_reply
from .browser import QueueBrowser
from .consumer import Consumer
from .failover import Incidents, reconnect_delays, warrants_failover
from .message import ReceivedMessage
from .options import ClientOptions, Server
from .producer import Producer
from .temporary_queue import TemporaryQueue

log = logging.getLogger("meshmq.client")


class QueueAdmin(Protocol):
    """The management calls a session makes itself (connection.py's Admin): its
    non-durable queues, created again after a failover."""

    async def queue(self, name: str) -> mgpb.QueueInfo | None: ...

    async def create_queue(
        self, name: str, *, address: str = "", routing_type: str = "anycast", filter: str = "", durable: bool = True,
        last_value_key: str | None = None, non_destructive: bool | None = None, exclusive: bool | None = None,
        group_rebalance: bool | None = None, group_rebalance_pause_dispatch: bool | None = None,
        group_buckets: int | None = None, group_first_key: str | None = None,
    ) -> mgpb.QueueInfo: ...

    def browse_queue(self, queue: str, *, filter: str = "", page_size: int = 0
                     ) -> AsyncGenerator[mgpb.BrowsePage, None]: ...


class SessionHost(Protocol):
    """What a session needs from its connection (connection.py implements it): the
    credentials and options, a stub to any node, where to go when its node is lost,
    and the failover incidents its listeners hear about."""

    metadata: tuple[tuple[str, str], ...]
    options: ClientOptions
    incidents: Incidents

    def broker(self, server: Server) -> bgrpc.BrokerStub: ...

    def admin(self, server: Server) -> QueueAdmin: ...

    def failover_candidates(self, lost_on: Server, node_id: str, *, redirect: str = "") -> list[Server]: ...

    # The connection's id (OpenSession.connection_id) and its temporary queues by name.
    connection_id: str
    temporary_queues: dict[str, TemporaryQueue]

    async def create_temporary_queue(self) -> TemporaryQueue: ...


def _answered_to_nobody(futures: Iterable[asyncio.Future]) -> None:
    """The creates still waiting when their stream failed are nobody's now (the next
    stream asks again): their outcomes are read here, or asyncio would log each
    failed one as an "exception never retrieved" into the application's log."""
    for fut in futures:
        fut.add_done_callback(_read_outcome)


def _read_outcome(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()


class _Stream:
    """One session stream: its call, what writes to it and its reader and writer tasks."""

    def __init__(self, call: grpc.aio.StreamStreamCall, outq: asyncio.Queue) -> None:
        self.call = call
        self.outq = outq
        self.tasks: list[asyncio.Task] = []
        self.node_id = ""
        self.session_id = ""
        self.router_protocol = 0  # the session protocol its node speaks (docs/protocol.md section 14)

    def discard(self) -> None:
        for t in self.tasks:
            t.cancel()
        self.call.cancel()


class _OldStream:
    """The stream a planned move left: it still takes the confirms of the batches
    sent on it and the acks of the messages handed on it, until none is owed or
    callTimeout has passed; then it ends and its node gives back what is still unacked."""

    def __init__(self, stream: _Stream, server: Server, batches: dict[Producer, set[int]]) -> None:
        self.stream = stream
        self.server = server
        self.batches = batches
        self.changed = asyncio.Event()
        self.retiring: asyncio.Task | None = None  # Session._retire (held here: a task nobody holds may vanish)

    def owes(self, consumers) -> bool:
        if any(c._owes_old_stream() for c in consumers):
            return True
        for p, ids in self.batches.items():
            ids.intersection_update(p._inflight)
        return any(self.batches.values())


class _Members:
    """The session as its producers and consumers see it (ProducerSession in
    producer.py, ConsumerSession in consumer.py), so neither reaches into the
    session's own state. The stream, its readiness and the calls are bound once:
    a send goes through no extra call."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.ready = session._ready
        self.transacted = session.transacted
        self.write = session.write
        self.write_paced = session.write_paced
        self.wait_ready = session._wait_ready
        self.try_move = session._try_move
        self.settle_on_old_stream = session._settle_on_old_stream
        self.old_stream_settled = session._old_stream_settled
        self.forget_producer = session._forget_producer
        self.close_consumer = session._close_consumer

    def note_transaction_work(self) -> None:
        """A send or an ack joined the open transaction."""
        self._session._tx_work = True

    def mark_rollback_only(self) -> None:
        """The open transaction cannot hold what was just settled: its commit rolls back."""
        self._session._rollback_only = True


class Session:
    def __init__(self, host: SessionHost, server: Server, transacted: bool) -> None:
        self._host = host
        self._metadata = host.metadata
        self.options = host.options
        self.transacted = transacted
        # The node this session's stream goes to (it changes when the session fails over).
        self.server = server
        self.node_id = ""
        self.session_id = ""
        self._call: grpc.aio.StreamStreamCall | None = None
        self._outq: asyncio.Queue[bpb.SessionRequest | None] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._producers: dict[int, Producer] = {}
        self._reply_producer: Producer | None = None  # reply_producer(), for request() and reply()
        self._reply_lock = asyncio.Lock()
        self._consumers: dict[int, Consumer] = {}
        self._browsers: list[QueueBrowser] = []  # closed with the session, as in JMS
        self._calls: dict[tuple[str, int], asyncio.Future] = {}
        self._tasks: list[asyncio.Task] = []
        self._failure: MeshMQError | None = None
        self._closed = False
        self._drained = asyncio.Event()
        # Set while a stream is up; cleared while the session fails over (calls wait on it).
        self._ready = asyncio.Event()
        self._recovery: asyncio.Task | None = None
        # Whether the open transaction has sends or acks, and whether a failover doomed it.
        self._tx_work = False
        self._rollback_only = False
        self._ending = ""  # "commit" or "rollback" while one waits for its answer
        self._members = _Members(self)
        # Non-durable queues this session created: a failover creates them again (create_queue).
        self._volatile_queues: dict[str, dict] = {}
        # The connection's temporary queues this session asked its node for (temporary_queue.py):
        # the node keeps them while the session is open, and a failover asks the new node again.
        self._temporary_queues: dict[str, TemporaryQueue] = {}
        # How many times the session moved to a new stream (FailoverEventType listeners tell more).
        self.failovers = 0
        # Planned moves (rebalancing): the node asked for, until when, and the stream being opened
        # there; the stream left behind while it settles what it owes (_OldStream).
        self._move_target: Server | None = None
        self._move_until = 0.0
        self._moving: asyncio.Task | None = None
        self._opening: grpc.aio.StreamStreamCall | None = None
        self._old: _OldStream | None = None
        self.moves = 0
        # Called with every error the router reports that no pending call owns, and when the
        # session's stream is lost: a ConnectionFailedError if it cannot go on, an UnblockedError
        # (failed_over=True) once it has moved to a new stream.
        self.exception_listener: Callable[[MeshMQError], None] | None = None

    async def _open(self) -> None:
        await self._start_stream(self.server)
        self._ready.set()

    async def _start_stream(self, server: Server, timeout_ms: int | None = None, *, adopt: bool = True) -> _Stream:
        """Open a session stream on `server`, answered within `timeout_ms` (callTimeout
        by default), and make it this session's; with `adopt` false (a planned move)
        the caller adopts it once the old one can be left, and the old one carries on meanwhile."""
        call = self._host.broker(server).Session(metadata=self._metadata)
        outq: asyncio.Queue[bpb.SessionRequest | None] = asyncio.Queue()
        if adopt:
            self._call, self._outq = call, outq
        else:
            self._opening = call  # its reader's "opened" and its end reach this opening (_dispatch_aside)
        opened = self._expect("opened", 0)
        stream = _Stream(call, outq)
        timeout_ms = self.options.callTimeout if timeout_ms is None else timeout_ms
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        unanswered = ConnectionFailedError(f"no answer from the router at {server.target} within {timeout_ms} ms")
        try:
            try:
                # Bounded too: a node that accepted the TCP connection but froze before
                # HTTP/2's handshake could hold the write past the attempt's time.
                await wait_for(call.write(
                    bpb.SessionRequest(open=bpb.OpenSession(client_id=self.options.clientID, transacted=self.transacted,
                                                            protocol_version=defaults.PROTOCOL_VERSION,
                                                            connection_id=self._host.connection_id))
                ), timeout_ms / 1000)
            except asyncio.TimeoutError:
                self._calls.pop(("opened", 0), None)
                call.cancel()
                raise unanswered from None
            except grpc.RpcError as exc:  # never reached the node (e.g. its TLS handshake failed): a typed error
                self._calls.pop(("opened", 0), None)
                call.cancel()
                err = from_rpc_error(exc)
                if err.reason is Reason.INTERNAL:
                    # grpc.aio fails the first write of a stream that could not start ("Internal error
                    # from Core", e.g. its node was just killed) without saying why: the node is unreachable.
                    err = ConnectionFailedError(f"cannot open a session on {server.target}: {exc.details()}")
                raise err from None
            stream.tasks = [asyncio.create_task(self._read(call)), asyncio.create_task(self._write(call, outq))]
            if adopt:
                self._tasks = stream.tasks
            try:
                try:
                    resp = await wait_for(opened, max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    raise unanswered from None
            except BaseException:
                # Unanswered in time (a frozen node) or refused: the stream goes now, not
                # when the node wakes and opens a session nobody will use.
                self._calls.pop(("opened", 0), None)
                stream.discard()
                raise
        finally:
            if not adopt:
                self._opening = None
        stream.node_id, stream.session_id = resp.node_id, resp.session_id
        stream.router_protocol = resp.protocol_version or 1
        if adopt:
            self.server = server
            self.node_id, self.session_id = resp.node_id, resp.session_id
            self.router_protocol = resp.protocol_version or 1
        return stream

    # ------------------------------------------------------------ plumbing

    def _expect(self, kind: str, key: int) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self._calls[(kind, key)] = fut
        return fut

    async def _wait(self, fut: asyncio.Future, timeout_ms: int | None = None):
        timeout_ms = self.options.callTimeout if timeout_ms is None else timeout_ms
        try:
            return await wait_for(fut, timeout_ms / 1000)
        except asyncio.TimeoutError:
            raise ConnectionFailedError(f"no answer from the router within {timeout_ms} ms") from None

    def write(self, req: bpb.SessionRequest) -> None:
        """Queue a request for the stream (never blocks)."""
        self._check()
        if not self._ready.is_set():
            raise UnblockedError("the session is failing over; the request was not sent")
        self._outq.put_nowait(req)

    async def _wait_ready(self) -> None:
        """Wait out a failover in progress (up to callFailoverTimeout); raise if the session cannot go on."""
        if self._ready.is_set():
            self._check()
            return
        limit = self.options.callFailoverTimeout
        try:
            await wait_for(self._ready.wait(), None if limit == -1 else limit / 1000)
        except asyncio.TimeoutError:
            raise UnblockedError(
                f"the session is still failing over after callFailoverTimeout={limit} ms"
            ) from None
        self._check()

    async def write_paced(self, req: bpb.SessionRequest) -> None:
        """Queue a request, then wait until the stream has nearly caught up (large bodies)."""
        self.write(req)
        while self._outq.qsize() > 2:
            self._drained.clear()
            await self._drained.wait()
            self._check()

    def _check(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise InvalidRequestError("session is closed")

    async def _write(self, call: grpc.aio.StreamStreamCall, outq: asyncio.Queue) -> None:
        try:
            while True:
                req = await outq.get()
                if req is None:
                    await call.done_writing()
                    return
                await call.write(req)
                if outq.qsize() <= 2:
                    self._drained.set()
        except (grpc.RpcError, grpc.aio.UsageError, asyncio.InvalidStateError) as exc:
            self._lost(call, ConnectionFailedError(f"session stream failed: {exc}"))

    async def _read(self, call: grpc.aio.StreamStreamCall) -> None:
        try:
            async for resp in call:
                if call is self._call:
                    self._dispatch(resp)
                else:
                    self._dispatch_aside(call, resp)
            self._lost(call, ConnectionFailedError("the router closed the session"))
        except grpc.RpcError as exc:
            self._lost(call, from_rpc_error(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in dispatch: fail loudly rather than hang callers
            log.exception("session reader failed")
            self._fail(MeshMQError(f"client session failed: {exc}"))

    # ------------------------------------------------------------ failover

    def _lost(self, call: grpc.aio.StreamStreamCall, err: MeshMQError) -> None:
        """The stream `call` ended with `err`: fail over if allowed, else fail."""
        if call is not self._call:
            self._lost_aside(call, err)
            return
        if self._closed or self._failure is not None:
            return  # an old stream's end, or nothing left to save
        if not self.session_id:
            self._fail(err)  # never opened: Connection.session tries the next node instead
            return
        if self.options.reconnectAttempts == 0 or not warrants_failover(err):
            self._fail(err)
            return
        self._unblock(err)
        if self._recovery is None:
            self._recovery = asyncio.create_task(self._fail_over(err))

    def _unblock(self, err: MeshMQError) -> None:
        """The stream is gone: nothing in flight on it will be answered. Unblock
        every call waiting on it and start the producers and consumers afresh."""
        self._ready.clear()
        self._call.cancel()
        for t in self._tasks:
            if t is not asyncio.current_task():
                t.cancel()
        unblocked = UnblockedError(f"the session's stream to {self.server.target} failed ({err}); "
                                   "its outcome is unknown")
        for (kind, _), fut in self._calls.items():
            if fut.done():
                continue
            if kind == "tx_result" and self._ending == "rollback":
                fut.set_result(None)  # what it asked for: the new stream has no transaction
            elif kind == "tx_result":
                # A commit in flight: as Artemis, report it rolled back (duplicate ids make
                # a retry safe whether or not the old node committed it before it failed).
                self._tx_work = False
                fut.set_exception(TransactionRolledBackError(
                    f"the session failed over while the transaction was ending ({err}): it is rolled back; "
                    "retry it (with duplicate ids on its messages, a retry never stores one twice)"))
            else:
                fut.set_exception(unblocked)
        self._calls.clear()
        if self.transacted and self._tx_work:
            self._rollback_only = True
        for p in self._producers.values():
            p._on_unblocked(unblocked)
        for c in self._consumers.values():
            c._on_failover()
        self._drained.set()

    async def _fail_over(self, err: MeshMQError) -> None:
        """Move to a new stream: rounds over the candidates with the retry backoff."""
        host = self._host
        lost_on = self.server
        lost_session = self.session_id  # an attempt's open gives the session its new node's id
        redirect = err.target if isinstance(err, ScaledDownError) and err.target else ""
        incident = host.incidents.begin(lost_on, err)
        last: MeshMQError = err
        try:
            for delay in reconnect_delays(self.options, self.options.reconnectAttempts):
                if delay:
                    await asyncio.sleep(delay)
                for server in host.failover_candidates(lost_on, self.node_id, redirect=redirect):
                    try:
                        await self._reattach(server)
                    except MeshMQError as exc:
                        last = exc
                        # (UnblockedError: this attempt's own stream failed under it.)
                        if not warrants_failover(exc) and not isinstance(exc, UnblockedError):
                            raise
                        log.info("failover of session %s to %s: %s", lost_session, server.target, exc)
                        continue
                    self.failovers += 1
                    host.incidents.end(incident, moved_to=server, err=None)
                    if self.exception_listener is not None:
                        self.exception_listener(UnblockedError(
                            f"the session failed over from {lost_on.target} to {server.target}", failed_over=True))
                    return
            raise ConnectionFailedError(
                f"failover from {lost_on.target} gave up after reconnectAttempts={self.options.reconnectAttempts}: "
                f"{last}"
            )
        except asyncio.CancelledError:
            host.incidents.end(incident, moved_to=None, err=ConnectionFailedError("session closed"))
            raise
        except MeshMQError as exc:
            host.incidents.end(incident, moved_to=None, err=exc)
            self._recovery = None
            self._fail(exc)
        finally:
            if self._recovery is asyncio.current_task():
                self._recovery = None

    async def _reattach(self, server: Server) -> None:
        """A new stream on `server` with this session's producers and consumers
        under their ids; they are queued before any request the application
        makes on it, so the router knows them first."""
        # A candidate that does not answer within a check period is as silent as one that
        # misses a ping (a frozen node, a partition): the round moves on instead of waiting callTimeout.
        period = self.options.clientFailureCheckPeriod
        stream = await self._start_stream(
            server, self.options.callTimeout if period == -1 else min(self.options.callTimeout, period))
        try:
            for name, spec in self._volatile_queues.items():
                try:
                    await self._host.admin(self.server).create_queue(name, **spec)
                except QueueExistsError:
                    pass  # a node that kept it (the same node after a transient break)
                except MeshMQError as exc:
                    if warrants_failover(exc):
                        raise  # this node is lost too: the next candidate
                    # Refused here (a permission this node does not grant): the queue fails
                    # alone, as a producer or consumer does — the session goes on without it.
                    log.warning("session %s: non-durable queue %s not made again on %s: %s", self.session_id,
                                name, self.server.target, exc)
            waits = self._queue_creates()
            self._ready.set()
            for p in self._producers.values():
                p._send_again()
            await self._await_creates(waits)
        except MeshMQError as exc:
            # The attempt failed on a stream that is still open (an answer that never came,
            # a create refused): it is lost like any other, at once — left open, its consumers
            # would hold messages nobody reads, and what it handed could be acked on the next.
            if self._call is stream.call and not stream.call.done():
                self._unblock(exc)
            raise

    def _queue_creates(self) -> list[tuple[Producer | Consumer | TemporaryQueue, asyncio.Future]]:
        """Queue this session's temporary queues, producers and consumers on its
        (new) stream, ahead of anything else, so the router knows them first; the
        futures of their answers."""
        waits: list[tuple[Producer | Consumer | TemporaryQueue, asyncio.Future]] = []
        for tq in self._temporary_queues.values():
            rid = next(self._ids)
            waits.append((tq, self._expect("temporary_queue_created", rid)))
            self._outq.put_nowait(bpb.SessionRequest(create_temporary_queue=bpb.CreateTemporaryQueue(
                request_id=rid, queue=tq.name)))
        for p in self._producers.values():
            waits.append((p, self._expect("producer_created", p.id)))
            self._outq.put_nowait(bpb.SessionRequest(create_producer=p._create_request()))
        for c in self._consumers.values():
            waits.append((c, self._expect("consumer_created", c.id)))
            self._outq.put_nowait(bpb.SessionRequest(create_consumer=c._create_request()))
        return waits

    async def _await_creates(self, waits: list[tuple[Producer | Consumer | TemporaryQueue, asyncio.Future]]) -> None:
        for i, (owner, fut) in enumerate(waits):
            try:
                created = await self._wait(fut)
            except MeshMQError as exc:
                if warrants_failover(exc) or isinstance(exc, UnblockedError):
                    _answered_to_nobody(f for _, f in waits[i + 1:])
                    raise  # this stream failed too: the next candidate
                if isinstance(owner, TemporaryQueue):  # its consumers' creates say the rest
                    log.warning("session %s: temporary queue %s not made again on %s: %s", self.session_id,
                                owner.name, self.server.target, exc)
                else:
                    owner._on_recreate_failed(exc)  # e.g. its queue is not on the new node
                continue
            if isinstance(owner, Consumer):
                owner.queue = created.queue
        for c in self._consumers.values():
            c._on_ready()

    # ------------------------------------------------------------ planned moves (rebalancing)

    def request_move(self, server: Server) -> None:
        """Move this session to `server` at its next quiet moment within callTimeout
        (Connection's rebalance asks; a later request replaces an earlier one)."""
        self._move_target = server
        self._move_until = asyncio.get_running_loop().time() + self.options.callTimeout / 1000
        self._try_move()

    def _movable(self) -> bool:
        """Whether the session can move now without the application noticing: its stream
        is up and settled into (no failover, no earlier move still settling), no large
        message is half sent, and a transacted session is between transactions with
        nothing handed unsettled (a transaction cannot span two nodes). A session that owns
        temporary or non-durable queues stays: their messages would not come along."""
        if (self._closed or self._failure is not None or not self._ready.is_set() or self._recovery is not None
                or self._old is not None or self._opening is not None or self._ending or self._volatile_queues
                or self._temporary_queues):
            return False
        if any(p._large_sending for p in self._producers.values()):
            return False
        if any(c._request.address and not c._request.subscription for c in self._consumers.values()):
            return False
        if self.transacted and (self._tx_work or any(c._unsettled > 0 for c in self._consumers.values())):
            return False
        return True

    def _try_move(self) -> None:
        """Start the requested move if the session can move now (called again when
        what stood in the way ends: a transaction, a large send, the last move's settling)."""
        target = self._move_target
        if target is None or self._moving is not None:
            return
        if target == self.server or asyncio.get_running_loop().time() > self._move_until:
            self._move_target = None
            return
        if self._movable():
            self._moving = asyncio.create_task(self._move(target))

    async def _move(self, server: Server) -> None:
        try:
            await self.move_to(server)
        except MeshMQError as exc:
            log.info("session %s stays on %s: %s", self.session_id, self.server.target, exc)
        finally:
            self._moving = None
        # Moved, or the target would not have it: done. Work that began while the new stream
        # opened keeps the request for the next quiet moment (_try_move).
        if self._move_target is server and (self.server == server or self._movable()):
            self._move_target = None

    async def move_to(self, server: Server) -> bool:
        """Move to `server` now if the session is movable (_movable); False if it is not,
        or `server` did not answer or lacks a queue the session consumes from.

        The new stream opens while the old one carries on; then, with no await in
        between, the old node is told to give back what the consumers buffered unseen
        (it keeps what was handed, for the acks still to come on the old stream), and
        the producers and consumers are created on the new stream ahead of anything
        the application sends next. No call is unblocked and nothing is redelivered.
        """
        if not self._movable() or server == self.server:
            return False
        for c in self._consumers.values():
            if c._request.queue and await self._host.admin(server).queue(c._request.queue) is None:
                log.info("session %s stays on %s: %s has no queue %r", self.session_id, self.server.target,
                         server.target, c._request.queue)
                return False
        try:
            stream = await self._start_stream(server, adopt=False)
        except MeshMQError as exc:
            log.info("session %s stays on %s: %s", self.session_id, self.server.target, exc)
            return False
        if not self._movable():  # the old stream failed, or work began, while the new one opened
            stream.discard()
            return False
        # From here to the creates on the new stream: no await.
        self._flush_acks()
        for p in self._producers.values():
            p._flush()
        old_stream = _Stream(self._call, self._outq)
        old_stream.tasks = self._tasks
        old = _OldStream(old_stream, self.server, {p: set(p._inflight) for p in self._producers.values()})
        for c in self._consumers.values():
            old_stream.outq.put_nowait(bpb.SessionRequest(close_consumer=c._hand_over()))
        self._old = old
        self._call, self._outq, self._tasks = stream.call, stream.outq, stream.tasks
        left = self.server
        self.server = server
        self.node_id, self.session_id = stream.node_id, stream.session_id
        self.router_protocol = stream.router_protocol
        waits = self._queue_creates()
        old.retiring = asyncio.create_task(self._retire(old))
        self.moves += 1
        log.info("session %s moved from %s to %s (rebalance)", self.session_id, left.target, server.target)
        await self._await_creates(waits)
        return True

    async def _retire(self, old: _OldStream) -> None:
        """End the stream a move left once it owes nothing, or after callTimeout."""
        loop = asyncio.get_running_loop()
        until = loop.time() + self.options.callTimeout / 1000
        while old is self._old and old.owes(self._consumers.values()) and loop.time() < until:
            old.changed.clear()
            try:
                await wait_for(old.changed.wait(), until - loop.time())
            except asyncio.TimeoutError:
                break
        if old is self._old:
            self._end_old_stream()
        self._try_move()

    def _end_old_stream(self) -> None:
        """End the old stream gracefully: its node gives back what is still unacked."""
        old, self._old = self._old, None
        if old is None:
            return
        old.stream.outq.put_nowait(None)
        for c in self._consumers.values():
            c._forget_old_stream()
        # Batches it never confirmed: their outcome is unknown (the node ends the session
        # only after its sends settle, so this is rare: callTimeout passed without a confirm).
        left = {p: ids for p, ids in old.batches.items() if ids & p._inflight.keys()}
        if left:
            err = UnblockedError(f"the session moved from {old.server.target} before these sends were confirmed; "
                                 "their outcome is unknown")
            for p, ids in left.items():
                p._on_old_stream_lost(ids, err)

    def _settle_on_old_stream(self, consumer_id: int, delivery_id: int, *, nack: bool) -> bool:
        """Send an ack (or nack) of a message handed before a planned move to the stream it came on."""
        old = self._old
        if old is None:
            return False
        ids = [delivery_id]
        req = (bpb.SessionRequest(nack=bpb.NackBatch(consumer_id=consumer_id, delivery_ids=ids)) if nack
               else bpb.SessionRequest(ack=bpb.AckBatch(consumer_id=consumer_id, delivery_ids=ids)))
        old.stream.outq.put_nowait(req)
        return True

    def _old_stream_settled(self) -> None:
        if self._old is not None:
            self._old.changed.set()

    def _dispatch_aside(self, call: grpc.aio.StreamStreamCall, resp: bpb.SessionResponse) -> None:
        """A response on a stream that is not the session's current one: the answer of a
        stream being opened for a move, or what the stream a move left still sends
        (confirms and errors of its sends count; deliveries there were given back)."""
        kind = resp.WhichOneof("kind")
        if kind == "opened" and call is self._opening:
            fut = self._calls.pop(("opened", 0), None)
            if fut is not None and not fut.done():
                fut.set_result(resp.opened)
            return
        old = self._old
        if old is None or call is not old.stream.call:
            return
        if kind == "confirm":
            p = self._producers.get(resp.confirm.producer_id)
            if p is not None:
                p._on_confirm(resp.confirm)
            old.changed.set()
        elif kind == "error" and resp.error.producer_id in self._producers:
            self._producers[resp.error.producer_id]._on_error(
                resp.error.request_id, error_for(resp.error.reason, resp.error.message))
            old.changed.set()

    def _lost_aside(self, call: grpc.aio.StreamStreamCall, err: MeshMQError) -> None:
        """A stream other than the current one ended: a stream opened for a move (the
        move fails), or the one a move left (what it owed is unknown now)."""
        if call is self._opening:
            fut = self._calls.pop(("opened", 0), None)
            if fut is not None and not fut.done():
                fut.set_exception(err)
            return
        old = self._old
        if old is not None and call is old.stream.call:
            log.info("the stream session %s left on %s ended: %s", self.session_id, old.server.target, err)
            self._end_old_stream()
            old.changed.set()

    def _dispatch(self, resp: bpb.SessionResponse) -> None:
        kind = resp.WhichOneof("kind")
        if kind == "redirect":
            r = resp.redirect
            self._lost(self._call, ScaledDownError(
                f"the node scaled down ({r.reason}); its messages are on node {r.node_id} at {r.connector}: "
                "reconnect there", target=r.connector, target_node_id=r.node_id))
            return
        if kind == "deliveries":
            c = self._consumers.get(resp.deliveries.consumer_id)
            if c is not None:
                c._on_deliveries(resp.deliveries)
        elif kind == "confirm":
            p = self._producers.get(resp.confirm.producer_id)
            if p is not None:
                p._on_confirm(resp.confirm)
        elif kind == "large_chunk":
            c = self._consumers.get(resp.large_chunk.consumer_id)
            if c is not None:
                c._on_large_chunk(resp.large_chunk)
        elif kind == "error":
            self._on_error(resp.error)
        elif kind is None:
            return  # a kind this SDK does not know (a newer router): ignored (docs/protocol.md, "Versioning")
        else:
            if kind == "tx_result" and not resp.tx_result.committed:
                # Rolled back: the router took back everything our consumers held,
                # and redelivers it in order after this answer.
                for c in self._consumers.values():
                    c._on_rollback()
            body = getattr(resp, kind)
            key = {
                "opened": 0,
                "producer_created": getattr(body, "producer_id", 0),
                "consumer_created": getattr(body, "consumer_id", 0),
                "tx_result": getattr(body, "request_id", 0),
                "unsubscribed": getattr(body, "request_id", 0),
                "temporary_queue_created": getattr(body, "request_id", 0),
                "temporary_queue_deleted": getattr(body, "request_id", 0),
                "consumer_closed": getattr(body, "consumer_id", 0),
            }.get(kind, 0)
            fut = self._calls.pop((kind, key), None)
            if fut is not None and not fut.done():
                fut.set_result(body)

    def _on_error(self, e: bpb.SessionError) -> None:
        err = error_for(e.reason, e.message)
        candidates = []
        if e.consumer_id:
            candidates += [("consumer_created", e.consumer_id), ("consumer_closed", e.consumer_id)]
        if e.producer_id:
            candidates.append(("producer_created", e.producer_id))
        if e.request_id:
            candidates += [(kind, e.request_id) for kind in ("tx_result", "unsubscribed", "temporary_queue_created",
                                                             "temporary_queue_deleted")]
        for key in candidates:
            fut = self._calls.pop(key, None)
            if fut is not None and not fut.done():
                fut.set_exception(err)
                return
        if e.consumer_id and e.consumer_id in self._consumers:
            self._consumers[e.consumer_id]._on_error(err)
            return
        if e.producer_id and e.producer_id in self._producers:
            self._producers[e.producer_id]._on_error(e.request_id, err)
            return
        if self.exception_listener is not None:
            self.exception_listener(err)
        else:
            log.warning("router reported: %s (%s)", err, err.reason.value)

    def _fail(self, err: MeshMQError) -> None:
        if self._failure is not None:
            return
        self._failure = err
        self._ready.set()  # wakes calls waiting out a failover: they find the failure
        for fut in self._calls.values():
            if not fut.done():
                fut.set_exception(err)
        self._calls.clear()
        for p in self._producers.values():
            p._on_failure(err)
        for c in self._consumers.values():
            c._on_error(err)
        self._drained.set()
        if not self._closed and self.exception_listener is not None:
            self.exception_listener(err)

    # ------------------------------------------------------------ API

    def _flush_acks(self) -> None:
        """Send pending acks now, so they reach the router before the next request."""
        for c in self._consumers.values():
            c._flush_acks()

    async def create_producer(self, address: str = "", *, idempotent: bool = False) -> Producer:
        """A producer; `address` is its default, a message's own address wins.

        An idempotent producer stamps a duplicate id on each message and, after
        a failover, sends again what was not confirmed instead of raising
        UnblockedError; the router drops what it had stored (producer.py).
        """
        await self._wait_ready()
        self._flush_acks()
        pid = next(self._ids)
        fut = self._expect("producer_created", pid)
        p = Producer(self._members, pid, address, self.options, idempotent)
        self._producers[pid] = p
        self.write(bpb.SessionRequest(create_producer=p._create_request()))
        try:
            await self._wait(fut)
        except MeshMQError:
            self._producers.pop(pid, None)
            raise
        return p

    async def create_queue(
        self, name: str, *, address: str = "", routing_type: str = "anycast", filter: str = "", durable: bool = True,
        last_value_key: str | None = None, non_destructive: bool | None = None, exclusive: bool | None = None,
        group_rebalance: bool | None = None, group_rebalance_pause_dispatch: bool | None = None,
        group_buckets: int | None = None, group_first_key: str | None = None,
    ):
        """Create a queue on this session's node (management permission needed when
        security is on). A non-durable queue is created again on the node a failover
        moves the session to, as Artemis does: that node never had it."""
        await self._wait_ready()
        spec = dict(address=address, routing_type=routing_type, filter=filter, durable=durable,
                    last_value_key=last_value_key, non_destructive=non_destructive, exclusive=exclusive,
                    group_rebalance=group_rebalance, group_rebalance_pause_dispatch=group_rebalance_pause_dispatch,
                    group_buckets=group_buckets, group_first_key=group_first_key)
        info = await self._host.admin(self.server).create_queue(name, **spec)
        if not durable:
            self._volatile_queues[name] = spec
        return info

    async def create_consumer(
        self,
        queue: str | TemporaryQueue = "",
        *,
        address: str = "",
        subscription: str = "",
        filter: str = "",
        window_size: int | None = None,
        shared: bool = False,
        durable: bool = True,
        temporary: bool = False,
    ) -> Consumer:
        """Consume from `queue`, or subscribe to a multicast `address`.

        `queue` may be a temporary queue of this connection
        (`create_temporary_queue`), on whichever node this session is.
        `temporary=True` with a queue name: a new temporary queue of this
        consumer alone: anycast, on an address of its own name, deleted when
        this consumer closes; others send to it by that name.

        Without a `subscription` name the subscription is the consumer's own
        and temporary. With one it is a named subscription, as JMS 2.0 and
        Artemis have them (docs/broker.md, "Subscriptions"):

        * durable, unshared (JMS `createDurableConsumer`): keeps messages
          while no consumer is attached, until `unsubscribe`; needs the
          connection's client id (`clientID` in the URI), which qualifies it:
          its queue is `clientID.subscription` (`consumer.queue`); one
          consumer at a time.
        * `shared=True` (`createSharedDurableConsumer`): any number of
          consumers, on any connection and node, share it, each message going
          to one of them; its queue is `clientID.subscription`, or
          `subscription` without a client id.
        * `shared=True, durable=False` (`createSharedConsumer`): shared, not
          stored, and gone with its last consumer (`nonDurable.` in front of
          its queue's name).

        Asking for an existing durable subscription with another `address` or
        `filter` replaces it (its messages go) when it has no consumer.
        """
        await self._wait_ready()
        queue = str(queue)
        tq = self._host.temporary_queues.get(queue)
        if tq is not None and queue not in self._temporary_queues:
            await self._hold_temporary_queue(tq)
        self._flush_acks()
        cid = next(self._ids)
        window = self.options.consumerWindowSize if window_size is None else window_size
        fut = self._expect("consumer_created", cid)
        c = Consumer(self._members, bpb.CreateConsumer(
            consumer_id=cid, queue=queue, address=address, subscription=subscription, filter=filter, window_size=window,
            shared=shared, durable=durable, temporary=temporary,
        ))
        self._consumers[cid] = c
        self.write(bpb.SessionRequest(create_consumer=c._create_request()))
        try:
            created = await self._wait(fut)
        except MeshMQError:
            self._consumers.pop(cid, None)
            raise
        c.queue = created.queue
        return c

    async def unsubscribe(self, subscription: str) -> int:
        """Delete the durable subscription `subscription` of this connection's
        client id with the messages it holds (JMS `Session.unsubscribe`);
        returns how many there were. Raises with reason QUEUE_NOT_FOUND when
        there is none, QUEUE_IN_USE while it has consumers."""
        await self._wait_ready()
        rid = next(self._ids)
        fut = self._expect("unsubscribed", rid)
        self.write(bpb.SessionRequest(unsubscribe=bpb.Unsubscribe(request_id=rid, subscription=subscription)))
        done = await self._wait(fut)
        return done.messages_removed

    async def create_temporary_queue(self) -> TemporaryQueue:
        """A new temporary queue of this session's connection (JMS
        createTemporaryQueue, temporary_queue.py): it lives until its
        `delete()` or until the connection closes; anyone may send to it by
        its name (`str(queue)`, e.g. as a reply-to), and any session of this
        connection, on any node, may consume from it."""
        return await self._host.create_temporary_queue()

    async def _hold_temporary_queue(self, tq: TemporaryQueue) -> None:
        """Ask this session's node for the connection's temporary queue `tq` (made
        there, or already there); the node keeps it while this session is open."""
        await self._wait_ready()
        if self.router_protocol < 3:
            raise MeshMQError(f"the router at {self.server.target} speaks session protocol {self.router_protocol}; a "
                              "connection's temporary queues need protocol 3: upgrade it", Reason.UNSUPPORTED_VERSION)
        rid = next(self._ids)
        fut = self._expect("temporary_queue_created", rid)
        self.write(bpb.SessionRequest(create_temporary_queue=bpb.CreateTemporaryQueue(request_id=rid, queue=tq.name)))
        await self._wait(fut)
        self._temporary_queues[tq.name] = tq
        tq.holders.add(self)

    def holds_open(self) -> bool:
        """Whether this session is open and has not failed (temporary_queue.py)."""
        return not self._closed and self._failure is None

    def refuse_if_consumed(self, queue: str) -> None:
        """QUEUE_IN_USE while one of this session's consumers consumes `queue`."""
        if any(c._request.queue == queue and not c._closed for c in self._consumers.values()):
            raise MeshMQError(f"temporary queue {queue!r} has a consumer on this connection: close it before "
                              "deleting the queue", Reason.QUEUE_IN_USE)

    async def delete_temporary_queue(self, queue: str) -> None:
        """Delete the connection's temporary queue `queue` on this session's node
        (TemporaryQueue.delete); one already gone there is no error.

        The caller has made sure none of the connection's consumers is open on
        it (refuse_if_consumed on every holder). On a node speaking protocol 4
        their closes were answered before they returned, so QUEUE_IN_USE there
        is not a close still on its way and is raised at once. A node below 4 does not answer a
        close, and one just sent on another session may not have reached it
        yet: QUEUE_IN_USE is then asked again until callTimeout, and raised after it."""
        deadline = asyncio.get_running_loop().time() + self.options.callTimeout / 1000
        pause = 0.005
        while True:
            await self._wait_ready()
            rid = next(self._ids)
            fut = self._expect("temporary_queue_deleted", rid)
            self.write(bpb.SessionRequest(delete_temporary_queue=bpb.DeleteTemporaryQueue(request_id=rid, queue=queue)))
            try:
                await self._wait(fut)
                return
            except MeshMQError as exc:
                if exc.reason is Reason.QUEUE_NOT_FOUND:
                    return
                if (exc.reason is not Reason.QUEUE_IN_USE or self.router_protocol >= 4
                        or asyncio.get_running_loop().time() + pause > deadline):
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.1)

    def forget_temporary_queue(self, queue: str) -> None:
        self._temporary_queues.pop(queue, None)

    async def create_browser(self, queue: str, filter: str = "", *, page_size: int = 0) -> QueueBrowser:
        """A browser of `queue` on this session's node (browser.py): `async for`
        meets its messages (those `filter` selects) in the order a consumer
        would, without consuming them or changing their delivery counts.
        Needs `browse` on the queue's address when security is on. A missing
        queue, a bad selector or a refusal is raised here; `page_size`
        messages travel at a time (0: 100)."""
        await self._wait_ready()
        browser = QueueBrowser(self._host.admin(self.server), queue, filter, page_size)
        await browser.start()
        self._browsers = [b for b in self._browsers if not b.closed] + [browser]
        return browser

    async def reply_producer(self) -> Producer:
        """The session's anonymous producer for requests and replies, made on first use."""
        async with self._reply_lock:
            if self._reply_producer is None or self._reply_producer.id not in self._producers:
                self._reply_producer = await self.create_producer()
            return self._reply_producer

    async def request(self, address: str, body: bytes = b"", *, timeout: float = 30.0,
                      properties: Mapping[str, PropertyValue] | None = None, **send_options) -> ReceivedMessage:
        """Send a request to `address` and return its reply (request_reply.py):
        the reply goes to a temporary queue of this session, matched by
        correlation id; TimeoutError after `timeout` seconds without it."""
        return await request_reply.request(self, address, body, timeout=timeout, properties=properties,
                                           **send_options)

    async def reply(self, request_msg: ReceivedMessage, body: bytes = b"", *,
                    properties: Mapping[str, PropertyValue] | None = None, **send_options) -> None:
        """Answer `request_msg`: send `body` to its reply_to with its correlation id."""
        await request_reply.reply(self, request_msg, body, properties=properties, **send_options)

    async def commit(self) -> None:
        """Commit the transaction. After a failover that met work in it, the
        transaction is rolled back instead and TransactionRolledBackError says so:
        redo its work on this same session (Artemis's rollback-only)."""
        await self._wait_ready()
        if self._rollback_only:
            await self._tx("rollback")
            raise TransactionRolledBackError(
                "the session failed over during this transaction: it was rolled back; redo its sends and acks "
                "(with duplicate ids on its messages, a retry never stores one twice)"
            )
        await self._tx("commit")

    async def rollback(self) -> None:
        await self._wait_ready()
        await self._tx("rollback")

    async def _tx(self, kind: str) -> None:
        for p in self._producers.values():
            p._flush()
        self._flush_acks()
        rid = next(self._ids)
        fut = self._expect("tx_result", rid)
        req = bpb.TxRequest(request_id=rid)
        if kind == "rollback":
            for c in self._consumers.values():
                req.handed.add(consumer_id=c.id, last_handed_delivery_id=c.last_handed)
        self.write(bpb.SessionRequest(**{kind: req}))
        self._ending = kind
        try:
            await self._wait(fut)
        finally:
            self._ending = ""
        self._tx_work = self._rollback_only = False
        self._try_move()

    async def _close_consumer(self, consumer: Consumer, *, on_node: bool, wait: bool = True) -> None:
        """Close `consumer` on the node (Consumer.close) and forget it here. A node
        speaking protocol 4 answers once the consumer is gone from its queue and
        what it held is back there, and this waits for it (callTimeout), as
        Artemis's close blocks: another session's consumer, or a temporary
        queue's delete, finds the queue as the close left it. A stream that
        fails meanwhile ends the wait: its node gives back everything as the
        session ends there. `wait` false (the session is closing): no answer
        asked, the stream's end follows the close on the same stream."""
        cid = consumer.id
        self._consumers.pop(cid, None)
        if not on_node or self._failure is not None or not self._ready.is_set():
            return  # (failing over: the consumer is not recreated on the next stream)
        answered = wait and self.router_protocol >= 4
        fut = self._expect("consumer_closed", cid) if answered else None
        self.write(bpb.SessionRequest(close_consumer=bpb.CloseConsumer(
            consumer_id=cid, last_handed_delivery_id=consumer.last_handed, answer=answered)))
        if fut is None:
            return
        try:
            await self._wait(fut)
        except MeshMQError as exc:
            # The stream failed or the session did: nothing of the consumer is left on it.
            if not isinstance(exc, UnblockedError) and self._failure is None:
                raise  # (no answer within callTimeout)

    def _forget_producer(self, pid: int) -> None:
        self._producers.pop(pid, None)

    async def close(self) -> None:
        """Flush outstanding acks, wait for outstanding confirms, end the stream."""
        if self._closed:
            return
        recovering = self._recovery is not None
        if recovering:
            self._recovery.cancel()
            self._recovery = None
        self._move_target = None
        if self._moving is not None:
            self._moving.cancel()
        if self._failure is None and self._ready.is_set() and not recovering:
            self._flush_acks()
            # Each consumer closed with the last delivery it handed out, so the ones
            # still in its buffer are not counted as attempts (docs/protocol.md 6.4);
            # no answer awaited: the stream's end comes after the closes on it.
            for c in list(self._consumers.values()):
                await c.close(wait=False)
            for p in list(self._producers.values()):
                try:
                    await p.flush()
                except MeshMQError:
                    pass
        self._closed = True
        for tq in self._temporary_queues.values():
            tq.holders.discard(self)
        for b in self._browsers:
            await b.close()
        self._end_old_stream()
        if self._failure is None and (recovering or not self._ready.is_set()):
            # Closed while failing over: what an idempotent producer kept to send again never will be.
            closed = UnblockedError("the session was closed while it failed over; its outcome is unknown")
            for p in self._producers.values():
                p._on_failure(closed)
        self._outq.put_nowait(None)
        reader = self._tasks[0] if self._tasks else None
        if reader is not None and not reader.done():
            try:
                await wait_for(asyncio.shield(reader), 5)
            except (asyncio.TimeoutError, Exception):
                pass
        for t in self._tasks:
            t.cancel()
        if self._call is not None:
            self._call.cancel()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
