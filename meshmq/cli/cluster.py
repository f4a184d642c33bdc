"""`meshmq cluster up|status|down|kill|stop|start`: a cluster file as local
processes on loopback (etcd, the discovery service, N routers), and failure
drills on one of them. The work is `meshmq.launcher.LocalCluster`."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import click

from meshmq.cli.cluster_state import bindings, connections
from meshmq.cli.common import fail, run_coroutine


def _cluster(spec_file: str | None, run_dir: str | None, *, free_ports: bool = False):
    """The cluster named by -f (its run directory unless --run-dir) or by --run-dir alone."""
    from meshmq.launcher import LocalCluster, load_cluster_spec
    from meshmq.config.loader import ConfigError

    if spec_file is None:
        if run_dir is None:
            fail("give the cluster file (-f FILE) or the run directory (--run-dir DIR)")
        return LocalCluster.attach(run_dir)
    try:
        spec = load_cluster_spec(spec_file)
    except ConfigError as exc:
        fail(str(exc))
    if free_ports:
        spec = spec.with_free_ports()
    return LocalCluster(spec, run_dir)


def _say(message: str) -> None:
    click.echo(message)
    sys.stdout.flush()


_file_option = click.option("-f", "--file", "spec_file", type=click.Path(dir_okay=False),
                            help="The cluster file (deploy/local/*.yaml).")
_run_dir_option = click.option("--run-dir", type=click.Path(file_okay=False),
                               help="Run directory (default: the file's run-directory, else ./run/<cluster-name>).")


@click.group()
def cluster() -> None:
    """Several nodes on this machine: etcd, the discovery service and routers as local processes."""


cluster.add_command(bindings)
cluster.add_command(connections)


@cluster.command("up")
@click.option("-f", "--file", "spec_file", required=True, type=click.Path(dir_okay=False),
              help="The cluster file (deploy/local/*.yaml).")
@_run_dir_option
@click.option("--free-ports", is_flag=True, help="Pick every port at run time (the file's ports are not used).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True),
              help="Seconds to wait until every node is in the topology (default: the file's ready-timeout).")
def up(spec_file, run_dir, free_ports, timeout) -> None:
    """Start the cluster and return once every node listens and is in the topology.

    The processes keep running after this command exits; logs, pids and
    cluster.json are in the run directory. On failure, prints the failing
    process's log tail and stops everything it started."""
    from meshmq.launcher import ClusterError

    lc = _cluster(spec_file, run_dir, free_ports=free_ports)
    _say(f"starting cluster {lc.spec.cluster_name} in {lc.run_dir}")

    async def go():
        # SIGTERM, like Ctrl-C, cancels the launch: up stops what it had started.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
        return await lc.up(timeout=timeout, progress=_say)

    try:
        state = run_coroutine(go())
    except ClusterError as exc:
        fail(str(exc))
    except asyncio.CancelledError:
        state = None
    if state is None:  # interrupted (Ctrl-C or SIGTERM)
        click.secho("interrupted: everything started was stopped", fg="red", err=True)
        sys.exit(130)
    _print_status(run_coroutine(lc.status()))
    _say(f"cluster {state.cluster_name} is up in {state.timings['ready']:.1f} s; clients: {state.url}")
    if lc.spec.node_defaults.get("security-enabled") and state.nodes:
        options = f"?{state.client_options}" if state.client_options else ""
        _say(f"security is enabled: clients log in as a user of node-defaults.users, "
             f"e.g. meshmq://USER:PASSWORD@{state.nodes[0].endpoint}{options}")
    flags = f"--run-dir {lc.run_dir}"
    _say(f"stop it with: meshmq cluster down {flags}")


@cluster.command("status")
@_file_option
@_run_dir_option
def status(spec_file, run_dir) -> None:
    """Show each process: pid, alive, endpoint, node id, in the topology, ha, metrics URL.

    Exit status 0 when every process is alive and every node is in the
    topology, 1 otherwise (2: nothing was started in the run directory)."""
    from meshmq.launcher import ClusterError

    lc = _cluster(spec_file, run_dir)
    try:
        result = run_coroutine(lc.status())
    except ClusterError as exc:
        fail(str(exc))
    _print_status(result)
    sys.exit(0 if result.healthy else 1)


