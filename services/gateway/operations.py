"""Long operations (moving messages, retrying dead letters) run in the
background and report progress: starting one answers 202 with its id at once,
and GET /api/v1/operations/{id} (or the console's progress bar) follows it.

The router streams an OperationProgress after each batch; the last one has
`finished` set. A stream that breaks leaves the operation failed with the
reason, and what was done so far stays done (each batch is one journal
transaction on the router).

A finished operation's `status` says whether it did what was asked:
`succeeded` only when it moved every message it found; `partial` when it
moved some and left others, `nothing_moved` when it moved none (or found
none), `failed` when it broke off. A retry reports each message's outcome
(where it went, or why it was kept); the first `MAX_OUTCOMES` are kept here."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from pydantic import BaseModel

from meshmq import outcomes
from meshmq.errors import MeshMQError

KEPT = 200  # finished operations remembered, newest first
MAX_OUTCOMES = 1000  # message outcomes remembered per operation


class OutcomeView(BaseModel):
    """What the operation did with one message."""

    message_id: int
    # returned (to its queue), sent_to_address (its queue was gone), kept (left in the queue: see reason).
    result: str
    address: str = ""
    queues: list[str] = []
    address_created: bool = False
    queues_created: list[str] = []
    reason: str = ""
    detail: str = ""
    new_message_id: int = 0
    # The same in words, as the CLI prints it.
    text: str = ""


class OperationView(BaseModel):
    id: str
    kind: str
    node: str
    queue: str
    started_by: str
    done: int = 0
    total: int = 0
    # Messages looked at and left where they were (each outcome says why).
    kept: int = 0
    finished: bool = False
    # running, succeeded, partial, nothing_moved or failed (module docstring).
    status: str = "running"
    error: str = ""
    outcomes: list[OutcomeView] = []
    # Outcomes beyond MAX_OUTCOMES, counted but not kept.
    outcomes_omitted: int = 0
    started_at: float
    finished_at: float | None = None


def outcome_view(o, source: str) -> OutcomeView:
    return OutcomeView(message_id=o.message_id, result=outcomes.result_name(o), address=o.address,
                       queues=list(o.queues), address_created=o.address_created,
                       queues_created=list(o.queues_created), reason=o.reason, detail=o.detail,
                       new_message_id=o.new_message_id, text=outcomes.describe(o, source))


def status(op: OperationView) -> str:
    if not op.finished:
        return "running"
    if op.error:
        return "failed"
    if op.done == 0:
        return "nothing_moved"
    return "succeeded" if op.done >= op.total and not op.kept else "partial"


class Operations:
    def __init__(self) -> None:
        self._ops: OrderedDict[str, OperationView] = OrderedDict()
        self._tasks: set[asyncio.Task] = set()
        self._ids = itertools.count(1)

    async def start(self, kind: str, node: str, queue: str, user: str,
                    run: Callable[[Callable], Awaitable]) -> OperationView:
        """Start `run(on_progress)` (the SDK's move_messages/retry_messages) and wait
        for the router's first progress, so a refusal reaches the caller as an error
        rather than as an operation that failed; then follow it in the background."""
        op = OperationView(id=f"op-{next(self._ids)}", kind=kind, node=node, queue=queue, started_by=user,
                           started_at=time.time())
        first = asyncio.Event()

        def on_progress(p) -> None:
            op.done, op.total, op.kept = p.done, max(p.total, p.done), p.kept
            room = MAX_OUTCOMES - len(op.outcomes)
            op.outcomes.extend(outcome_view(o, queue) for o in p.outcomes[:max(room, 0)])
            op.outcomes_omitted += max(len(p.outcomes) - max(room, 0), 0)
            first.set()

        task = asyncio.create_task(run(on_progress))
        waiter = asyncio.create_task(first.wait())
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if task.done() and task.exception() is not None and not first.is_set():
            raise task.exception()
        self._ops[op.id] = op
        while len(self._ops) > KEPT and next(iter(self._ops.values())).finished:
            self._ops.popitem(last=False)
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._finish(op, t))
        if task.done():
            self._finish(op, task)
        return op

    def _finish(self, op: OperationView, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if op.finished:
            return
        if task.cancelled():
            op.error = "cancelled: the gateway stopped"
        elif isinstance(task.exception(), MeshMQError):
            exc = task.exception()
            op.error = f"{exc.reason.value}: {exc}"
        elif task.exception() is not None:
            op.error = f"{type(task.exception()).__name__}: {task.exception()}"
        else:
            last = task.result()
            op.done, op.total, op.kept = last.done, max(last.total, last.done), last.kept
        op.finished = True
        op.status = status(op)
        op.finished_at = time.time()

    def get(self, op_id: str) -> OperationView | None:
        return self._ops.get(op_id)

    def recent(self) -> list[OperationView]:
        return list(reversed(self._ops.values()))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
