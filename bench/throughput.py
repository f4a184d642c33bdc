"""End-to-end throughput and confirm latency of one node on SQLite.

Starts a fresh node for each run (`meshmq serve router`, embedded journal,
SQLite WAL with synchronous=FULL: a durable confirm means the commit reached
the disk), then runs one producer and one consumer concurrently in one client
process with 1 KB messages and prints one JSON line per run: messages/s end
to end, p50/p99 confirm latency and the CPU the node spent per message
(router process, and its journal writer process; on PostgreSQL also the
server processes serving the run's database, when they run on this host),
then a table of all runs.
The CPU figures are steadier than msg/s on a shared machine: compare trees
with them when looking for a hot-path regression.

A mode is KIND[@RATE][/WINDOW]:

* KIND is `durable`, `non-durable`, or `idempotent` (durable, from an
  idempotent producer: a duplicate id of its own on each message; what
  surviving a failover without resending by hand costs, docs/client-failover.md).
* Without @RATE the producer sends as fast as its confirmation window allows
  (saturation: the most msg/s; the confirm latency there is mostly queueing
  behind the window, window / throughput by Little's law). With @RATE it
  sends RATE msg/s on a schedule and counts each confirm from when its
  message was due: the latency a user sending at that rate sees
  (see meshmq/perf.py).
* /WINDOW sets confirmationWindowSize in bytes (default: the SDK's, 512 KiB).

    .venv/bin/python bench/throughput.py [--count 200000] [--size 1024] [--repeat 3]
        [--modes durable,durable/1048576,durable@25000,non-durable,non-durable/1048576] [--secure]
        [--journal-url postgresql+psycopg://postgres@127.0.0.1:5432/test]

--journal-url postgresql+psycopg://USER@HOST/DB runs the node on PostgreSQL
(the shared store's backend, docs/ha.md): each run gets a fresh database
created beside DB (its server must let USER create databases) and dropped
after.

--secure runs the node as docs/security.md secures one: TLS on the client
listener (a throwaway CA and server certificate, meshmq/security/certs.py), users
authenticated on every call and security-settings checked on every send and
consumer — so the cost of security is measured, not guessed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402

from meshmq import perf  # noqa: E402
from meshmq.client.options import ClientOptions  # noqa: E402


def start_node(workdir: Path, sync: bool, extra_config: str = "", acceptor: str = "",
               journal: str = "", port: int = 0) -> tuple[subprocess.Popen, str]:
    """A fresh node on a free port (SQLite under `workdir`); `extra_config` is
    more node YAML, `acceptor` more keys of its acceptor (TLS), `journal` more
    lines of its journal section (a url); `port` 0 picks one."""
    cfg = workdir / "node.yaml"
    cfg.write_text(
        f"name: bench\ndata-directory: {workdir / 'data'}\n"
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}{acceptor}}}\n"
        f"journal:\n  sync: {'true' if sync else 'false'}\n{journal}" + extra_config
    )
    return launch_node(cfg, workdir)


def launch_node(cfg: Path, workdir: Path, *, quiet: bool = True, timeout: float = 60) -> tuple[subprocess.Popen, str]:
    """`meshmq serve router` on `cfg` (its output appended to workdir/node.log);
    returns once its ready file names its endpoint, or exits after `timeout` s."""
    ready = workdir / "ready.json"
    ready.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshmq.cli.main", "serve", "router", "--config", str(cfg), "--ready-file", str(ready),
         *(["--quiet"] if quiet else [])],
        stdout=open(workdir / "node.log", "ab"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"node did not start; see {workdir / 'node.log'}")
        time.sleep(0.05)
    return proc, "meshmq://" + json.loads(ready.read_text())["endpoints"][0]


SECURE_CONFIG = """
security-enabled: true
users:
  - {username: bench, password: bench-secret, roles: [apps]}
security-settings:
  "bench.#": {send: [apps], consume: [apps], create-address: [apps], create-durable-queue: [apps],
              create-non-durable-queue: [apps]}
