"""deploy/local/shared-store-2.yaml brought up by the launcher (issue 12): a
live and its backup on one PostgreSQL store; `status` shows who serves, the
backup takes over after kill -9 of the live. Real processes; the file is
copied with the test's own database and ports picked at run time."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import httpx
import pytest

from meshmq.client import connect
from meshmq.launcher import load_cluster_spec
from tests.fixtures.nodes import eventually, free_port

from .test_local_cluster import cli, gone

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "local" / "shared-store-2.yaml"


def ha_column(run: Path) -> dict[str, str]:
    status = cli("status", "--run-dir", str(run))
    rows = [line.split("\t") for line in status.stdout.splitlines()[1:]]
    return {r[0]: r[6] for r in rows}


async def test_the_shared_store_example_up_failover_and_status(launched, pg_url, tmp_path):
    copy = tmp_path / "shared-store-2.yaml"
    copy.write_text(EXAMPLE.read_text().replace("postgresql+psycopg://postgres@127.0.0.1:5432/meshmq_ha", pg_url))
    run = launched.run_dir()
    up = cli("up", "-f", str(copy), "--run-dir", str(run), "--free-ports")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "backup listening on" in up.stdout and "(passive: waits for its store)" in up.stdout
    assert "all 1 active nodes are in the topology of cluster shared-store-2; 1 passive (backups)" in up.stdout
    state = json.loads((run / "cluster.json").read_text())
    by_name = {p["name"]: p for p in state["processes"]}
    live, backup = by_name["live"], by_name["backup"]
    # Started together, the backup may win the free lease first (as in Artemis) and
    # then fail back to the live: wait for the steady state.
    live_serves = re.compile(rf"shared-store master, active, epoch (\d+), backup at {backup['endpoint']}")
    column = await eventually(lambda: (c := ha_column(run)) and live_serves.fullmatch(c["live"])
                              and c["backup"] == f"passive (live at {live['endpoint']})" and c, 30,
                              "the live to serve and the backup to wait")
    epoch = int(live_serves.fullmatch(column["live"]).group(1))
    async with await connect(f"meshmq://{live['endpoint']}") as conn:
        await (await (await conn.session()).create_producer("orders")).send(b"kept")

    os.kill(live["pid"], signal.SIGKILL)
    await eventually(lambda: ha_column(run)["backup"] == f"shared-store slave, active, epoch {epoch + 1}, no backup", 30,
                     "status to show the backup serving")
    async with await connect(f"meshmq://{backup['endpoint']}") as conn:
        message = await (await (await conn.session()).create_consumer("orders")).receive(5)
        assert message is not None and message.body == b"kept"

    down = cli("down", "--run-dir", str(run))
    assert down.returncode == 0, down.stdout + down.stderr
    assert all(gone(p["pid"]) for p in state["processes"])


def test_the_example_names_a_shared_postgresql_store_for_both_nodes():
    spec = load_cluster_spec(EXAMPLE)
    assert spec.node_defaults["journal"]["url"].startswith("postgresql")
    assert [n.config["ha-policy"] for n in spec.nodes] == [{"shared-store": {"master": {}}},
                                                           {"shared-store": {"slave": {}}}]


CLASSIC = ROOT / "deploy" / "local" / "classic-replication-4.yaml"


async def test_the_classic_replication_example_fails_over_and_back(launched, tmp_path):
    """deploy/local/classic-replication-4.yaml (its ports replaced by free
    ones: the connectors name them): up, the master killed, its slave serving
    after the lives' vote, the master started again failing back."""
    text = CLASSIC.read_text()
    for port in sorted(set(re.findall(r"\b(?:239[12]|6166[5-9])\b", text))):
        text = re.sub(rf"\b{port}\b", str(free_port()), text)
    copy = tmp_path / "classic-replication-4.yaml"
    copy.write_text(text)
    run = launched.run_dir()
    up = cli("up", "-f", str(copy), "--run-dir", str(run))
    assert up.returncode == 0, up.stdout + up.stderr
    assert "all 3 active nodes are in the topology of cluster classic-replication-4; 1 passive (backups)" in up.stdout
    by_name = {p["name"]: p for p in json.loads((run / "cluster.json").read_text())["processes"]}
    m, s = by_name["m"], by_name["s"]
    await eventually(lambda: "is in sync" in Path(m["log"]).read_text(), 30, "the slave to copy the master")
    column = await eventually(lambda: (c := ha_column(run))["m"].endswith(f"backup at {s['endpoint']}") and c, 10,
                              "the master to name its slave")
    assert column["m"] == f"replication master, active, epoch 1, backup at {s['endpoint']}"
    assert column["s"] == f"passive (live at {m['endpoint']})"
    async with await connect(f"meshmq://{m['endpoint']}") as conn:
        await (await (await conn.session()).create_producer("orders")).send(b"kept")

    assert cli("kill", "m", "--run-dir", str(run)).returncode == 0
    await eventually(lambda: ha_column(run)["s"] == "replication slave, active, epoch 2, no backup", 30,
                     "the slave to serve")
    started = cli("start", "m", "--run-dir", str(run))  # returns once m serves again: it failed back
    assert started.returncode == 0, started.stdout + started.stderr
    await eventually(lambda: (c := ha_column(run))["m"] == f"replication master, active, epoch 3, backup at {s['endpoint']}"
                     and c["s"] == f"passive (live at {m['endpoint']})", 30, "the master to serve, the slave to copy it")
    async with await connect(f"meshmq://{m['endpoint']}") as conn:
        message = await (await (await conn.session()).create_consumer("orders")).receive(5)
        assert message is not None and message.body == b"kept"


