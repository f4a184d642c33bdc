"""Giving memory back to the operating system once the router has let go of a lot of it.

A drained queue frees its messages, but glibc's malloc keeps what it freed in
its heap for the next allocation rather than returning it: with the bodies
and upb arenas of 200,000 1 KB messages freed (~400 MB), a process stayed
65 MB above where it started; `malloc_trim(0)` brought that to 14 MB. So a
router whose queues drained would keep a deep queue's worth of RSS for good.

The router therefore watches the bytes of messages it holds (paging.py's
count) every CHECK_PERIOD seconds and trims when they have fallen by
TRIM_AFTER_BYTES since the highest point seen after the last trim
(`should_trim`, pure), and once after recovery (the journal's load pages are
transient). A steady flow (paging in as fast as it drains) never trims; one
trim costs a walk of the free heap (milliseconds), run in a worker thread so
the event loop goes on (ctypes releases the GIL while it runs). Where glibc is not the C library, nothing is done.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable

log = logging.getLogger("meshmq.router")

CHECK_PERIOD = 1.0
TRIM_AFTER_BYTES = 32 * 1024 * 1024


def should_trim(high_water: int, held: int, threshold: int = TRIM_AFTER_BYTES) -> bool:
    """Whether the held bytes fell far enough below their high-water mark to trim (pure)."""
    return high_water - held >= threshold


def _malloc_trim() -> Callable[[], None] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


class MemoryRelease:
    """Trims the C heap when the router's held message bytes (`held()`) fall a lot."""

    def __init__(self, held: Callable[[], int]) -> None:
        self._held = held
        self._trim = _malloc_trim()
        self._high = held()
        self.trims = 0

    def trim(self) -> None:
        if self._trim is not None:
            self._trim()
            self.trims += 1
        self._high = self._held()

    def check(self) -> None:
        held = self._held()
        if should_trim(self._high, held):
            self.trim()
        else:
            self._high = max(self._high, held)

    async def run(self) -> None:
        if self._trim is None:
            log.info("no malloc_trim in this C library: freed memory is left to the allocator")
            return
        # malloc_trim walks the whole free heap: off the event loop (the held count is one int to read).
        await asyncio.to_thread(self.trim)  # what recovery read and let go of
        while True:
            await asyncio.sleep(CHECK_PERIOD)
            await asyncio.to_thread(self.check)
