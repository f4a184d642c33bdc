"""The journal's SQL writer in a process of its own, and group commit.

Why a process: SQL work is mostly C that releases the GIL, but binding
thousands of parameters per transaction holds it. In one process with the
router's event loop, a writer thread and the loop kept waiting for each
other's GIL (measured: a 500-message transaction took ~14 ms in-process and
~9 ms alone), so the store, not the disk, capped durable throughput, and the
second core sat idle. Here the writer has its own interpreter: the journal
service (in-process for the embedded default, or `meshmq serve journal`)
keeps its interface and its reads, and writes each append to this process's
pipe straight from its event loop.

Group commit happens here: whatever appends are waiting in the pipe when a
transaction ends become the next transaction (up to `max-batch-records`), so
a lone append commits at once and a flood of them costs one fsync per batch.
On PostgreSQL a second transaction may start, on a second connection, while
the one before it waits for its commit, when the two touch different
messages (`overlap.py`; measured in docs/performance.md). The owner never
waits: it writes appends as they come and resolves their futures, in order,
as the answers arrive — the process answers transactions in the order they
started, whichever commits first.

The process owns every write to the store: appends and WAL checkpoints. It
exits when its pipe closes (its owner stopped or died: a kill -9 of the
router ends it too), after finishing the transaction in hand; a successor
owner is activated at a newer epoch first, so nothing it might still write is
accepted. The process keeps no epoch of its own: each transaction checks the
stored one under a lock that an activation must wait for (`JournalStore.apply`).
It ignores SIGINT and SIGTERM: those reach a whole process group (Ctrl-C, a
service manager), and the owner still needs it to store its last batch.

Protocol on stdin/stdout: a message is a little-endian uint32 frame count,
then each frame as uint32 length + bytes. The first message to the child is
its settings (JSON); it answers `ready` or `error: ...`. After that each
message to the child is one serialized AppendRequest, and each answer is one
message for one transaction: a stats frame (`_STATS`: the records it held and
the seconds it took in SQL, for the journal's metrics), then the
AppendResponses of the requests it applied, in order.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":
    # As meshmq.runtime.defer_collection, until the process is ready (its imports are
    # SQLAlchemy's); not when the owner imports this module.
    gc.disable()

import asyncio
import collections
import contextlib
import functools
import json
import logging
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from meshmq.aio import wait_for
from meshmq.errors import Reason
from meshmq.v1 import journal_pb2 as jpb

from .overlap import Footprint, footprint, may_overlap
from .store import JournalStore, StoreError

log = logging.getLogger("meshmq.journal")

_U32 = struct.Struct("<I")
# An answer's first frame: records in the transaction, seconds spent applying and committing it.
_STATS = struct.Struct("<Id")
READY = b"ready"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
_READ_SIZE = 1 << 20


# ---------------------------------------------------------------- framing


def encode_message(frames: list[bytes]) -> bytes:
    parts = [_U32.pack(len(frames))]
    for f in frames:
        parts.append(_U32.pack(len(f)))
        parts.append(f)
    return b"".join(parts)


def write_message(out: BinaryIO, frames: list[bytes]) -> None:
    out.write(encode_message(frames))
    out.flush()


def read_message(inp: BinaryIO) -> list[bytes] | None:
    """The next message's frames (blocking), or None at a clean end of stream."""
    head = inp.read(4)
    if not head:
        return None
    (count,) = _U32.unpack(_read_exact(inp, 4, head))
    frames = []
    for _ in range(count):
        (size,) = _U32.unpack(_read_exact(inp, 4))
        frames.append(_read_exact(inp, size))
    return frames


def _read_exact(inp: BinaryIO, n: int, got: bytes = b"") -> bytes:
    while len(got) < n:
        more = inp.read(n - len(got))
        if not more:
            raise EOFError(f"stream ended inside a frame ({len(got)} of {n} bytes)")
        got += more
    return got


