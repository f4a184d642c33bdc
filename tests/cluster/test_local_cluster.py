"""`meshmq cluster up|status|down` and LocalCluster with real processes: etcd,
the discovery service and routers on loopback ports picked at run time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from meshmq.client import connect
from meshmq.launcher import ClusterError, ClusterSpec, ClusterUpError, LocalCluster, load_cluster_spec
from meshmq.config.loader import load_config
from meshmq.discovery import GrpcDiscoveryClient
from meshmq.v1 import discovery_pb2 as dpb
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SYMMETRIC_3 = ROOT / "deploy" / "local" / "symmetric-3.yaml"
CLI_DEADLINE_S = 90


def gone(pid: int) -> bool:
    """No such process, or one that exited and waits to be reaped."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def listed(state) -> list[dpb.ClusterNode]:
    api = GrpcDiscoveryClient(state.discovery.endpoint)
    try:
        return list((await api.list(dpb.ListNodesRequest(cluster_name=state.cluster_name))).nodes)
    finally:
        await api.close()


async def forwarded_across(source_url: str, target_url: str, queue: str = "cluster.orders") -> None:
    """A consumer on the node at `target_url`; once the node at `source_url`
    knows of it, what that node is sent arrives there (ON_DEMAND, over the
    cluster connection's link)."""
    async with await connect(target_url) as at_target:
        consumer = await (await at_target.session()).create_consumer(queue)
        async with await connect(source_url) as at_source:
            async def knows_the_consumer():
                state = await at_source.admin.cluster_state()
                return any(rb.queue == queue and rb.consumer_filters for rb in state.remote_bindings)
            await eventually(knows_the_consumer, 30, "the source node to learn of the consumer")
            producer = await (await at_source.session()).create_producer(queue)
            for i in range(10):
                await producer.send(b"across", properties={"n": i}, routing_type="anycast")
        got = [await consumer.receive(10) for _ in range(10)]
        assert [int(m.properties["n"]) for m in got if m is not None] == list(range(10))
        for m in got:
            m.ack()


async def test_up_status_down_of_the_symmetric_example(launched):
    spec = load_cluster_spec(SYMMETRIC_3).with_free_ports()
    run = launched.run_dir()
    cluster = LocalCluster(spec, run)
    state = await cluster.up()

    assert [n.name for n in state.nodes] == ["n1", "n2", "n3"]
    assert state.status == "up"
    # discovery's topology: exactly the three nodes, each where it listens
    assert sorted((n.node_name, n.node_id, n.connector) for n in await listed(state)) == [
        (r.name, r.node_id, r.endpoint) for r in state.nodes]
    # each node answers the SDK and pushes a topology of all three
    endpoints = sorted(r.endpoint for r in state.nodes)
    for record in state.nodes:
        async with await connect("meshmq://" + record.endpoint) as conn:
            info = await conn.admin.node_info()
            assert (info.node_id, info.name) == (record.node_id, record.name)
            assert sorted(s.target for s in await conn.wait_for_topology(3)) == endpoints
    # the cluster connection of node-defaults: a message sent on n1 reaches the only consumer, on n3
    await forwarded_across(f"meshmq://{state.nodes[0].endpoint}?useTopologyForLoadBalancing=false",
                           f"meshmq://{state.nodes[2].endpoint}?useTopologyForLoadBalancing=false")
    # what the run directory holds
    for record in state.processes:
        assert (run / f"{record.name}.pid").read_text().strip() == str(record.pid)
        assert Path(record.log) == run / f"{record.name}.log" and Path(record.log).exists()
    n1 = load_config(run / "n1" / "node.yaml")
    assert n1.data_directory == run / "n1" / "data"
    assert n1.address_settings["#"].dead_letter_address == "DLQ"  # node-defaults
    assert (run / "n1" / "data" / "journal.db").exists()

    # status from a fresh object that only knows the run directory
    status = await LocalCluster.attach(run).status()
    assert status.healthy
    assert [(p.name, p.pid, p.alive, p.endpoint, p.node_id) for p in status.processes] == [
        (p.name, p.pid, True, p.endpoint, p.node_id) for p in state.processes]
    assert [(p.name, p.in_topology) for p in status.processes] == [
        ("etcd", None), ("discovery", None), ("gateway", None), ("n1", True), ("n2", True), ("n3", True)]
    # a second `up` in the same run directory is refused while it runs
    with pytest.raises(ClusterError, match="already running"):
        await LocalCluster(spec, run).up()

    stopped = await LocalCluster.attach(run).down()
    assert [(s.name, s.outcome) for s in stopped] == [
        ("gateway", "stopped"), ("n1", "stopped"), ("n2", "stopped"), ("n3", "stopped"), ("discovery", "stopped"), ("etcd", "stopped")]
    assert all(gone(p.pid) for p in state.processes)
    assert not list(run.glob("*.pid"))
    assert (run / "n1.log").exists() and (run / "n1" / "data" / "journal.db").exists()  # kept
    again = await cluster.down()  # idempotent
    assert {s.outcome for s in again} == {"not running"}
    after = await cluster.status()
    assert after.state.status == "down" and not any(p.alive for p in after.processes) and not after.healthy

    # up again in the same run directory: the nodes keep their ids (their data directories are kept)
    state2 = await cluster.up()
    assert [(n.name, n.node_id) for n in state2.nodes] == [(n.name, n.node_id) for n in state.nodes]
    await cluster.down()
    assert all(gone(p.pid) for p in state2.processes)


