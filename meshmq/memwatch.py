"""Sample a process's resident memory while something runs (tests and bench)."""

from __future__ import annotations

import threading

import psutil


class RssSampler:
    """Records the peak RSS of `pid` every `interval` seconds until stopped."""

    def __init__(self, pid: int, interval: float = 0.01) -> None:
        self._proc = psutil.Process(pid)
        self._interval = interval
        self._stop = threading.Event()
        self.baseline = self._proc.memory_info().rss
        self.peak = self.baseline
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.peak = max(self.peak, self._proc.memory_info().rss)
            except psutil.Error:
                return

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.baseline) / 2**20

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
