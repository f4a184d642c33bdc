"""`meshmq verify` on the launcher's 3-node symmetric cluster: it passes a
healthy cluster with a node killed twice (kill -9 and restart), finds a loss a
rogue consumer causes and the duplicates and strangers a test sends, and the
gateway shows its last run."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from meshmq.client import connect
from meshmq.launcher import LocalCluster, load_cluster_spec
from meshmq.verify import Verifier, VerifyOptions
from meshmq.verify.report import PRODUCER_PROPERTY, RUN_PROPERTY, SEQ_PROPERTY, verify_id
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SYMMETRIC_3 = ROOT / "deploy" / "local" / "symmetric-3.yaml"


async def up(launched):
    run = launched.run_dir()
    state = await LocalCluster(load_cluster_spec(SYMMETRIC_3).with_free_ports(), run).up()
    return run, state


async def test_a_healthy_cluster_with_a_node_killed_twice_passes_and_the_gateway_shows_the_run(launched, tmp_path):
    run, state = await up(launched)
    report_file = tmp_path / "report.json"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "meshmq.cli.main", "verify", "--run-dir", str(run), "--duration", "7s",
         "--kill-node", "n2", "--every", "3s", "--down-for", "0.5s", "--producers", "3", "--rate", "150",
         "--drain-timeout", "60s", "--report", str(report_file)],
        capture_output=True, text=True, timeout=180, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    report = json.loads(report_file.read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    counts = report["counts"]
    assert counts["lost"] == 0 and counts["duplicated"] == 0 and counts["unexpected"] == 0
    assert counts["sent"] > 500 and counts["received"] >= counts["confirmed"] > 0
    assert counts["sent"] == counts["confirmed"] + counts["in_doubt"] + counts["refused"]
    kills = [f for f in report["faults"] if f["action"] == "inject"]
    heals = [f for f in report["faults"] if f["action"] == "heal"]
    assert [(f["target"], f["fault"]) for f in kills] == [("n2", "kill -9")] * 2
    assert all(f["outcome"].startswith("started again") for f in heals) and len(heals) == 2
    assert "PASSED" in done.stdout and "report posted" in done.stderr

    # The gateway keeps it: the REST API shows the last run as posted.
    gateway = state.gateway.endpoint
    async with httpx.AsyncClient(base_url=gateway, timeout=10) as http:
        token = (await http.post("/api/v1/auth/token", json={"username": "admin", "password": "admin"})).json()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        last = (await http.get("/api/v1/verify/runs/last", headers=auth)).json()
        assert last["run_id"] == report["run_id"] and last["passed"] is True
        assert last["counts"] == counts
        listed = (await http.get("/api/v1/verify/runs", headers=auth)).json()
        assert [r["run_id"] for r in listed] == [report["run_id"]]
        # The console page shows the same numbers (logged in by the session cookie).
        page = await http.get("/verify", headers=auth)
        assert page.status_code == 200 and report["run_id"] in page.text
        assert f'<td class="count" id="count-confirmed">{counts["confirmed"]}</td>' in page.text


async def test_verify_reports_what_a_rogue_consumer_took_as_lost_and_injected_copies_as_duplicated(launched):
    run, state = await up(launched)
    n1 = state.node("n1").endpoint
    verifier = Verifier(VerifyOptions(url=state.url, duration=4, producers=2, rate=100, drain_timeout=20))
    task = asyncio.create_task(verifier.run())
    run_id = verifier.options.run_id
    await eventually(lambda: sum(s == "confirmed" for s in verifier.ledger.sent.values()) >= 20, 30,
                     "the verify producers to be confirmed")
    # A rogue consumer acknowledges 5 messages without telling anyone: lost.
    taken = []
    async with await connect(f"meshmq://{n1}?useTopologyForLoadBalancing=false") as conn:
        session = await conn.session()
        rogue = await session.create_consumer(verifier.options.queue, window_size=0)
        while len(taken) < 5:
            m = await rogue.receive(10)
            assert m is not None
            taken.append(verify_id(m.properties[RUN_PROPERTY], m.properties[PRODUCER_PROPERTY],
                                   m.properties[SEQ_PROPERTY]))
            m.ack()
        await rogue.close()
        # A copy of producer 0's first message under another duplicate id: duplicated. One this run never
        # sent, and one without verify properties: unexpected.
        producer = await session.create_producer(verifier.options.queue)
        await producer.send(b"copy", duplicate_id="another", routing_type="anycast",
                            properties={RUN_PROPERTY: run_id, PRODUCER_PROPERTY: 0, SEQ_PROPERTY: 0})
        await producer.send(b"never", routing_type="anycast",
                            properties={RUN_PROPERTY: run_id, PRODUCER_PROPERTY: 7, SEQ_PROPERTY: 99})
        await producer.send(b"stranger", routing_type="anycast")
    report = await task
    assert not report.passed
    assert sorted(report.ids["lost"]) == sorted(taken) and report.lost == 5
    assert report.ids["duplicated"] == [verify_id(run_id, 0, 0)] and report.duplicated == 1
    assert report.unexpected == 2
    assert verify_id(run_id, 7, 99) in report.ids["unexpected"]
    assert any("without verify properties" in i for i in report.ids["unexpected"])
    assert report.received == report.confirmed - 5


async def test_verify_reports_a_stored_message_deleted_while_its_node_was_stopped_as_lost(launched):
    """The fault here is the test's own: stop n2, delete the oldest message row of the verify queue
    from its SQLite journal (docs/journal-schema.md), start it again. The queue is paused on n2 first,
    so what reaches it stays in the store until the restart (a pause is not stored: the restart ends it)."""
    import sqlite3

    from meshmq.v1 import messages_pb2 as mpb

    run, state = await up(launched)
    cluster = LocalCluster.attach(run)
    n2 = state.node("n2")
    queue = "verify.store"
    async with await connect(f"meshmq://{n2.endpoint}?useTopologyForLoadBalancing=false") as conn:
        await conn.admin.create_queue(queue, address=queue)
        await conn.admin.pause_queue(queue)
    deleted: list[str] = []

    class DeleteStoredRow:
        kind, target = "delete a stored row", "n2"

        async def inject(self) -> str:
            await cluster.stop_process("n2", timeout=10)
            with sqlite3.connect(Path(n2.data_directory) / "journal.db") as sql:
                [queue_id] = sql.execute("SELECT queue_id FROM queues WHERE name = ?", (queue,)).fetchone()
                message_id, data = sql.execute("SELECT message_id, data FROM messages WHERE queue_id = ? "
                                               "ORDER BY message_id LIMIT 1", (queue_id,)).fetchone()
                sql.execute("DELETE FROM messages WHERE message_id = ?", (message_id,))
            deleted.append(mpb.Message.FromString(data).duplicate_id)
            return f"deleted message {message_id}"

        async def heal(self) -> str:
            record = await cluster.start_process("n2", timeout=60)
            return f"started again (pid {record.pid})"

    verifier = Verifier(VerifyOptions(url=state.url, queue=queue, duration=4, every=3, down_for=0.1, producers=2,
                                      rate=100, drain_timeout=40), faults=[DeleteStoredRow()])
    report = await verifier.run()
    assert len(deleted) == 1 and deleted[0].startswith(verifier.options.run_id)
    assert report.ids["lost"] == deleted and report.lost == 1
    assert report.duplicated == 0 and report.unexpected == 0 and not report.passed
    assert [(f.fault, f.action) for f in report.faults] == [("delete a stored row", "inject"),
                                                           ("delete a stored row", "heal")]
