"""examples/typescript/ run as written against `meshmq up` (the embedded
default, one node): request-reply, competing workers, and the failover example
while its node is killed (-9) and started again on the same port and data
directory — every message it confirmed arrives exactly once."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from meshmq.ports import free_port
from tests.fixtures.nodes import wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "typescript"

pytestmark = pytest.mark.integration


class Up:
    """`meshmq up` on a port of this worker's slice, a data directory of its own; stopped by pid."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.uri = f"meshmq://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        ready = self.tmp / "ready.json"
        ready.unlink(missing_ok=True)
        log = open(self.tmp / "up.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "meshmq.cli.main", "up", "--port", str(self.port), "--console-port", "0",
             "--data-dir", str(self.tmp / "data"), "--ready-file", str(ready), "--quiet"],
            cwd=self.tmp, stdout=log, stderr=log)
        log.close()
        wait_for(lambda: ready.exists() or self.proc.poll() is not None, 60, "meshmq up to be ready")
        assert self.proc.poll() is None, (self.tmp / "up.log").read_text()[-3000:]
        assert json.loads(ready.read_text())["endpoints"] == [f"127.0.0.1:{self.port}"]

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def up(tmp_path):
    node = Up(tmp_path)
    node.start()
    yield node
    node.stop()


def example(name: str, *args: str) -> subprocess.Popen:
    node = shutil.which("node")
    assert node, "node is not installed: run scripts/setup.sh --test"
    return subprocess.Popen([node, str(EXAMPLES / name), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finished(proc: subprocess.Popen, timeout: float = 60) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{err}"
    return out


def test_request_reply_answers_every_request(up):
    out = finished(example("request_reply.js", up.uri))
    assert out.splitlines() == [f"{w} -> {w.upper()}" for w in ("alpha", "beta", "gamma", "delta", "epsilon")]


def test_workers_share_the_jobs_and_a_failed_one_is_done_on_its_second_try(up):
    out = finished(example("worker.js", up.uri, "20", "3"))
    done = [line for line in out.splitlines() if " did job-" in line]
    jobs = sorted(int(line.split("job-")[1].split()[0]) for line in done)
    assert jobs == list(range(20))  # each job done once
    retried = sorted(int(line.split("job-")[1].split()[0]) for line in done if "(try 2)" in line)
    assert retried == [3, 10, 17]  # the ones failed on their first try
    counts = json.loads(out.splitlines()[-1].split(":", 1)[1])
    assert sum(counts.values()) == 20 and len(counts) == 3


def test_the_failover_example_loses_and_doubles_nothing_across_a_kill_9_and_restart(up):
    proc = example("failover.js", up.uri, "3000")
    # Kill the node once the example is sending, start it again on the same port and data.
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while not any(line.startswith("sent ") for line in lines):
        assert time.monotonic() < deadline and proc.poll() is None, lines
        lines.append(proc.stdout.readline().strip())
    up.kill9()
    up.start()
    out = "\n".join(lines) + "\n" + finished(proc, timeout=120)
    assert "failover: FAILURE_DETECTED" in out and "failover: FAILOVER_COMPLETED" in out, out
    assert out.splitlines()[-1] == "received 3000 of 3000: lost 0, twice 0", out