async def test_a_node_that_fails_to_start_stops_the_launch_with_its_log(launched):
    spec = ClusterSpec.parse({
        "cluster-name": "broken",
        "etcd": {"client-port": 0, "peer-port": 0}, "discovery": {"port": 0},
        "nodes": [{"name": "good"},
                  {"name": "bad", "config": {"journal": {"url": "postgresql+psycopg://nobody@127.0.0.1:1/none"}}}],
    })
    run = launched.run_dir()
    with pytest.raises(ClusterUpError) as info:
        await LocalCluster(spec, run).up(timeout=60)
    said = str(info.value)
    assert said.startswith("bad exited with code 2 before the cluster was ready; the end of ")
    assert "journal store postgresql+psycopg://nobody@127.0.0.1:1/none is unreachable" in said
    assert "Everything started was stopped" in said
    state = json.loads((run / "cluster.json").read_text())
    assert state["status"] == "failed"
    assert {p["name"] for p in state["processes"]} == {"etcd", "discovery", "good", "bad"}
    assert all(gone(p["pid"]) for p in state["processes"])


def cli(*args: str) -> subprocess.CompletedProcess:
    """`meshmq cluster ARGS` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "meshmq.cli.main", "cluster", *args], capture_output=True, text=True, timeout=CLI_DEADLINE_S,
                          cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})


async def test_cli_up_status_down_round_trip(launched, tmp_path):
    run = launched.run_dir()
    up = cli("up", "-f", str(SYMMETRIC_3), "--run-dir", str(run), "--free-ports")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "all 3 nodes are in the topology of cluster symmetric-3" in up.stdout
    assert "cluster symmetric-3 is up in" in up.stdout
    state = json.loads((run / "cluster.json").read_text())
    pids = [p["pid"] for p in state["processes"]]

    # the processes outlived `up`; status (piped: tab-separated) sees them all, in the topology
    status = cli("status", "--run-dir", str(run))
    assert status.returncode == 0, status.stdout + status.stderr
    rows = [line.split("\t") for line in status.stdout.splitlines()]
    assert rows[0] == ["name", "pid", "alive", "endpoint", "node id", "in topology", "ha", "metrics"]
    assert [(r[0], int(r[1]), r[2], r[5], r[6]) for r in rows[1:]] == [
        ("etcd", pids[0], "yes", "-", "-"), ("discovery", pids[1], "yes", "-", "-"),
        ("gateway", pids[2], "yes", "-", "-"),
        ("n1", pids[3], "yes", "yes", "live-only"), ("n2", pids[4], "yes", "yes", "live-only"),
        ("n3", pids[5], "yes", "yes", "live-only")]
    assert rows[4][4] == state["processes"][3]["node_id"]
    # every meshmq process serves its metrics on a port picked at its start, recorded for the operator
    assert rows[1][7] == "-"  # etcd
    metrics = {r[0]: r[7] for r in rows[2:]}
    assert metrics == {p["name"]: p["metrics"] for p in state["processes"][1:]}
    assert len(set(metrics.values())) == 5 and all(m.startswith("http://127.0.0.1:") for m in metrics.values())
    async with httpx.AsyncClient(timeout=10) as http:
        scraped = (await http.get(metrics["n1"])).text
    assert 'meshmq_service_info{node="n1",service="router"' in scraped
    assert 'meshmq_gateway_sessions ' in httpx.get(metrics["gateway"]).text  # the gateway's, on its own port
    async with await connect(f"meshmq://{rows[4][3]}") as conn:
        assert (await conn.admin.node_info()).name == "n1"

    down = cli("down", "--run-dir", str(run))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "cluster stopped (6 process(es))" in down.stdout
    assert all(gone(pid) for pid in pids)
    assert cli("down", "--run-dir", str(run)).stdout.startswith("nothing to stop")
    after = cli("status", "--run-dir", str(run))
    assert after.returncode == 1 and "\tno\t" in after.stdout

    # a bad cluster file: the problem with its line and key, and nothing started
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster-name: bad\nnodes:\n  - name: n1\n    prot: 1\n")
    refused = cli("up", "-f", str(bad), "--run-dir", str(tmp_path / "bad-run"))
    assert refused.returncode == 2
    assert f"error: {bad}:4: nodes[0].prot: unknown key (did you mean 'port'?)" in refused.stderr
    assert not (tmp_path / "bad-run").exists()


def rows_of(run) -> dict[str, list[str]]:
    status = cli("status", "--run-dir", str(run))
    return {r[0]: r for r in (line.split("\t") for line in status.stdout.splitlines()[1:])}


async def test_failure_drills_kill_stop_and_start_one_process_and_the_cluster_keeps_tracking_it(launched):
    """A node killed with -9 and started again, etcd killed and started again
    (with its data), a node stopped and started: each comes back on its own
    endpoint, the launcher tracks the new pids, and down stops them all."""
    run = launched.run_dir()
    up = cli("up", "-f", str(SYMMETRIC_3), "--run-dir", str(run), "--free-ports")
    assert up.returncode == 0, up.stdout + up.stderr
    before = rows_of(run)

    killed = cli("kill", "n2", "--run-dir", str(run))
    assert killed.returncode == 0 and "n2 (pid" in killed.stdout and "killed with SIGKILL" in killed.stdout
    assert gone(int(before["n2"][1]))
    assert rows_of(run)["n2"][2] == "no"
    assert cli("kill", "n2", "--run-dir", str(run)).returncode != 0  # not running: said, nothing done
    started = cli("start", "n2", "--run-dir", str(run))
    assert started.returncode == 0, started.stdout + started.stderr
    await eventually(lambda: (r := rows_of(run)["n2"]) and r[2] == "yes" and r[5] == "yes" and r, 30,
                     "n2 back in the topology")
    after = rows_of(run)["n2"]
    assert after[1] != before["n2"][1] and (after[3], after[4]) == (before["n2"][3], before["n2"][4])

    assert cli("kill", "etcd", "--run-dir", str(run)).returncode == 0
    assert rows_of(run)["etcd"][2] == "no"
    assert cli("start", "etcd", "--run-dir", str(run)).returncode == 0
    # Discovery reconnects and the nodes' announcements come back.
    await eventually(lambda: cli("status", "--run-dir", str(run)).returncode == 0, 60, "a healthy cluster again")

    stopped = cli("stop", "n1", "--run-dir", str(run))
    assert stopped.returncode == 0 and "stopped in" in stopped.stdout
    assert cli("start", "n1", "--run-dir", str(run)).returncode == 0
    await eventually(lambda: cli("status", "--run-dir", str(run)).returncode == 0, 30, "n1 back")

    assert cli("start", "n1", "--run-dir", str(run)).returncode != 0  # running already
    unknown = cli("kill", "n9", "--run-dir", str(run))
    assert unknown.returncode != 0 and "no process 'n9'" in unknown.stderr
    pids = [int(r[1]) for r in rows_of(run).values()]
    assert cli("down", "--run-dir", str(run)).returncode == 0
    assert all(gone(pid) for pid in pids)
