"""Group commit on the router side.

Everything the router wants stored (messages, references, acks, events,
definitions) is added to the AppendRequest being filled. One flusher sends it
to the journal as a single append whenever there is something to send, with
up to MAX_APPENDS_IN_FLIGHT appends outstanding: the journal merges whatever
is queued into its next transaction, so its writer goes from one commit to
the next without waiting for this event loop to hand over more (that wait
was a quarter of every commit cycle under load). Appends are answered, and
their futures resolve, in the order they were sent (on PostgreSQL two that
touch different messages may commit in either order: journal/overlap.py). Code that must wait for
durability takes `commit_future()`; nothing else waits. A refused append is
reported to `on_failure`: memory then holds changes the store does not, so
the node must stop (see Broker.halt).

Metrics (docs/metrics.md) are observed here once per append, never per
message: its messages, the seconds from sending it to the journal's answer,
and the confirm latency — from the first `commit_future()` of the batch (the
oldest durable message waiting in it) to that answer, so the slowest wait the
batch holds, not an average over its messages.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from meshmq.errors import Reason
from meshmq.journal_client import JournalAPI
from meshmq.metrics import LATENCY_BUCKETS, SIZE_BUCKETS, Histogram
from meshmq.v1 import journal_pb2 as jpb

log = logging.getLogger("meshmq.router.journal")

# Enough that the journal always has the next requests queued while answers
# travel back, even when light, paced traffic cuts them small (4 measured
# worse there; 64 no better at saturation); it also bounds what a stalled
# journal leaves queued in memory.
MAX_APPENDS_IN_FLIGHT = 16


class JournalBatcher:
    def __init__(self, journal: JournalAPI, epoch: int, on_failure: Callable[[str, str], None]) -> None:
        self._journal = journal
        self._epoch = epoch
        self._on_failure = on_failure
        self._req = jpb.AppendRequest()
        self._fut: asyncio.Future[jpb.AppendResponse] | None = None
        self._fut_since = 0.0  # perf_counter() when _fut was made: the batch's oldest wait for durability
        self._wake = asyncio.Event()
        self._next_request_id = 1
        self._task: asyncio.Task | None = None
        self._slots = asyncio.Semaphore(MAX_APPENDS_IN_FLIGHT)
        self.appends = 0
        self.failures = 0
        self.batch_messages = Histogram(
            "meshmq_journal_batch_messages", "Messages in each group-commit append the router sent its journal.",
            SIZE_BUCKETS)
        self.commit_seconds = Histogram(
            "meshmq_journal_commit_seconds", "Seconds from sending a group-commit append to the journal to its "
            "answer (committed, or refused).", LATENCY_BUCKETS)
        self.confirm_latency = Histogram(
            "meshmq_confirm_latency_seconds", "Seconds the oldest durability wait of each append waited (a durable "
            "send's confirm, a transaction's commit): one observation per append, not per message.",
            LATENCY_BUCKETS)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="journal-batcher")

    def batch(self) -> jpb.AppendRequest:
        """The request being filled; whatever is added now goes out with it."""
        self._wake.set()
        return self._req

    def commit_future(self) -> asyncio.Future[jpb.AppendResponse]:
        """Resolves with the journal's answer once the request being filled is committed."""
        if self._fut is None:
            self._fut = asyncio.get_running_loop().create_future()
            self._fut_since = time.perf_counter()
        self._wake.set()
        return self._fut

    async def flush(self) -> jpb.AppendResponse:
        return await self.commit_future()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            await self._slots.acquire()
            self._wake.clear()
            req, fut, since = self._req, self._fut, self._fut_since
            self._req, self._fut = jpb.AppendRequest(), None
            if fut is None and req.ByteSize() == 0:
                self._slots.release()
                continue
            req.request_id = self._next_request_id
            self._next_request_id += 1
            req.epoch = self._epoch
            sent = time.perf_counter()
            try:
                answer = self._journal.append(req)
            except Exception as exc:  # noqa: BLE001 - reported like a refused append
                answer = asyncio.get_running_loop().create_future()
                answer.set_exception(exc)
            messages = len(req.add_messages) + len(req.add_paged)
            answer.add_done_callback(lambda a, rid=req.request_id, fut=fut, n=messages, sent=sent, since=since:
                                     self._answered(rid, a, fut, n, sent, since))

    def _answered(self, request_id: int, answer: asyncio.Future[jpb.AppendResponse], fut: asyncio.Future | None,
                  messages: int, sent: float, since: float) -> None:
        self._slots.release()
        now = time.perf_counter()
        self.batch_messages.observe(messages)
        self.commit_seconds.observe(now - sent)
        if fut is not None:
            self.confirm_latency.observe(now - since)
        if answer.cancelled() or answer.exception() is not None:
            exc = "cancelled" if answer.cancelled() else answer.exception()
            log.error("journal append failed: %s", exc)  # transport failure: report it like the journal would
            resp = jpb.AppendResponse(
                request_id=request_id, ok=False, reason=Reason.STORE_UNAVAILABLE.value, message=str(exc)
            )
        else:
            resp = answer.result()
        self.appends += 1
        if not resp.ok:
            self.failures += 1
            log.error("journal refused append %d: %s %s", request_id, resp.reason, resp.message)
            self._on_failure(resp.reason, resp.message)
        if fut is not None and not fut.done():
            fut.set_result(resp)

    async def close(self) -> None:
        if self._task is None:
            return
        await self.flush()
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._task = None
