"""Retrying and logging while etcd or the discovery service is away.

`Backoff` spaces the retries of every announcer and watcher. `OutageLog`
turns a storm of failed keep-alives into two lines — the outage starts, the
outage ends — and `outage_log(target)` gives every user of one target the
same log, process-wide, so ten watchers of one etcd still log one outage.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable

log = logging.getLogger("meshmq.discovery")

# Retries start here and double up to a cap given by the settings (see Backoff users).
RETRY_INITIAL_S = 0.1


class Backoff:
    """Exponential retry delays: initial, doubling, never above cap; jittered
    downwards so that many nodes retrying together spread out."""

    def __init__(self, initial_s: float = RETRY_INITIAL_S, cap_s: float = 2.0, *, jitter: float = 0.2,
                 rng: Callable[[], float] = random.random) -> None:
        self.initial_s = min(initial_s, cap_s)
        self.cap_s = cap_s
        self.jitter = jitter
        self._rng = rng
        self._attempt = 0

    def next(self) -> float:
        delay = min(self.cap_s, self.initial_s * 2**self._attempt)
        self._attempt = min(self._attempt + 1, 32)
        return delay * (1 - self.jitter * self._rng())

    def reset(self) -> None:
        self._attempt = 0


class OutageLog:
    """Logs an outage of one target once when it starts and once when it ends.

    Every attempt reports its outcome with the time it started; a failure of an
    attempt that started before the last recovery, or a success of one that
    started before the outage, says nothing about the present and is ignored.
    """

    def __init__(self, target: str, *, logger: logging.Logger = log, clock: Callable[[], float] = time.monotonic) -> None:
        self.target = target
        self._log = logger
        self._clock = clock
        self.down_since: float | None = None
        self._recovered_at = -math.inf

    @property
    def is_down(self) -> bool:
        return self.down_since is not None

    def failed(self, problem: str, started_at: float | None = None) -> None:
        if started_at is not None and started_at < self._recovered_at:
            return
        if self.down_since is None:
            self.down_since = self._clock()
            self._log.warning(
                "%s is unreachable: %s; keeping the last known topology and retrying "
                "(not logged again until it is back)", self.target, problem,
            )
        else:
            self._log.debug("%s still unreachable: %s", self.target, problem)

    def ok(self, started_at: float | None = None) -> None:
        if self.down_since is None or (started_at is not None and started_at < self.down_since):
            return
        now = self._clock()
        self._log.warning("%s is reachable again after %.1f s", self.target, now - self.down_since)
        self.down_since = None
        self._recovered_at = now


_OUTAGES: dict[str, OutageLog] = {}


def outage_log(target: str) -> OutageLog:
    """The process-wide outage log of one target (e.g. "etcd at 127.0.0.1:2379"),
    shared by every announcer and watcher that reaches it."""
    found = _OUTAGES.get(target)
    if found is None:
        found = _OUTAGES[target] = OutageLog(target)
    return found
