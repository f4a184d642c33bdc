"""max-disk-usage: the disk alarm, checked on a timer (Artemis's disk scan).

Every `disk-scan-period` ms the router reads how full the file system
holding its data is (the SQLite journal file's directory, or the
data-directory) and the size of its journal files, with a statvfs and a few
stats — never per message. When the used share of that disk is above
`max-disk-usage` percent (Artemis: `1 - usable / total`, so blocks reserved
for root count as used), the node is in disk alarm until a scan finds it at
or below again. While in alarm every address is treated as full
(memory_use.py, paging.py):

* PAGE and BLOCK: producers are blocked — their batches are held
  unconfirmed, in order, within their window, as for a full BLOCK address
  (producer_flow.py), and go on when the alarm clears. (Paging would write to
  the disk that is full, so PAGE blocks too, as in Artemis.)
* FAIL: sends are refused with ADDRESS_FULL, the reason naming the disk.
* DROP: messages are dropped and counted on the address.

The alarm, the reading and the limit are in the router's metrics
(`meshmq_router_disk_*`), in management's NodeInfo and on the console.
`max-disk-usage: -1` turns the check off (the disk is still read, for the
metrics). Management's SetMaxDiskUsage changes the limit on a running node
(until it restarts) and scans at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .memory_use import MemoryUse

log = logging.getLogger("meshmq.router")

# SQLite keeps its journal in these files beside the database.
_SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class DiskReading:
    total_bytes: int = 0
    free_bytes: int = 0
    # The journal's files (SQLite: the database, its WAL and shared memory; 0 for PostgreSQL).
    journal_bytes: int = 0
    # Unix time (s) of the reading; 0 = not read yet.
    at: float = 0.0

    @property
    def used_percent(self) -> float:
        return used_percent(self.total_bytes, self.free_bytes)


def used_percent(total: int, free: int) -> float:
    """The share of a disk in use, as Artemis counts it: what an unprivileged writer cannot use (pure)."""
    return 100.0 * (total - free) / total if total > 0 else 0.0


def over_limit(percent: float, max_disk_usage: int) -> bool:
    """Whether `percent` used is past `max-disk-usage` (-1: never) (pure)."""
    return max_disk_usage >= 0 and percent > max_disk_usage


def _existing(path: Path) -> Path:
    """`path`, or its nearest existing parent (a data-directory not made yet)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _file_bytes(path: Path) -> int:
    total = 0
    for suffix in _SQLITE_SUFFIXES:
        try:
            total += os.stat(f"{path}{suffix}").st_size
        except OSError:
            pass
    return total


class DiskScan:
    """The node's disk reading and alarm; one per router, run() on its event loop."""

    def __init__(self, memory: MemoryUse, data_directory: Path, journal_file: Path | None,
                 max_disk_usage: int, period_ms: int) -> None:
        self._memory = memory
        self._directory = journal_file.parent if journal_file is not None else data_directory
        self._journal_file = journal_file
        self.max_disk_usage = max_disk_usage
        self.period_s = period_ms / 1000
        self.reading = DiskReading()
        memory.disk = self

    @property
    def alarm(self) -> bool:
        return self._memory.disk_full

    def scan(self) -> DiskReading:
        """Read the disk now and raise or clear the alarm (a statvfs and a few stats)."""
        usage = shutil.disk_usage(_existing(self._directory))
        journal = _file_bytes(self._journal_file) if self._journal_file is not None else 0
        self.reading = reading = DiskReading(usage.total, usage.free, journal, time.time())
        percent = reading.used_percent
        full = over_limit(percent, self.max_disk_usage)
        if full != self._memory.disk_full:
            if full:
                reason = (f"disk usage {percent:.1f}% of {self._directory} is above max-disk-usage "
                          f"{self.max_disk_usage}%")
                log.warning("disk alarm: %s; blocking producers (FAIL addresses refuse, DROP addresses drop)",
                            reason)
            else:
                reason = ""
                log.info("disk alarm cleared: disk usage %.1f%% of %s, max-disk-usage %d%%; unblocking producers",
                         percent, self._directory, self.max_disk_usage)
            self._memory.set_disk_full(full, reason)
        return reading

    def set_limit(self, max_disk_usage: int) -> DiskReading:
        """A new max-disk-usage (until the router restarts), applied at once."""
        log.info("max-disk-usage set to %d%% (was %d%%)", max_disk_usage, self.max_disk_usage)
        self.max_disk_usage = max_disk_usage
        return self.scan()

    async def run(self) -> None:
        while True:
            try:
                self.scan()
            except OSError as exc:
                log.warning("disk scan of %s failed: %s", self._directory, exc)
            await asyncio.sleep(self.period_s)