class FrameBuffer:
    """Messages parsed from bytes as they arrive, for non-blocking readers."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_message(self) -> list[bytes] | None:
        """The next complete message, or None until more bytes arrive."""
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            return None
        (count,) = _U32.unpack_from(buf, pos)
        at = pos + 4
        frames = []
        for _ in range(count):
            if len(buf) - at < 4:
                return None
            (size,) = _U32.unpack_from(buf, at)
            if len(buf) - at - 4 < size:
                return None
            with memoryview(buf) as view:  # one copy, and the view is gone before the buffer changes
                frames.append(bytes(view[at + 4 : at + 4 + size]))
            at += 4 + size
        self._pos = at
        if at > _READ_SIZE:  # drop what has been read, now and then rather than per message
            del buf[:at]
            self._pos = 0
        return frames

    @property
    def pending_bytes(self) -> int:
        return len(self._buf) - self._pos


def record_count(req: jpb.AppendRequest) -> int:
    """Rough size of a request, to bound a transaction."""
    return (
        1
        + len(req.add_messages)
        + len(req.add_refs)
        + len(req.delete_refs)
        + len(req.delete_messages)
        + len(req.events)
        + len(req.add_large_chunks)
    )


# ---------------------------------------------------------------- owner side


class WriterProcessError(StoreError):
    """The writer process could not start; the message says why."""


class WriterProcess:
    """The owner's handle, used from one event loop: `start` (blocking, run it
    in a thread), then `attach` on the loop, then `submit` appends."""

    def __init__(self, url: str, *, sync: bool, node_id: str, max_batch_records: int = 5000,
                 stuck_transaction_ms: int = 0,
                 on_transaction: Callable[[int, int, float], None] | None = None) -> None:
        # Told (appends, records, seconds in SQL) once per transaction, on the owner's loop.
        self._on_transaction = on_transaction
        self._settings = json.dumps(
            {"url": url, "sync": sync, "node_id": node_id, "max_batch_records": max_batch_records,
             "stuck_transaction_ms": stuck_transaction_ms}
        ).encode()
        self._proc: subprocess.Popen | None = None
        self._out: asyncio.WriteTransport | None = None
        self._waiting: collections.deque[tuple[int, asyncio.Future[jpb.AppendResponse]]] = collections.deque()
        self._dead: str | None = None
        self._closing = False
        self._exited: asyncio.Future[None] | None = None

    @property
    def running(self) -> bool:
        """Started, attached and not lost: appends go to the process."""
        return self._dead is None and self._out is not None and not self._out.is_closing()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the process and wait until its store is open (blocking)."""
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "services.journal.writer_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            env=env,
            close_fds=True,
        )
        try:
            write_message(self._proc.stdin, [self._settings])
            ready, _, _ = select.select([self._proc.stdout], [], [], START_TIMEOUT_S)
            if not ready:
                self._abandon()
                raise WriterProcessError(
                    f"the journal writer process did not open the store within {START_TIMEOUT_S:.0f} s"
                )
            answer = read_message(self._proc.stdout)
        except (OSError, EOFError) as exc:
            answer = None
            log.error("journal writer process failed to start: %s", exc)
        if answer != [READY]:
            detail = answer[0].decode(errors="replace") if answer else f"exited with code {self._proc.wait(5)}"
            self._abandon()
            raise WriterProcessError(f"the journal writer process did not start: {detail}")
        log.info("journal writer process %d started", self._proc.pid)

    async def attach(self) -> None:
        """Connect the pipes to the running event loop."""
        loop = asyncio.get_running_loop()
        self._exited = loop.create_future()
        self._out, _ = await loop.connect_write_pipe(asyncio.Protocol, self._proc.stdin)
        await loop.connect_read_pipe(lambda: _Answers(self), self._proc.stdout)

    def submit(self, req: jpb.AppendRequest) -> asyncio.Future[jpb.AppendResponse]:
        """Queue one append; the future resolves once its transaction committed
        (or with a failed response: STORE_UNAVAILABLE if the process is gone)."""
        fut: asyncio.Future[jpb.AppendResponse] = asyncio.get_running_loop().create_future()
        if self._dead is not None or self._out is None or self._out.is_closing():
            fut.set_result(self._failed(req.request_id))
            return fut
        self._waiting.append((req.request_id, fut))
        self._out.write(encode_message([req.SerializeToString()]))
        return fut

    def _answered(self, frames: list[bytes]) -> None:
        if not frames:
            self._lost("it sent an answer without its stats frame")
            return
        if self._on_transaction is not None:
            records, seconds = _STATS.unpack(frames[0])
            self._on_transaction(len(frames) - 1, records, seconds)
        for frame in frames[1:]:
            if not self._waiting:
                self._lost("it answered a request nobody sent")
                return
            _, fut = self._waiting.popleft()
            if not fut.done():
                fut.set_result(jpb.AppendResponse.FromString(frame))

    def _lost(self, why: str) -> None:
        """The process is gone (or misbehaves): fail everything waiting, and later appends."""
        if self._dead is None:
            code = self._proc.poll() if self._proc is not None else None
            if code is None and not self._closing:
                self._kill()
                code = self._proc.returncode
            self._dead = f"the journal writer process exited (code {code})" + (f": {why}" if why else "")
            if not self._closing:
                log.critical("%s", self._dead)
        while self._waiting:
            rid, fut = self._waiting.popleft()
            if not fut.done():
                fut.set_result(self._failed(rid))
        if self._exited is not None and not self._exited.done():
            self._exited.set_result(None)

    def _failed(self, request_id: int) -> jpb.AppendResponse:
        return jpb.AppendResponse(
            request_id=request_id,
            ok=False,
            reason=Reason.STORE_UNAVAILABLE.value,
            message=self._dead or "the journal writer process is not running",
        )

    async def close(self) -> None:
        """Close the pipe; the process finishes what it holds, checkpoints,
        closes its store and exits. Appends still waiting are answered first."""
        if self._proc is None:
            return
        self._closing = True
        if self._out is not None:
            self._out.close()
        if self._exited is not None:
            try:
                await wait_for(asyncio.shield(self._exited), STOP_TIMEOUT_S)
            except asyncio.TimeoutError:
                pass
        proc = self._proc
        try:
            await asyncio.to_thread(proc.wait, STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error("journal writer process %d did not stop in %.0f s; killing it", proc.pid, STOP_TIMEOUT_S)
            self._kill()
        self._proc = None

    def _abandon(self) -> None:
        """A process that failed to start: gone, with its pipes."""
        self._kill()
        for stream in (self._proc.stdin, self._proc.stdout):
            stream.close()
        self._proc = None

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()


class _Answers(asyncio.Protocol):
    """Reads the writer process's answers on the owner's event loop."""

    def __init__(self, owner: WriterProcess) -> None:
        self._owner = owner
        self._buffer = FrameBuffer()

    def data_received(self, data: bytes) -> None:
        self._buffer.feed(data)
        while (frames := self._buffer.next_message()) is not None:
            self._owner._answered(frames)

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._lost(str(exc) if exc else "")


# ---------------------------------------------------------------- the process


class _Requests:
    """The child's side of the pipe: blocks for the first request of a
    transaction, then takes whatever else is already waiting."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = FrameBuffer()
        self._held: jpb.AppendRequest | None = None
        self.closed = False

    def waiting(self) -> bool:
        """Something to read without blocking: a request held back, bytes
        buffered, or the pipe readable (or closed)."""
        return (self._held is not None or self._buffer.pending_bytes > 0 or self.closed
                or bool(select.select([self.fd], [], [], 0)[0]))

    def _read(self, block: bool) -> bool:
        if not block and not select.select([self.fd], [], [], 0)[0]:
            return False
        data = os.read(self.fd, _READ_SIZE)
        if not data:
            self.closed = True
            return False
        self._buffer.feed(data)
        return True

    def next_frames(self, block: bool) -> list[bytes] | None:
        """The next message; None when none is waiting (block=False) or the pipe closed."""
        while True:
            frames = self._buffer.next_message()
            if frames is not None:
                return frames
            if self.closed or not self._read(block):
                return None

    def _next(self, block: bool) -> jpb.AppendRequest | None:
        frames = self.next_frames(block)
        return jpb.AppendRequest.FromString(frames[0]) if frames else None

    def batch(self, max_records: int) -> list[jpb.AppendRequest]:
        """The next transaction's requests; empty once the pipe has closed."""
        first = self._held or self._next(block=True)
        self._held = None
        if first is None:
            return []
        out, size = [first], record_count(first)
        while size < max_records:
            req = self._next(block=False)
            if req is None:
                break
            n = record_count(req)
            if size + n > max_records:
                self._held = req  # starts the next transaction
                break
            out.append(req)
            size += n
        return out


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # The protocol gets its own descriptors; anything printed goes to stderr.
    inp_fd = os.dup(0)
    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s journal-writer pid=%(process)d %(name)s: %(message)s"
    )
    logging.getLogger("sqlalchemy").setLevel(logging.WARNING)
    requests = _Requests(inp_fd)
    first = requests.next_frames(block=True)
    if not first:
        return 0
    settings = json.loads(first[0])
    try:
        store = JournalStore(settings["url"], sync=settings["sync"],
                             stuck_transaction_ms=int(settings.get("stuck_transaction_ms") or 0))
        store.node_id = settings["node_id"]
        store.ping()
    except Exception as exc:  # noqa: BLE001 - reported to the owner in one line
        write_message(out, [f"error: {exc}".encode()])
        return 1
    store.start_checkpointer()
    gc.freeze()  # as meshmq.runtime.settle_heap: start-up's objects stay; collect from here
    gc.enable()
    write_message(out, [READY])
    max_records = int(settings.get("max_batch_records") or 5000)
    # PostgreSQL: two transactions may commit at once (overlap.py); SQLite has one writer anyway.
    writer = _Writer(store, out, lanes=2 if store.engine.dialect.name == "postgresql" else 1)
    try:
        writer.serve(requests, max_records)
        return 0
    except BrokenPipeError:
        return 0
    finally:
        writer.close()
        log.info("journal writer: %d transactions, %d requests, %.2f s in SQL",
                 writer.transactions, writer.applied, writer.busy)
        store.close()


