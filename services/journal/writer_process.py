"""The journal's SQL writer in a process of its own.

Why a process: SQL work is mostly C that releases the GIL, but binding
thousands of parameters per transaction holds it. In one process with the
router's event loop, the writer thread and the loop keep waiting for each
other's GIL (measured: a 500-message transaction took ~14 ms in-process and
~9 ms alone), so the store, not the disk, capped durable throughput, and the
second core sat idle. Here the writer has its own interpreter: the journal
service (in-process for the embedded default, or `meshmq serve journal`)
keeps its interface and its reads, and hands each group-commit batch to this
process over a pipe.

The process owns every write to the store: appends and WAL checkpoints. It
exits when its pipe closes (its owner stopped or died: a kill -9 of the
router ends it too), after finishing the transaction in hand; a successor
owner raises the epoch first, so nothing it might still write is accepted.
It ignores SIGINT and SIGTERM: those reach a whole process group (Ctrl-C, a
service manager), and the owner still needs it to store its last batch.

Protocol on stdin/stdout: a message is a little-endian uint32 frame count,
then each frame as uint32 length + bytes. The first message to the child is
its settings (JSON); it answers `ready` or `error: ...`. After that each
message is a batch of serialized AppendRequests, answered by as many
AppendResponses in the same order.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import BinaryIO

from meshmq.errors import Reason
from meshmq.v1 import journal_pb2 as jpb

from .store import JournalStore, StoreError

log = logging.getLogger("meshmq.journal")

_U32 = struct.Struct("<I")
READY = b"ready"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


# ---------------------------------------------------------------- framing


def write_message(out: BinaryIO, frames: list[bytes]) -> None:
    parts = [_U32.pack(len(frames))]
    for f in frames:
        parts.append(_U32.pack(len(f)))
        parts.append(f)
    out.write(b"".join(parts))
    out.flush()


def read_message(inp: BinaryIO) -> list[bytes] | None:
    """The next message's frames, or None at a clean end of stream."""
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


# ---------------------------------------------------------------- owner side


class WriterProcessError(StoreError):
    """The writer process could not start; the message says why."""


class WriterProcess:
    """The owner's handle: `apply` is called from one thread (the group-commit
    writer); it blocks on the pipe with the GIL released."""

    def __init__(self, url: str, *, sync: bool, node_id: str) -> None:
        self._settings = json.dumps({"url": url, "sync": sync, "node_id": node_id}).encode()
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._dead: str | None = None

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
            env=env,
            close_fds=True,
        )
        try:
            write_message(self._proc.stdin, [self._settings])
            ready, _, _ = select.select([self._proc.stdout], [], [], START_TIMEOUT_S)
            if not ready:
                self._proc.kill()
                self.close()
                raise WriterProcessError(
                    f"the journal writer process did not open the store within {START_TIMEOUT_S:.0f} s"
                )
            answer = read_message(self._proc.stdout)
        except (OSError, EOFError) as exc:
            answer = None
            log.error("journal writer process failed to start: %s", exc)
        if answer != [READY]:
            detail = answer[0].decode(errors="replace") if answer else f"exited with code {self._proc.wait(5)}"
            self.close()
            raise WriterProcessError(f"the journal writer process did not start: {detail}")
        log.info("journal writer process %d started", self._proc.pid)

    def apply(self, requests: list[jpb.AppendRequest]) -> list[jpb.AppendResponse]:
        """Apply a batch in one transaction in the writer process; failed
        responses (STORE_UNAVAILABLE) if that process is gone."""
        with self._lock:
            if self._dead is None:
                try:
                    write_message(self._proc.stdin, [r.SerializeToString() for r in requests])
                    frames = read_message(self._proc.stdout)
                    if frames is not None and len(frames) == len(requests):
                        return [jpb.AppendResponse.FromString(f) for f in frames]
                    raise EOFError("its pipe closed" if frames is None else "a malformed answer")
                except (OSError, EOFError, ValueError) as exc:
                    self._dead = self._gone(exc)
                    log.critical("%s", self._dead)
            return [
                jpb.AppendResponse(
                    request_id=r.request_id, ok=False, reason=Reason.STORE_UNAVAILABLE.value, message=self._dead
                )
                for r in requests
            ]

    def _gone(self, exc: BaseException) -> str:
        """Why the process no longer answers; one that is still running is killed."""
        try:
            code = self._proc.wait(2)  # a closed pipe usually means it just died
            return f"the journal writer process exited (code {code})"
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
            return f"the journal writer process stopped answering ({exc or type(exc).__name__}); killed it"

    def close(self) -> None:
        """Close the pipe; the process checkpoints, closes its store and exits."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error("journal writer process %d did not stop in %.0f s; killing it", proc.pid, STOP_TIMEOUT_S)
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- the process


def main() -> int:
    # Ctrl-C in a terminal or a service manager's SIGTERM reaches the whole
    # process group; the owner then flushes its last batch through this
    # process, so it must outlive the signal and leave when its pipe closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # The protocol gets its own descriptors; anything printed goes to stderr.
    inp = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s journal-writer pid=%(process)d %(name)s: %(message)s"
    )
    logging.getLogger("sqlalchemy").setLevel(logging.WARNING)
    first = read_message(inp)
    if not first:
        return 0
    settings = json.loads(first[0])
    try:
        store = JournalStore(settings["url"], sync=settings["sync"])
        store.node_id = settings["node_id"]
        store.ping()
    except Exception as exc:  # noqa: BLE001 - reported to the owner in one line
        write_message(out, [f"error: {exc}".encode()])
        return 1
    store.start_checkpointer()
    write_message(out, [READY])
    try:
        while True:
            try:
                frames = read_message(inp)
            except EOFError:
                frames = None
            if frames is None:
                return 0
            requests = [jpb.AppendRequest.FromString(f) for f in frames]
            try:
                responses = store.apply(requests)
            except Exception as exc:  # a bug, not a store failure: fail the batch, keep serving
                logging.getLogger("meshmq.journal").exception("journal writer failed")
                responses = [
                    jpb.AppendResponse(request_id=r.request_id, ok=False, reason=Reason.INTERNAL.value, message=str(exc))
                    for r in requests
                ]
            try:
                write_message(out, [r.SerializeToString() for r in responses])
            except BrokenPipeError:
                return 0
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
