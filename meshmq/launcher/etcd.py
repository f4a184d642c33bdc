"""A real etcd on loopback: Debian's `etcd-server` binary, one member.

Used by `meshmq cluster up` and by the tests (`tests/fixtures/etcd.py`). Each
server runs in its own data dir on client and peer ports given or picked at
run time, is ready when etcd answers a real request (/health does a read
through the leader) before a deadline, and is stopped by its pid. It can be
killed (-9) and started again on the same ports, with its data or wiped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from meshmq.launcher.processes import wait_started
from meshmq.ports import free_port

START_DEADLINE_S = 30.0
STOP_DEADLINE_S = 10.0
# How many times fresh ports are picked when one is taken before etcd binds it.
PORT_ATTEMPTS = 5

NO_BINARY_MESSAGE = "no `etcd` binary; run `bash scripts/ensure_etcd.sh` as root (Debian package etcd-server)"


class EtcdNotFoundError(RuntimeError):
    """There is no `etcd` on the PATH."""


def die_with_parent() -> list[str]:
    """A command prefix that makes etcd get SIGTERM when the thread that started
    it dies (Linux PR_SET_PDEATHSIG, set by util-linux's setpriv before exec), so
    a test run killed before its finalizers (CI timeout, SIGPIPE) leaves no etcd
    listening. Not a preexec_fn: Python code between fork and exec can crash the
    child when other threads (gRPC's) hold locks. The launcher does not use it:
    its etcd must outlive `meshmq cluster up`."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv and sys.platform == "linux" else []


def find_etcd() -> str:
    found = shutil.which("etcd")
    if found is None:
        raise EtcdNotFoundError(NO_BINARY_MESSAGE)
    return found


class EtcdServer:
    """One single-member etcd cluster in a directory, owned by the caller.

    `client_port` / `peer_port` set before `start()` are used as they are
    (one attempt); 0 picks a free port, retrying if another process takes it
    first. `die_with_parent` ties etcd's life to the starting thread (tests).
    """

    def __init__(self, root: Path | None = None, name: str = "meshmq-test", *, binary: str | None = None,
                 log: Path | None = None, die_with_parent: bool = False,
                 start_timeout: float = START_DEADLINE_S) -> None:
        self.binary = binary or find_etcd()
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="meshmq-etcd-"))
        self.name = name
        self.data = self.root / "data"
        self.log = Path(log) if log is not None else self.root / "etcd.log"
        self.die_with_parent = die_with_parent
        self.start_timeout = start_timeout
        self.client_port = 0
        self.peer_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """host:port of the client URL (what discovery-groups.*.etcd.endpoints take)."""
        return f"127.0.0.1:{self.client_port}"

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self) -> EtcdServer:
        """Start on the ports set (restarts keep theirs), picking free ones for
        those left at 0 and retrying if one is taken before etcd binds it."""
        if self.client_port and self.peer_port:
            if not self._start_on(self.client_port, self.peer_port):
                raise RuntimeError(f"etcd could not bind 127.0.0.1:{self.client_port} and 127.0.0.1:{self.peer_port} "
                                   f"(in use?); log:\n{self.log_tail()}")
            return self
        fixed_client, fixed_peer = self.client_port, self.peer_port
        for _ in range(PORT_ATTEMPTS):
            if self._start_on(fixed_client or free_port(), fixed_peer or free_port()):
                return self
        self.client_port, self.peer_port = fixed_client, fixed_peer
        raise RuntimeError(f"etcd could not bind free ports; log:\n{self.log_tail()}")

    def _start_on(self, client_port: int, peer_port: int) -> bool:
        self.client_port, self.peer_port = client_port, peer_port
        client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}
        prefix = die_with_parent() if self.die_with_parent else []
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [*prefix, self.binary, "--name", self.name, "--data-dir", str(self.data),
                 "--listen-client-urls", client, "--advertise-client-urls", client,
                 "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", f"{self.name}={peer}", "--initial-cluster-state", "new",
                 "--logger", "zap", "--log-outputs", "stderr"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True,  # its own process group: a SIGKILL fallback hits only it
            )
        return wait_started(
            self.proc, self.healthy, self.log_tail, what="etcd", timeout=self.start_timeout,
            port_taken="address already in use", on_timeout=self.stop,
        )

    def healthy(self) -> bool:
        """etcd's /health: true once it has a leader and serves a read."""
        try:
            with urllib.request.urlopen(f"http://{self.endpoint}/health", timeout=1) as resp:
                return json.loads(resp.read()).get("health") == "true"
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def kill9(self) -> None:
        """etcd crashes: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(STOP_DEADLINE_S)

    def restart(self, *, wipe: bool = False) -> EtcdServer:
        """Kill -9 and start again on the same ports; `wipe` loses every key
        and lease (a member replaced with an empty one)."""
        self.kill9()
        if wipe:
            shutil.rmtree(self.data, ignore_errors=True)
        return self.start()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"
