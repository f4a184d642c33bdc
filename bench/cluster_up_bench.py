"""How long `meshmq cluster up` takes to give a ready 3-node cluster.

Each repetition runs the command a user runs, as a subprocess, on
deploy/local/symmetric-3.yaml with --free-ports in a fresh run directory,
and measures its wall time: from the command's start (interpreter start-up
included) to its return, which is when all three nodes listen and are in
discovery's topology. cluster.json gives the stages inside `up`: etcd healthy,
every process listening, every node in the topology. Then `up` again in the
same run directory (nodes recover their journals and keep their ids), and
`down` (SIGTERM; routers leave the topology; etcd last).

    .venv/bin/python bench/cluster_up_bench.py [--repetitions 5] [--file deploy/local/symmetric-3.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def meshmq(*args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=180)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"meshmq {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return seconds


def row(name: str, values: list[float]) -> str:
    return (f"| {name} | {min(values):.2f} s | {statistics.median(values):.2f} s | {max(values):.2f} s |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--file", default=str(ROOT / "deploy" / "local" / "symmetric-3.yaml"))
    args = parser.parse_args()

    results: dict[str, list[float]] = {k: [] for k in (
        "up (command, fresh run dir)", "  etcd healthy", "  all processes listening", "  all nodes in the topology",
        "up again (same run dir)", "down")}
    with tempfile.TemporaryDirectory(prefix="meshmq-cluster-bench-") as tmp:
        for i in range(args.repetitions):
            run = Path(tmp) / f"run{i}"
            results["up (command, fresh run dir)"].append(
                meshmq("cluster", "up", "-f", args.file, "--run-dir", str(run), "--free-ports"))
            timings = json.loads((run / "cluster.json").read_text())["timings"]
            results["  etcd healthy"].append(timings["etcd"])
            results["  all processes listening"].append(timings["listening"])
            results["  all nodes in the topology"].append(timings["ready"])
            results["down"].append(meshmq("cluster", "down", "--run-dir", str(run)))
            results["up again (same run dir)"].append(
                meshmq("cluster", "up", "-f", args.file, "--run-dir", str(run), "--free-ports"))
            meshmq("cluster", "down", "--run-dir", str(run))
            print(f"repetition {i + 1}: up {results['up (command, fresh run dir)'][-1]:.2f} s "
                  f"(inside up: etcd {timings['etcd']:.2f} s, listening {timings['listening']:.2f} s, "
                  f"ready {timings['ready']:.2f} s), down {results['down'][-1]:.2f} s, "
                  f"up again {results['up again (same run dir)'][-1]:.2f} s", flush=True)

    print(f"\n{os.cpu_count()} cores, Python {platform.python_version()}, {args.repetitions} repetitions, "
          f"{Path(args.file).name} with --free-ports\n")
    print("| measure | min | median | max |\n|---|---|---|---|")
    for name, values in results.items():
        print(row(name, values))


if __name__ == "__main__":
    main()
