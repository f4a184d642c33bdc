"""The verify run: producers and consumers through the SDK on a verify-owned
anycast queue, faults on a schedule, then a drain until every confirmed
message is accounted for (or the drain timeout passes).

Producers send durable messages with a duplicate id each (`<run>-p<i>-<seq>`)
and note each confirm; a send the broker did not confirm (a failover unblocked
it) is in doubt and is not sent again: sent again on another node it could be
stored twice, since duplicate-id caches are per node. Consumers take batches
in a transacted session and commit each batch, so the report can tell a
consume the broker confirmed from one a failover rolled back (report.py).

Every client connects with a `failover:` URI that lists every node of the
cluster, starting at its own node (spread round the nodes), pinging after 1 s
of silence: a killed or frozen node's clients move to another node.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote

from meshmq.client import connect, parse_uri
from meshmq.errors import (ConnectionFailedError, DuplicateIdError, MeshMQError, TransactionRolledBackError,
                           UnblockedError)

from .faults import Fault, run_schedule
from .report import (CONFIRMED, IN_DOUBT, PENDING, PRODUCER_PROPERTY, REFUSED, RUN_PROPERTY, SEQ_PROPERTY,
                     Ledger, Receipt, Report, tally, verify_id)

log = logging.getLogger("meshmq.verify")

DEFAULT_QUEUE = "meshmq.verify"
# Failure detection and failover pacing of the verify clients (ms).
CLIENT_OPTIONS = ("randomize=false&maxReconnectAttempts=-1&initialReconnectDelay=100&maxReconnectDelay=1000"
                  "&clientFailureCheckPeriod=1000&connectionTTL=2000&callTimeout=10000")
BATCH = 100
RECEIVE_WAIT_S = 0.2
# After every confirmed message is received: how long the consumers keep listening for copies.
QUIET_S = 1.0
# How long producers wait for their last confirms at the end of the sending phase.
CONFIRM_WAIT_S = 15.0


@dataclass
class VerifyOptions:
    url: str
    duration: float = 60.0
    producers: int = 4
    # Consumers: 0 = one per node.
    consumers: int = 0
    queue: str = DEFAULT_QUEUE
    # Messages per second, all producers together (0: as fast as confirms come).
    rate: float = 200.0
    drain_timeout: float = 60.0
    body_size: int = 64
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    every: float = 20.0
    down_for: float = 1.0


def _node_uri(target: str, parsed) -> str:
    o = parsed.options
    user = f"{quote(o.username, safe='')}:{quote(o.password, safe='')}@" if o.username else ""
    return f"meshmq://{user}{target}" + (f"?{_tls_options(o)}" if o.sslEnabled else "")


def _tls_options(o) -> str:
    parts = ["sslEnabled=true"]
    for name in ("trustStorePath", "keyStorePath", "keyPath"):
        if getattr(o, name):
            parts.append(f"{name}={quote(getattr(o, name), safe='/')}")
    return "&".join(parts)


def failover_uri(targets: list[str], first: int, parsed) -> str:
    """A failover: URI over every node, starting at targets[first]."""
    o = parsed.options
    order = targets[first:] + targets[:first]
    user = f"{quote(o.username, safe='')}:{quote(o.password, safe='')}@" if o.username else ""
    items = ",".join(f"meshmq://{user if i == 0 else ''}{t}" for i, t in enumerate(order))
    tls = f"&{_tls_options(o)}" if o.sslEnabled else ""
    return f"failover:({items})?{CLIENT_OPTIONS}{tls}"


class Verifier:
    """One run. `ledger` fills while it runs (tests watch it); `run()` returns the Report."""

    def __init__(self, options: VerifyOptions, faults: list[Fault] | None = None) -> None:
        self.options = options
        self.faults = faults or []
        self.ledger = Ledger(options.run_id)
        self.targets: list[str] = []
        self._stop_consuming = asyncio.Event()
        self._started = 0.0

    async def cluster_nodes(self) -> list[str]:
        """The nodes of the cluster the URL reaches: its pushed topology (else the URL's own servers)."""
        parsed = parse_uri(self.options.url)
        async with await connect(self.options.url) as conn:
            deadline = time.monotonic() + 5
            while not conn.topology and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            found = [s.target for s in conn.topology] or [s.target for s in parsed.servers]
        return sorted(set(found))

    async def prepare_queue(self) -> None:
        """The verify queue on every node: created if missing, emptied of earlier runs' messages."""
        parsed = parse_uri(self.options.url)
        name = self.options.queue
        for target in self.targets:
            async with await connect(_node_uri(target, parsed)) as conn:
                if await conn.admin.queue(name) is None:
                    try:
                        await conn.admin.create_queue(name, address=name, routing_type="anycast", durable=True)
                    except MeshMQError as exc:
                        if "exist" not in str(exc):
                            raise
                else:
                    await conn.admin.purge_queue(name)

    async def run(self) -> Report:
        o = self.options
        started_at = time.time()
        self._started = time.monotonic()
        self.targets = await self.cluster_nodes()
        await self.prepare_queue()
        parsed = parse_uri(o.url)
        n_consumers = o.consumers or len(self.targets)
        consumers = [asyncio.create_task(self._consume(j, failover_uri(self.targets, j % len(self.targets), parsed)))
                     for j in range(n_consumers)]
        until = time.monotonic() + o.duration
        producers = [asyncio.create_task(self._produce(i, failover_uri(self.targets, i % len(self.targets), parsed),
                                                       until)) for i in range(o.producers)]
        schedule = asyncio.create_task(run_schedule(self.faults, every=o.every, down_for=o.down_for, until=until,
                                                    started=self._started, record=self.ledger.faults.append))
        try:
            await asyncio.gather(*producers)
            await schedule
            drained = await self._drain()
        finally:
            self._stop_consuming.set()
            for t in (*producers, schedule):
                t.cancel()
            await asyncio.gather(*consumers, return_exceptions=True)
        report = tally(self.ledger)
        if not drained:
            report.problems.append(f"drain timeout ({o.drain_timeout:g} s) passed with "
                                   f"{self.ledger.outstanding()} confirmed message(s) not received")
        report.info = {
            "url": o.url, "queue": o.queue, "nodes": self.targets, "producers_count": o.producers,
            "consumers_count": n_consumers, "duration_s": o.duration, "started_at": started_at,
            "finished_at": time.time(), "elapsed_s": round(time.monotonic() - self._started, 2),
        }
        return report

    async def _drain(self) -> bool:
        """Wait until every confirmed message was received and nothing came for QUIET_S."""
        deadline = time.monotonic() + self.options.drain_timeout
        while self.ledger.outstanding():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.1)
        count = -1
        while count != len(self.ledger.receipts) and time.monotonic() < deadline:
            count = len(self.ledger.receipts)
            await asyncio.sleep(QUIET_S)
        return True

    async def _produce(self, index: int, uri: str, until: float) -> None:
        o = self.options
        sent = self.ledger.sent
        body = b"v" * o.body_size
        interval = o.producers / o.rate if o.rate > 0 else 0.0
        waiting: list[asyncio.Future] = []

        def settle(key, fut: asyncio.Future) -> None:
            exc = fut.exception() if not fut.cancelled() else None
            if fut.cancelled() or isinstance(exc, (UnblockedError, ConnectionFailedError)):
                sent[key] = IN_DOUBT
            elif exc is None or isinstance(exc, DuplicateIdError):
                sent[key] = CONFIRMED  # (a duplicate id refused: stored before)
            else:
                sent[key] = REFUSED

        conn = await connect(uri)
        try:
            producer = await (await conn.session()).create_producer(o.queue)
            seq = 0
            next_at = time.monotonic()
            while time.monotonic() < until:
                key = (index, seq)
                sent[key] = PENDING
                try:
                    fut = await producer.send_async(
                        body, duplicate_id=verify_id(o.run_id, index, seq), durable=True, routing_type="anycast",
                        properties={RUN_PROPERTY: o.run_id, PRODUCER_PROPERTY: index, SEQ_PROPERTY: seq})
                except (UnblockedError, ConnectionFailedError):
                    sent[key] = IN_DOUBT
                except MeshMQError as exc:  # refused before it was sent (e.g. the address is full)
                    sent[key] = REFUSED
                    self._problem(f"producer {index}: {exc}")
                    await asyncio.sleep(0.1)
                else:
                    fut.add_done_callback(lambda f, key=key: settle(key, f))
                    waiting.append(fut)
                seq += 1
                if interval:
                    next_at += interval
                    await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                elif seq % BATCH == 0:
                    await asyncio.sleep(0)
            pending = [f for f in waiting if not f.done()]
            if pending:
                await asyncio.wait(pending, timeout=CONFIRM_WAIT_S)
        finally:
            await conn.close()
        for key, state in sent.items():  # never answered: in doubt
            if key[0] == index and state == PENDING:
                sent[key] = IN_DOUBT

    async def _consume(self, index: int, uri: str) -> None:
        """Take batches in a transaction, commit each, record each delivery with its commit's outcome.
        A consumer whose connection cannot go on is opened again."""
        while not self._stop_consuming.is_set():
            try:
                conn = await connect(uri)
            except MeshMQError as exc:
                self._problem(f"consumer {index}: {exc}")
                await asyncio.sleep(0.5)
                continue
            try:
                session = await conn.session(transacted=True)
                consumer = await session.create_consumer(self.options.queue)
                while not self._stop_consuming.is_set():
                    batch = await consumer.receive_batch(BATCH, RECEIVE_WAIT_S)
                    if not batch:
                        continue
                    for m in batch:
                        m.ack()
                    failure: MeshMQError | None = None
                    try:
                        await session.commit()
                    except MeshMQError as exc:  # rolled back, or in doubt: either way not a confirmed consume
                        failure = exc
                    self.ledger.receipts.extend(self._receipt(index, m, failure is None) for m in batch)
                    if failure is not None and not isinstance(
                            failure, (TransactionRolledBackError, UnblockedError, ConnectionFailedError)):
                        raise failure
                return
            except MeshMQError as exc:
                log.info("verify consumer %d starts again: %s", index, exc)
                await asyncio.sleep(0.2)
            finally:
                await conn.close()

    def _problem(self, text: str) -> None:
        """A problem worth reporting, once."""
        if text not in self.ledger.problems:
            self.ledger.problems.append(text)

    @staticmethod
    def _receipt(consumer: int, m, committed: bool) -> Receipt:
        props = m.properties or {}
        run = props.get(RUN_PROPERTY)
        try:
            key = (int(props[PRODUCER_PROPERTY]), int(props[SEQ_PROPERTY])) if run is not None else None
        except (KeyError, ValueError, TypeError):
            key = None
        label = "" if key is not None else f"message {m.proto.node_id}:{m.message_id} without verify properties"
        return Receipt(consumer, str(run or ""), key, committed, label)
