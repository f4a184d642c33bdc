"""A client session: one bidirectional stream to a router carrying this
session's producers, consumers, acks and transaction calls.

One writer task owns the stream's write side and one reader task routes each
response to the producer, consumer or call waiting for it, so application
code never touches the stream directly.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable

import grpc

from meshmq.errors import (
    ConnectionFailedError, InvalidRequestError, MeshMQError, ScaledDownError, error_for, from_rpc_error,
)
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import broker_pb2_grpc as bgrpc

from .consumer import Consumer
from .producer import Producer
from .uri import ClientOptions

log = logging.getLogger("meshmq.client")


class Session:
    def __init__(self, stub: bgrpc.BrokerStub, metadata, options: ClientOptions, transacted: bool) -> None:
        self._stub = stub
        self._metadata = metadata
        self.options = options
        self.transacted = transacted
        self.node_id = ""
        self.session_id = ""
        self._call: grpc.aio.StreamStreamCall | None = None
        self._outq: asyncio.Queue[bpb.SessionRequest | None] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._producers: dict[int, Producer] = {}
        self._consumers: dict[int, Consumer] = {}
        self._calls: dict[tuple[str, int], asyncio.Future] = {}
        self._tasks: list[asyncio.Task] = []
        self._failure: MeshMQError | None = None
        self._closed = False
        self._drained = asyncio.Event()
        # Called with every error the router reports that no pending call owns.
        self.exception_listener: Callable[[MeshMQError], None] | None = None

    async def _open(self) -> None:
        self._call = self._stub.Session(metadata=self._metadata)
        opened = self._expect("opened", 0)
        try:
            await self._call.write(
                bpb.SessionRequest(open=bpb.OpenSession(client_id=self.options.clientID, transacted=self.transacted))
            )
        except grpc.RpcError as exc:  # never reached the node (e.g. its TLS handshake failed): a typed error
            self._calls.clear()
            raise from_rpc_error(exc) from None
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._write())]
        resp = await self._wait(opened)
        self.node_id, self.session_id = resp.node_id, resp.session_id

    # ------------------------------------------------------------ plumbing

    def _expect(self, kind: str, key: int) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self._calls[(kind, key)] = fut
        return fut

    async def _wait(self, fut: asyncio.Future):
        try:
            return await asyncio.wait_for(fut, self.options.callTimeout / 1000)
        except asyncio.TimeoutError:
            raise ConnectionFailedError(f"no answer from the router within callTimeout={self.options.callTimeout} ms") from None

    def write(self, req: bpb.SessionRequest) -> None:
        """Queue a request for the stream (never blocks)."""
        self._check()
        self._outq.put_nowait(req)

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

    async def _write(self) -> None:
        try:
            while True:
                req = await self._outq.get()
                if req is None:
                    await self._call.done_writing()
                    return
                await self._call.write(req)
                if self._outq.qsize() <= 2:
                    self._drained.set()
        except (grpc.RpcError, grpc.aio.UsageError, asyncio.InvalidStateError) as exc:
            self._fail(ConnectionFailedError(f"session stream failed: {exc}"))

    async def _read(self) -> None:
        try:
            async for resp in self._call:
                self._dispatch(resp)
            self._fail(ConnectionFailedError("the router closed the session"))
        except grpc.RpcError as exc:
            self._fail(from_rpc_error(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in dispatch: fail loudly rather than hang callers
            log.exception("session reader failed")
            self._fail(MeshMQError(f"client session failed: {exc}"))

    def _dispatch(self, resp: bpb.SessionResponse) -> None:
        kind = resp.WhichOneof("kind")
        if kind == "redirect":
            r = resp.redirect
            self._fail(ScaledDownError(f"the node scaled down ({r.reason}); its messages are on node {r.node_id} "
                                       f"at {r.connector}: reconnect there", target=r.connector,
                                       target_node_id=r.node_id))
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
            }.get(kind, 0)
            fut = self._calls.pop((kind, key), None)
            if fut is not None and not fut.done():
                fut.set_result(body)

    def _on_error(self, e: bpb.SessionError) -> None:
        err = error_for(e.reason, e.message)
        candidates = []
        if e.consumer_id:
            candidates.append(("consumer_created", e.consumer_id))
        if e.producer_id:
            candidates.append(("producer_created", e.producer_id))
        if e.request_id:
            candidates.append(("tx_result", e.request_id))
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

    async def create_producer(self, address: str = "") -> Producer:
        """A producer; `address` is its default, a message's own address wins."""
        self._flush_acks()
        pid = next(self._ids)
        fut = self._expect("producer_created", pid)
        p = Producer(self, pid, address, self.options)
        self._producers[pid] = p
        self.write(bpb.SessionRequest(
            create_producer=bpb.CreateProducer(producer_id=pid, address=address, window_size=p.window_size)
        ))
        await self._wait(fut)
        return p

    async def create_consumer(
        self,
        queue: str = "",
        *,
        address: str = "",
        subscription: str = "",
        filter: str = "",
        window_size: int | None = None,
    ) -> Consumer:
        """Consume from `queue`, or subscribe to a multicast `address`.

        A subscription with a `subscription` name is durable (it keeps
        messages while no consumer is attached); without one it is temporary.
        """
        self._flush_acks()
        cid = next(self._ids)
        window = self.options.consumerWindowSize if window_size is None else window_size
        fut = self._expect("consumer_created", cid)
        c = Consumer(self, cid, window)
        self._consumers[cid] = c
        self.write(
            bpb.SessionRequest(
                create_consumer=bpb.CreateConsumer(
                    consumer_id=cid, queue=queue, address=address, subscription=subscription, filter=filter, window_size=window
                )
            )
        )
        try:
            created = await self._wait(fut)
        except MeshMQError:
            self._consumers.pop(cid, None)
            raise
        c.queue = created.queue
        return c

    async def commit(self) -> None:
        await self._tx("commit")

    async def rollback(self) -> None:
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
        await self._wait(fut)

    def _forget_consumer(self, cid: int) -> None:
        self._consumers.pop(cid, None)

    async def close(self) -> None:
        """Flush outstanding acks, wait for outstanding confirms, end the stream."""
        if self._closed:
            return
        if self._failure is None:
            self._flush_acks()
            for p in list(self._producers.values()):
                try:
                    await p.flush()
                except MeshMQError:
                    pass
        self._closed = True
        self._outq.put_nowait(None)
        reader = self._tasks[0] if self._tasks else None
        if reader is not None:
            try:
                await asyncio.wait_for(asyncio.shield(reader), 5)
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