class _Transaction:
    """One group-commit transaction: its requests, and its answers once applied."""

    def __init__(self, batch: list[jpb.AppendRequest]) -> None:
        self.batch = batch
        self.responses: list[jpb.AppendResponse] = []
        self.seconds = 0.0
        self.done = threading.Event()

    @functools.cached_property
    def touches(self) -> Footprint | None:
        """What may not overlap it (computed once, only when something is in flight)."""
        return footprint(self.batch)


class _Writer:
    """Applies transactions and answers them in the order they came.

    With one lane (SQLite) each transaction is applied on this thread, as it
    arrives. With two (PostgreSQL), a transaction starts on a second
    connection while the one before it commits, when `overlap.may_overlap`
    allows; otherwise it waits for the ones in flight. Answers still go out
    in order, so the owner sees appends answered in the order it sent them.
    """

    def __init__(self, store: JournalStore, out: BinaryIO, *, lanes: int) -> None:
        self._store = store
        self._out = out
        self._lanes = lanes
        self._pool = ThreadPoolExecutor(lanes, thread_name_prefix="journal-txn") if lanes > 1 else None
        # A lane writes a byte here when its transaction ends; non-blocking, so a
        # wake-up nobody read yet can never stall a lane (a stale one costs a look).
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._in_flight: collections.deque[_Transaction] = collections.deque()
        self.transactions = self.applied = 0
        self.busy = 0.0

    def serve(self, requests: _Requests, max_records: int) -> None:
        """Until the pipe closes (then the transactions in flight are finished and answered)."""
        while True:
            self._answer_finished()
            if self._in_flight and (len(self._in_flight) >= self._lanes or not self._next_arrives_first(requests)):
                self._answer_oldest()
                continue
            batch = requests.batch(max_records)
            if not batch:
                break
            txn = _Transaction(batch)
            while self._in_flight and not may_overlap(self._in_flight[-1].touches, txn.touches):
                self._answer_oldest()  # (only the newest can still be in flight with it: lanes <= 2)
            self._start(txn)
        while self._in_flight:
            self._answer_oldest()

    def _next_arrives_first(self, requests: _Requests) -> bool:
        """Wait until a request is waiting (True) or the oldest transaction ends (False)."""
        if requests.waiting():
            return True
        ready, _, _ = select.select([requests.fd, self._wake_r], [], [])
        if self._wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake_r, 65536)
        return requests.fd in ready and not self._in_flight[0].done.is_set()

    def _start(self, txn: _Transaction) -> None:
        self._in_flight.append(txn)
        if self._pool is None:
            self._apply(txn)
        else:
            self._pool.submit(self._apply, txn)

    def _apply(self, txn: _Transaction) -> None:
        started = time.perf_counter()
        try:
            txn.responses = self._store.apply(txn.batch)
        except Exception as exc:  # a bug, not a store failure: fail the batch, keep serving
            log.exception("journal writer failed")
            txn.responses = [
                jpb.AppendResponse(request_id=r.request_id, ok=False, reason=Reason.INTERNAL.value, message=str(exc))
                for r in txn.batch
            ]
        txn.seconds = time.perf_counter() - started
        txn.done.set()
        if self._pool is not None:
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_w, b"x")

    def _answer_finished(self) -> None:
        while self._in_flight and self._in_flight[0].done.is_set():
            self._answer_oldest()

    def _answer_oldest(self) -> None:
        txn = self._in_flight[0]
        txn.done.wait()
        self._in_flight.popleft()
        self.busy += txn.seconds
        self.transactions += 1
        self.applied += len(txn.batch)
        stats = _STATS.pack(min(sum(map(record_count, txn.batch)), 0xFFFFFFFF), txn.seconds)
        write_message(self._out, [stats, *(r.SerializeToString() for r in txn.responses)])

    def close(self) -> None:
        """Let what is in flight finish (its answers can no longer be sent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        os.close(self._wake_r)
        os.close(self._wake_w)


if __name__ == "__main__":
    sys.exit(main())
