"""Processes the launcher starts and stops: detached from the command that
started them, found again later by pid from the state file, and stopped
SIGTERM first, SIGKILL after a deadline.

A pid alone is not an identity (pids are reused), so every record keeps the
process's start too, and a pid that started at another moment is somebody
else's process: never signalled. On Linux the start is the kernel's clock-tick
count since boot (/proc/<pid>/stat), which a change of the wall clock (NTP,
a laptop resuming) does not move, as it would move a start *time*.
"""

from __future__ import annotations

import errno
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

# How far two readings of one process's start may differ: 0 ticks on Linux;
# elsewhere psutil's create_time, whose resolution is a clock tick (10 ms).
_START_TOLERANCE = 0.05
# After SIGKILL, how long to wait for the kernel to reap.
_KILL_GRACE_S = 5.0
_POLL_S = 0.02
# Starts the line spawn writes to a log before each start.
LOG_MARKER = "--- started by meshmq cluster up at "


@dataclass(frozen=True)
class Identity:
    """A process as recorded: its pid and when it started (`start_mark`)."""

    pid: int
    start_mark: float


def spawn(argv: list[str], log_path: Path, *, cwd: Path,
          env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Identity]:
    """Start `argv` in a new session (it survives the launching command and
    the terminal's Ctrl-C), stdout and stderr appended to `log_path`."""
    with open(log_path, "ab") as log:
        log.write(f"{LOG_MARKER}{time.strftime('%Y-%m-%d %H:%M:%S')}: {shlex.join(argv)}\n".encode())
        log.flush()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
                                env=env, start_new_session=True)
    return proc, identify(proc.pid)


def identify(pid: int) -> Identity:
    """The identity of the running process `pid` (start mark -1 if it is gone already)."""
    mark = _start_mark(pid)
    return Identity(pid, -1.0 if mark is None else mark)


def _start_mark(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # pid (comm) state ppid ... : comm may hold spaces and ')'; starttime is field 22.
        return float(stat[stat.rindex(b")") + 2:].split()[19])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, IndexError):  # no procfs (macOS): the start time, seconds since the epoch
        try:
            return psutil.Process(pid).create_time()
        except psutil.Error:
            return None


def _process(ident: Identity) -> psutil.Process | None:
    """The live process `ident` names, or None (gone, a zombie, or the pid reused)."""
    if ident.pid <= 0:
        return None
    mark = _start_mark(ident.pid)
    if mark is None or abs(mark - ident.start_mark) > _START_TOLERANCE:
        return None
    try:
        proc = psutil.Process(ident.pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            _reap(ident.pid)
            return None
        return proc
    except psutil.Error:
        return None


def _reap(pid: int) -> None:
    """Collect a dead child of this process (the launcher's own, in tests)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def alive(ident: Identity) -> bool:
    return _process(ident) is not None


@dataclass(frozen=True)
class Stopped:
    """What `stop` did to one process: "stopped" (exited after SIGTERM),
    "killed" (SIGKILL after the deadline) or "not running"."""

    ident: Identity
    outcome: str
    seconds: float


def stop(idents: Iterable[Identity], timeout: float) -> list[Stopped]:
    """SIGTERM to each process still running, wait for all of them together
    until `timeout`, then SIGKILL (its whole process group) to those left.

    "Gone" means exited, or a zombie: when the launching command has exited,
    nobody may reap its processes but init, and init does not always (a
    container's first process), so a zombie counts as stopped."""
    idents = list(idents)
    started = time.monotonic()
    results: dict[Identity, Stopped] = {}
    running: list[Identity] = []
    for ident in idents:
        proc = _process(ident)
        try:
            if proc is None:
                raise psutil.NoSuchProcess(ident.pid)
            proc.send_signal(signal.SIGTERM)
            running.append(ident)
        except psutil.NoSuchProcess:
            results[ident] = Stopped(ident, "not running", 0.0)

    def wait(outcome: str, until: float) -> None:
        while running:
            for ident in [i for i in running if not alive(i)]:
                running.remove(ident)
                results[ident] = Stopped(ident, outcome, time.monotonic() - started)
            if not running or time.monotonic() > until:
                return
            time.sleep(_POLL_S)

    wait("stopped", started + timeout)
    for ident in running:
        _kill(ident)
    wait("killed", time.monotonic() + _KILL_GRACE_S)
    for ident in running:  # unkillable (uninterruptible sleep): say so rather than hang
        results[ident] = Stopped(ident, "still running after SIGKILL", time.monotonic() - started)
    return [results[i] for i in idents]


def kill(ident: Identity, timeout: float = _KILL_GRACE_S) -> bool:
    """SIGKILL (a crash: no shutdown code runs) and wait until it is gone; False if it was not running."""
    if not alive(ident):
        return False
    _kill(ident)
    deadline = time.monotonic() + timeout
    while alive(ident) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    return True


def _kill(ident: Identity) -> None:
    # Each process leads its own session (spawn): its group is it and its children.
    try:
        if os.getpgid(ident.pid) == ident.pid:
            os.killpg(ident.pid, signal.SIGKILL)
        else:
            os.kill(ident.pid, signal.SIGKILL)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            raise


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Can a listener bind host:port right now? (SO_REUSEADDR, as servers bind.)"""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def log_tail(path: Path, lines: int = 30) -> str:
    """The last lines the latest run (since spawn's marker line) wrote to a log."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    latest = text.rfind(f"\n{LOG_MARKER}")
    return "\n".join(text[latest + 1 if latest >= 0 else 0:].splitlines()[-lines:])


def wait_started(
    proc: subprocess.Popen,
    ready: Callable[[], bool],
    log_tail: Callable[[], str],
    *,
    what: str,
    timeout: float,
    port_taken: str,
    on_timeout: Callable[[], None],
) -> bool:
    """Poll a just-started server until `ready()`, with a deadline.

    Returns False when it exited because its port was taken (its log says
    `port_taken`), so the caller can retry on another port; raises with the
    log's tail when it exited otherwise or did not get ready in time.
    """
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return True
        try:
            code = proc.wait(timeout=0.05)  # doubles as the poll interval
        except subprocess.TimeoutExpired:
            code = None
        if code is not None:
            if port_taken in log_tail():
                return False
            raise RuntimeError(f"{what} exited with {code}; log:\n{log_tail()}")
        if time.monotonic() > deadline:
            on_timeout()
            raise RuntimeError(f"{what} not ready after {timeout}s; log:\n{log_tail()}")