@cluster.command("kill")
@click.argument("name")
@_file_option
@_run_dir_option
def kill(name, spec_file, run_dir) -> None:
    """Kill one process with SIGKILL (a crash drill): a node, discovery or etcd.
    It stays part of the cluster: `start NAME` runs it again."""
    from meshmq.launcher import ClusterError

    lc = _cluster(spec_file, run_dir)
    try:
        record = run_coroutine(lc.kill(name))
    except ClusterError as exc:
        fail(str(exc))
    _say(f"{name} (pid {record.pid}) killed with SIGKILL; start it again with: "
         f"meshmq cluster start {name} --run-dir {lc.run_dir}")


@cluster.command("stop")
@click.argument("name")
@_file_option
@_run_dir_option
@click.option("--timeout", default=15.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds after SIGTERM before SIGKILL.")
def stop(name, spec_file, run_dir, timeout) -> None:
    """Stop one process (SIGTERM, then SIGKILL after --timeout): a node, discovery or etcd."""
    from meshmq.launcher import ClusterError

    lc = _cluster(spec_file, run_dir)
    try:
        stopped = run_coroutine(lc.stop_process(name, timeout))
    except ClusterError as exc:
        fail(str(exc))
    _say(f"{name} (pid {stopped.pid}) {stopped.outcome} in {stopped.seconds:.1f} s")


@cluster.command("start")
@click.argument("name")
@_file_option
@_run_dir_option
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds to wait until it is ready.")
def start(name, spec_file, run_dir, timeout) -> None:
    """Run one stopped or killed process again on its config, ports and data,
    and track it (status, down); return once it is ready."""
    from meshmq.launcher import ClusterError

    lc = _cluster(spec_file, run_dir)
    try:
        record = run_coroutine(lc.start_process(name, timeout=timeout))
    except ClusterError as exc:
        fail(str(exc))
    where = f" on {record.endpoint}" if record.endpoint else ""
    passive = "" if record.active else " (passive: waits for its store)"
    _say(f"{name} started (pid {record.pid}){where}{passive}")


@cluster.command("down")
@_file_option
@_run_dir_option
@click.option("--timeout", default=15.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds each process gets after SIGTERM before SIGKILL.")
def down(spec_file, run_dir, timeout) -> None:
    """Stop the cluster: routers, then discovery, then etcd (SIGTERM, then
    SIGKILL after --timeout). Keeps logs and data; safe to repeat."""
    from meshmq.launcher import ClusterError

    lc = _cluster(spec_file, run_dir)
    try:
        stopped = run_coroutine(lc.down(timeout=timeout, progress=_say))
    except ClusterError as exc:
        fail(str(exc))
    if not lc.state_file.exists():
        _say(f"nothing to stop: no cluster was started in {lc.run_dir}")
        return
    acted = [s for s in stopped if s.outcome != "not running"]
    if not acted:
        _say(f"nothing to stop: no process of the cluster in {lc.run_dir} is running")
    else:
        _say(f"cluster stopped ({len(acted)} process(es)); logs and data are kept in {lc.run_dir}")
    if any(s.outcome.startswith("still running") for s in stopped):
        sys.exit(1)


def _print_status(result) -> None:
    state = result.state
    header = ("name", "pid", "alive", "endpoint", "node id", "in topology", "ha", "metrics")

    def yes_no(value: bool | None) -> str:
        return "-" if value is None else "yes" if value else "no"

    rows = [(p.name, str(p.pid), yes_no(p.alive), p.endpoint or "-", p.node_id or "-", yes_no(p.in_topology),
             p.ha or "-", p.metrics or "-") for p in result.processes]
    note = f"topology: {result.topology_problem}" if result.topology_problem else ""
    if not sys.stdout.isatty():  # piped: one tab-separated line per process, for scripts
        for row in (header, *rows):
            click.echo("\t".join(row))
        if note:
            click.echo(note, err=True)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"cluster {state.cluster_name} ({state.status}) in {Path(state.run_dir)}")
    for name in header:  # endpoints and node ids are copied from here: never cut them short
        table.add_column(name, no_wrap=name in ("endpoint", "metrics"), overflow="fold")
    for row in rows:
        style = None if row[2] == "yes" and row[5] != "no" else "red"
        table.add_row(*row, style=style)
    console = Console()
    console.print(table)
    if note:
        console.print(note, style="yellow")


if __name__ == "__main__":
    cluster()