COORDINATED = ROOT / "deploy" / "local" / "coordinated-replication-2.yaml"


async def test_the_coordinated_replication_example_runs_the_ha_coordinator_and_fails_over(launched, tmp_path):
    """deploy/local/coordinated-replication-2.yaml (ports replaced by free ones): the
    launcher starts `meshmq serve ha-coordinator` on its etcd, the pair decides through
    it, and after kill -9 of the primary the backup serves at the epoch it granted."""
    text = COORDINATED.read_text()
    for port in sorted(set(re.findall(r"\b(?:239[34]|6167[0-4])\b", text))):
        text = re.sub(rf"\b{port}\b", str(free_port()), text)
    copy = tmp_path / "coordinated-replication-2.yaml"
    copy.write_text(text)
    run = launched.run_dir()
    up = cli("up", "-f", str(copy), "--run-dir", str(run))
    assert up.returncode == 0, up.stdout + up.stderr
    by_name = {p["name"]: p for p in json.loads((run / "cluster.json").read_text())["processes"]}
    primary, backup, coordinator = by_name["primary"], by_name["backup"], by_name["ha-coordinator"]
    assert coordinator["role"] == "ha-coordinator" and coordinator["endpoint"]
    assert "ha-coordinator.yaml" in coordinator["config"]
    await eventually(lambda: ha_column(run)["primary"] == f"replication primary, active, epoch 1, backup at "
                     f"{backup['endpoint']}", 30, "the primary to name its in-sync backup")
    async with await connect(f"meshmq://{primary['endpoint']}") as conn:
        await (await (await conn.session()).create_producer("orders")).send(b"kept")
    # The launched gateway shows the pair and the coordinator's quorum.
    gateway = httpx.Client(base_url=by_name["gateway"]["endpoint"], timeout=30)
    token = gateway.post("/api/v1/auth/token", json={"username": "admin", "password": "admin"}).json()["token"]
    gateway.headers["Authorization"] = f"Bearer {token}"

    def ha_view(quorum_epoch: int, serving: str):
        ha = gateway.get("/api/v1/ha").json()
        quorums = ha["quorums"]
        return ha if (len(quorums) == 1 and quorums[0]["epoch"] == quorum_epoch
                      and quorums[0]["live_connector"] == serving) else None

    ha = await eventually(lambda: ha_view(1, primary["endpoint"]), 30, "the gateway to show the quorum at epoch 1")
    assert ha["coordinator_problem"] == "" and ha["quorums"][0]["in_sync_replica"]
    [group] = ha["groups"]
    assert (group["live"], group["epoch"], group["in_sync"], group["backups"]) == ("primary", 1, True, ["backup"])

    assert cli("kill", "primary", "--run-dir", str(run)).returncode == 0
    await eventually(lambda: ha_column(run)["backup"] == "replication backup, active, epoch 2, no backup", 30,
                     "the backup to serve")
    ha = await eventually(lambda: ha_view(2, backup["endpoint"]), 30, "the gateway to show the backup serving")
    nodes = {n["name"]: n for n in gateway.get("/api/v1/nodes").json()}
    assert nodes["backup"]["up"] and nodes["backup"]["epoch"] == 2
    # The killed primary still shows, as down (it is remembered though discovery dropped it).
    assert not nodes["primary"]["up"] and nodes["primary"]["problem"]
    gateway.close()
    async with await connect(f"meshmq://{backup['endpoint']}") as conn:
        message = await (await (await conn.session()).create_consumer("orders")).receive(5)
        assert message is not None and message.body == b"kept"
    down = cli("down", "--run-dir", str(run))
    assert down.returncode == 0, down.stdout + down.stderr
    assert gone(coordinator["pid"])