"""


@contextlib.contextmanager
def fresh_database(base_url: str | None) -> Iterator[str | None]:
    """A new empty PostgreSQL database beside `base_url`'s, dropped afterwards (None: SQLite)."""
    if base_url is None:
        yield None
        return
    import uuid

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(base_url)
    name = f"meshmq_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def make_certs(d: Path) -> None:
    """A throwaway cluster CA (ca/) and a certificate for 127.0.0.1 (server.pem, server-key.pem)."""
    from meshmq.security.certs import create_ca, issue

    create_ca(d / "ca")
    issue(d / "ca", d, "server", ["127.0.0.1"])


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(router process, its child processes) user+system CPU seconds so far."""
    proc = psutil.Process(pid)
    own = proc.cpu_times()
    children = 0.0
    for child in proc.children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        children += t.user + t.system
    return own.user + own.system, children


def backend_cpu_seconds(db_url: str | None) -> dict[int, float]:
    """PostgreSQL: CPU seconds so far of each server process serving `db_url`'s
    database, by pid (empty for SQLite, or when the server is not on this host).
    The server shares the machine's cores with the broker, so its CPU per
    message is part of what a durable message costs here."""
    if db_url is None:
        return {}
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    engine = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            pids = conn.execute(text("SELECT pid FROM pg_stat_activity WHERE datname = :d"),
                                {"d": url.database}).scalars().all()
    finally:
        engine.dispose()
    seconds = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        seconds[pid] = t.user + t.system
    return seconds


def parse_mode(mode: str) -> tuple[bool, float | None, int | None]:
    """(durable, rate or None, window or None) of KIND[@RATE][/WINDOW]."""
    head, _, window = mode.partition("/")
    kind, _, rate = head.partition("@")
    if kind not in ("durable", "non-durable", "idempotent"):
        raise SystemExit(f"unknown mode {mode!r}: KIND[@RATE][/WINDOW], KIND durable, non-durable or idempotent")
    try:
        return kind != "non-durable", float(rate) if rate else None, int(window) if window else None
    except ValueError:
        raise SystemExit(f"bad mode {mode!r}: RATE is msg/s and WINDOW bytes, e.g. durable@25000/524288") from None


async def run(url: str, count: int, size: int, mode: str) -> dict:
    durable, rate, _ = parse_mode(mode)
    idempotent = mode.startswith("idempotent")
    address = f"bench.{'durable' if durable else 'nondurable'}"
    prod, cons, total = await perf.client(url, address, count, size, durable, rate=rate, idempotent=idempotent)
    return {
        "mode": mode,
        "messages": cons.messages,
        "msg_per_s": round(total.rate),
        "producer_msg_per_s": round(prod.rate),
        "consumer_msg_per_s": round(cons.rate),
        "confirm_p50_ms": round(prod.percentile(50), 2),
        "confirm_p99_ms": round(prod.percentile(99), 2),
        "e2e_p50_ms": round(cons.percentile(50), 2),
        "e2e_p99_ms": round(cons.percentile(99), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--modes", default="durable,durable/1048576,durable@25000,non-durable,non-durable/1048576")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each mode, each on a fresh node")
    ap.add_argument("--secure", action="store_true", help="TLS, authentication and authorization on (docs/security.md)")
    ap.add_argument("--journal-url", help="a PostgreSQL URL: each run on a fresh database beside it")
    ap.add_argument("--no-event-log", action="store_true",
                    help="journal.event-log-enabled: false (no ENQUEUED/ACKNOWLEDGED rows for analytics)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    for mode in modes:
        parse_mode(mode)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    print(f"# machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    results = []
    for mode in modes:
        window = parse_mode(mode)[2]
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="meshmq-bench-") as tmp, fresh_database(args.journal_url) as db:
                journal = (f"  url: {db}\n" if db else "") + ("  event-log-enabled: false\n" if args.no_event_log else "")
                options = []
                if args.secure:
                    make_certs(Path(tmp))
                    acceptor = f", ssl-enabled: true, cert-path: {tmp}/server.pem, key-path: {tmp}/server-key.pem"
                    proc, url = start_node(Path(tmp), sync=True, extra_config=SECURE_CONFIG, acceptor=acceptor,
                                           journal=journal)
                    url = url.replace("meshmq://", "meshmq://bench:bench-secret@")
                    options += ["sslEnabled=true", f"trustStorePath={tmp}/ca/ca.pem"]
                else:
                    proc, url = start_node(Path(tmp), sync=True, journal=journal)
                if window:
                    options.append(f"confirmationWindowSize={window}")
                if options:
                    url += "?" + "&".join(options)
                try:
                    router_before, journal_before = cpu_seconds(proc.pid)
                    server_before = backend_cpu_seconds(db)
                    result = asyncio.run(run(url, args.count, args.size, mode))
                    router_after, journal_after = cpu_seconds(proc.pid)
                    server_after = backend_cpu_seconds(db)
                    if server_after:
                        server = sum(t - server_before.get(pid, 0.0) for pid, t in server_after.items())
                        result["postgres_cpu_us_per_msg"] = round(server / args.count * 1e6, 1)
                    result["router_cpu_us_per_msg"] = round((router_after - router_before) / args.count * 1e6, 1)
                    result["journal_cpu_us_per_msg"] = round((journal_after - journal_before) / args.count * 1e6, 1)
                    result["window"] = window or ClientOptions().confirmationWindowSize
                    result["secure"] = args.secure
                    print(json.dumps(result), flush=True)
                    results.append(result)
                finally:
                    proc.terminate()
                    proc.wait(30)
    print(f"\n{'mode':<28} {'msg/s':>9} {'confirm p50':>12} {'confirm p99':>12} {'router CPU':>13} {'journal CPU':>13}")
    for r in results:
        print(f"{r['mode']:<28} {r['msg_per_s']:>9,} {r['confirm_p50_ms']:>9.1f} ms {r['confirm_p99_ms']:>9.1f} ms"
              f" {r['router_cpu_us_per_msg']:>8.1f} us/msg {r['journal_cpu_us_per_msg']:>8.1f} us/msg")


if __name__ == "__main__":
    main()
