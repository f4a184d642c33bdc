"""meshmq.aio.wait_for: a cancellation is never lost (Python 3.11's asyncio.wait_for loses one)."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.aio import wait_for


async def _keep_waiting(ready: asyncio.Queue[asyncio.Future[int]], wait) -> None:
    """A loop like a keep-alive's: wait for an answer with a deadline, again and again."""
    while True:
        fut = asyncio.get_running_loop().create_future()
        await ready.put(fut)
        await wait(fut, 5)


async def test_a_stop_that_arrives_as_the_awaited_answer_does_still_stops_the_task():
    ready: asyncio.Queue[asyncio.Future[int]] = asyncio.Queue()
    task = asyncio.create_task(_keep_waiting(ready, wait_for))
    fut = await ready.get()
    fut.set_result(1)  # the answer and the stop land in the same loop iteration
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)  # (the test's own deadline: it only awaits a task)


async def test_a_deadline_raises_timeout_and_cancels_what_was_awaited():
    fut = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await wait_for(fut, 0.01)
    assert fut.cancelled()


async def test_no_deadline_waits_for_the_result():
    fut = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_later(0.01, fut.set_result, 7)
    assert await wait_for(fut, None) == 7
