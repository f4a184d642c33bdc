"""The scenarios' side of the driver protocol (DRIVER.md): which drivers exist,
and a small client that starts one as a child process, sends it requests and
waits for each response by its id.

The client is synchronous on purpose: a scenario reads as a list of steps,
and what must run concurrently (a `receive` waiting while other requests go
on) is concurrent in the driver, where the SDK is; `submit` and `wait` let a
scenario keep several requests in flight.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TYPESCRIPT_PACKAGE = REPO / "sdk" / "typescript" / "package.json"
TYPESCRIPT_DRIVER = REPO / "sdk" / "typescript" / "dist" / "conformance" / "driver.js"

# How long a request may take unless the scenario says otherwise (a failover
# waits out its backup's takeover within this).
DEFAULT_DEADLINE_S = 30.0


def drivers() -> dict[str, list[str]]:
    """Every SDK's driver command that can run in this tree, by SDK name.

    The TypeScript driver is listed only once it is built: a scenario never
    passes for an SDK it did not run. `test_registry.py` fails when the
    TypeScript SDK is in the tree but its driver was not built, so a broken
    build is not mistaken for a passing suite.
    """
    found = {"python": [sys.executable, "-m", "tests.conformance.python_driver"]}
    if TYPESCRIPT_DRIVER.is_file():
        found["typescript"] = [shutil.which("node") or "node", str(TYPESCRIPT_DRIVER)]
    return found


class DriverError(Exception):
    """A request the driver answered with an error object: `reason` is the SDK's reason code."""

    def __init__(self, op: str, error: dict) -> None:
        self.op = op
        self.reason: str = error.get("reason", "")
        self.type: str = error.get("type", "")
        self.message: str = error.get("message", "")
        super().__init__(f"{op}: {self.reason} ({self.type}): {self.message}")


class DriverGone(Exception):
    """The driver process ended, or did not answer in time."""


class Driver:
    """One driver process: requests go to its stdin, responses come from its stdout,
    its stderr goes to `log_path`."""

    def __init__(self, name: str, command: list[str], log_path: Path) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self._ids = iter(range(1, sys.maxsize))
        self._responses: dict[int, dict] = {}
        self._ops: dict[int, str] = {}
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._ended = False
        log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=REPO,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                 "PYTHONUNBUFFERED": "1"},
            start_new_session=True,  # its own process group: a Ctrl-C meant for pytest does not reach it
        )
        log.close()
        self._reader = threading.Thread(target=self._read, name=f"driver-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                resp = json.loads(line)
            except ValueError:
                continue  # not a response: the driver should log on stderr; ignore it rather than guess
            with self._cond:
                self._responses[resp.get("id")] = resp
                self._cond.notify_all()
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def submit(self, op: str, **args: Any) -> int:
        """Send a request without waiting; `wait` takes its answer."""
        rid = next(self._ids)
        line = json.dumps({"id": rid, "op": op, **args}) + "\n"
        self._ops[rid] = op
        try:
            with self._write_lock:
                self.proc.stdin.write(line.encode())
                self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise DriverGone(f"{self.name} driver is gone (exit {self.proc.poll()}):\n{self.log_tail()}") from None
        return rid

    def wait(self, rid: int, timeout: float = DEFAULT_DEADLINE_S) -> dict:
        """The result of request `rid`; DriverError if it failed."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self._responses:
                left = deadline - time.monotonic()
                if self._ended:
                    raise DriverGone(f"{self.name} driver exited ({self.proc.poll()}) before answering "
                                     f"{self._ops[rid]}:\n{self.log_tail()}")
                if left <= 0:
                    raise DriverGone(f"{self.name} driver did not answer {self._ops[rid]} within {timeout}s")
                self._cond.wait(left)
            resp = self._responses.pop(rid)
        op = self._ops.pop(rid)
        if not resp.get("ok"):
            raise DriverError(op, resp.get("error") or {})
        return resp.get("result") or {}

    def request(self, op: str, timeout: float = DEFAULT_DEADLINE_S, **args: Any) -> dict:
        """Send a request and wait for its result."""
        return self.wait(self.submit(op, **args), timeout)

    def error(self, op: str, timeout: float = DEFAULT_DEADLINE_S, **args: Any) -> DriverError:
        """Send a request that must fail; its error (AssertionError if it succeeded)."""
        try:
            result = self.request(op, timeout, **args)
        except DriverError as exc:
            return exc
        raise AssertionError(f"{self.name}: {op} was expected to fail, but answered {result}")

    def stop(self, timeout: float = 10.0) -> int | None:
        """Close its stdin (the driver exits), then stop it by its pid if it lingers."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                return self.proc.wait(timeout)
        return self.proc.returncode
