"""Processes and observers for the discovery tests.

Tests here are asyncio tests with a watcher running in the test's own event
loop, so processes are started and awaited without blocking that loop (a
blocked loop would stamp topology events late).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from meshmq.discovery import TopologyWatcher
from meshmq.v1 import discovery_pb2 as dpb
from tests.fixtures.nodes import eventually  # noqa: F401  (used by the discovery tests)

ROOT = Path(__file__).resolve().parents[2]
START_DEADLINE_S = 30.0


class Proc:
    """One process with a ready file and a log."""

    def __init__(self, workdir: Path, name: str, argv: list[str]) -> None:
        self.workdir = workdir
        self.name = name
        self.argv = argv
        self.ready_path = workdir / f"{name}.ready.json"
        self.log_path = workdir / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.info: dict = {}

    def spawn(self) -> Proc:
        self.ready_path.unlink(missing_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [*self.argv, "--ready-file", str(self.ready_path)], stdout=log, stderr=subprocess.STDOUT,
                cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        return self

    async def start(self) -> Proc:
        self.spawn()

        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}")
            return self.ready_path.exists()

        await eventually(ready, START_DEADLINE_S, f"{self.name} to be ready")
        self.info = json.loads(self.ready_path.read_text())
        return self

    async def wait_exit(self, timeout: float) -> int:
        await eventually(lambda: self.proc.poll() is not None, timeout, f"{self.name} to exit")
        return self.proc.returncode

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 10) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    @property
    def endpoint(self) -> str:
        return self.info["endpoints"][0]


class Procs:
    """Factory for the processes of one test; all are stopped at the end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.started: list[Proc] = []

    def sim(self, name: str, *, cluster: str, node_id: str | None = None, etcd: str | None = None,
            service: str | None = None, count: int = 1, broadcast_period: int = 500,
            refresh_timeout: int = 2000, initial_wait_timeout: int = 10000) -> Proc:
        """A simulated node (tests/discovery/sim_node.py), not yet started."""
        where = ["--etcd", etcd] if etcd else ["--service", service]
        argv = [sys.executable, "-m", "tests.discovery.sim_node", *where, "--cluster", cluster,
                "--node-id", node_id or name, "--count", str(count), "--broadcast-period", str(broadcast_period),
                "--refresh-timeout", str(refresh_timeout), "--initial-wait-timeout", str(initial_wait_timeout)]
        p = Proc(self.tmp, name, argv)
        self.started.append(p)
        return p

    def discovery_service(self, name: str, config_yaml: str) -> Proc:
        """The discovery service process, not yet started."""
        config = self.tmp / f"{name}.yaml"
        config.write_text(textwrap.dedent(config_yaml))
        p = Proc(self.tmp, name, [sys.executable, "-m", "meshmq.cli.main", "serve", "discovery", "--config", str(config),
                                  "--quiet"])
        self.started.append(p)
        return p

    def stop_all(self) -> None:
        for p in reversed(self.started):
            p.stop()


class Recorder:
    """Every node event a watcher emits, stamped with time.monotonic() on arrival."""

    def __init__(self, watcher: TopologyWatcher) -> None:
        self.events: list[tuple[float, int, dpb.ClusterNode]] = []
        self._task = asyncio.create_task(self._record(watcher))

    async def _record(self, watcher: TopologyWatcher) -> None:
        async for event in watcher.changes():
            self.events.append((time.monotonic(), event.kind, event.node))

    def first(self, kind: int, node_id: str) -> float | None:
        return next((t for t, k, n in self.events if k == kind and n.node_id == node_id), None)

    def kinds(self, node_id: str) -> list[str]:
        return [dpb.NodeEventKind.Name(k) for _, k, n in self.events if n.node_id == node_id]

    def downs(self) -> list[str]:
        return [n.node_id for _, k, n in self.events if k == dpb.NODE_DOWN]

    async def close(self) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


def node_ids(nodes) -> set[str]:
    return {n.node_id for n in nodes}
