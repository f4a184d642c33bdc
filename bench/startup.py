"""What a router costs to start: CPU seconds (the router and its journal
writer, user + system) and wall time from exec to its ready file, then a
SIGTERM stop, over a fresh data directory each time.

The test suite starts routers by the hundred (tests/fixtures/nodes.py), so
this is most of its CPU; `meshmq up` and a launcher's cluster pay it per
node.

    .venv/bin/python bench/startup.py --runs 10

Prints the median and the best of each figure. Run it on a quiet machine:
wall time moves with load, CPU seconds much less.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """name: bench
data-directory: {data}
acceptors:
  - {{name: grpc, host: 127.0.0.1, port: 0}}
journal:
  listen: {{host: 127.0.0.1, port: 0}}
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_start(workdir: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds to ready) of one start and stop."""
    config = workdir / "router.yaml"
    ready = workdir / "ready.json"
    config.write_text(CONFIG.format(data=workdir / "data"))
    cpu_before = children_cpu()
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshmq.cli.main", "serve", "router", "--config", str(config), "--ready-file", str(ready)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = started + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"the router did not become ready (exit {proc.returncode})")
        time.sleep(0.01)
    wall = time.monotonic() - started
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    return children_cpu() - cpu_before, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    cpu, wall = [], []
    for i in range(args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="meshmq-startup-") as tmp:
            c, w = one_start(Path(tmp))
        if i:  # the first run warms the OS's file cache
            cpu.append(c)
            wall.append(w)
    print(f"router start to ready and stop, {args.runs} runs ({ROOT})")
    print(f"  CPU  (router + journal writer): median {statistics.median(cpu):.3f} s, best {min(cpu):.3f} s")
    print(f"  wall (exec to ready file):      median {statistics.median(wall):.3f} s, best {min(wall):.3f} s")


if __name__ == "__main__":
    main()
