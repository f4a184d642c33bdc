"""The faults `meshmq verify` can inject into a local cluster (one that
`meshmq cluster up` started: the launcher's run directory knows each
process), on a schedule: every `every` seconds each fault is injected, held
for `down_for` seconds, and healed.

* kill a node: SIGKILL (kill -9), then start it again on its store and port;
* pause a node: SIGSTOP, then SIGCONT (a frozen process: its sockets stay open,
  clients notice only by their pings);
* restart etcd: SIGKILL, then start it again on its data.

A fault whose heal fails is reported (and the run goes on): the report says
what was done to the cluster, so a failed restart is not mistaken for the
broker losing messages.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from meshmq.launcher import ClusterError, LocalCluster
from meshmq.launcher import processes

from .report import FaultEvent


class Fault(Protocol):
    """One fault: `inject` breaks something, `heal` mends it; each returns what it did."""

    kind: str
    target: str

    async def inject(self) -> str: ...

    async def heal(self) -> str: ...


@dataclass
class KillNode:
    cluster: LocalCluster
    target: str
    kind: str = "kill -9"

    async def inject(self) -> str:
        record = await self.cluster.kill(self.target)
        return f"pid {record.pid} killed"

    async def heal(self) -> str:
        record = await self.cluster.start_process(self.target, timeout=60)
        return f"started again (pid {record.pid})"


@dataclass
class PauseNode:
    cluster: LocalCluster
    target: str
    kind: str = "SIGSTOP"

    def _pid(self) -> int:
        record = self.cluster.load_state().process(self.target)
        if not processes.alive(record.ident):
            raise ClusterError(f"{self.target} (pid {record.pid}) is not running")
        return record.pid

    async def inject(self) -> str:
        pid = self._pid()
        os.kill(pid, signal.SIGSTOP)
        return f"pid {pid} stopped (SIGSTOP)"

    async def heal(self) -> str:
        pid = self._pid()
        os.kill(pid, signal.SIGCONT)
        return f"pid {pid} continued (SIGCONT)"


@dataclass
class RestartEtcd(KillNode):
    target: str = "etcd"
    kind: str = "restart etcd"


def check_targets(cluster: LocalCluster, nodes: list[str]) -> list[str]:
    """Problems with the nodes named for faults (each must be a router of the cluster)."""
    state = cluster.load_state()
    have = [n.name for n in state.nodes]
    return [f"no node {name!r} in cluster {state.cluster_name} (have: {', '.join(have)})"
            for name in nodes if name not in have]


async def run_schedule(faults: list[Fault], *, every: float, down_for: float, until: float, started: float,
                       record: Callable[[FaultEvent], None]) -> None:
    """Inject each fault every `every` seconds (the first after `every`) until the
    monotonic time `until`, hold it `down_for` seconds, heal it. A heal always runs,
    even when the run is cancelled meanwhile."""
    if not faults:
        return
    loop_start = time.monotonic()
    n = 1
    while loop_start + n * every < until:
        await asyncio.sleep(max(0.0, loop_start + n * every - time.monotonic()))
        for fault in faults:
            await _apply(fault, "inject", started, record)
            try:
                await asyncio.sleep(down_for)
            finally:
                await asyncio.shield(_apply(fault, "heal", started, record))
        n += 1


async def _apply(fault: Fault, action: str, started: float, record: Callable[[FaultEvent], None]) -> None:
    at = time.monotonic() - started
    try:
        outcome = await getattr(fault, action)()
    except (ClusterError, OSError) as exc:
        outcome = f"failed: {exc}"
    record(FaultEvent(round(at, 2), fault.kind, fault.target, action, outcome))
