"""asyncio helpers the whole product uses instead of the standard ones that misbehave.

`wait_for`: Python 3.11's `asyncio.wait_for` loses a cancellation that arrives
in the loop iteration where the awaited thing completes — it returns the
result and the task goes on as if never cancelled (CPython gh-86296, fixed in
3.12 by building wait_for on `asyncio.timeout`). A stop is a cancellation, so
a task that loops over `wait_for` (a keep-alive every 500 ms, a stream read
with a deadline) could ignore its stop and leave `await task` hanging for
ever: an announcer's graceful leave was seen to hang that way. Every deadline
in meshmq goes through this one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def wait_for(aw: Awaitable[T], timeout: float | None) -> T:
    """`await aw` within `timeout` seconds (None: no limit); TimeoutError after it.

    Awaited in the calling task, so a cancellation of the caller reaches `aw`
    and is raised, whenever it arrives."""
    async with asyncio.timeout(timeout):
        return await aw
