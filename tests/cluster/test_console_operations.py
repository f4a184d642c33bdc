"""The console's connections and queue operations in a real browser (Playwright
driving Debian's chromium) against the launcher's 3-node cluster and its
gateway, each number checked against the `meshmq` CLI: the Connections page
and its close action (confirmed first), a queue's consumers, the paused
column, a bad browse filter said beside the filter box, a move with a limit,
purge's confirmation, memory in units, and no delete offered on an internal
store-and-forward queue (which the REST API refuses too). Screenshots go to
test-artifacts/console/."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

import httpx
import pytest

from meshmq.client import connect
from meshmq.errors import MeshMQError
from meshmq.launcher import LocalCluster, load_cluster_spec
from meshmq.routing_names import INTERNAL_PREFIX
from tests.cluster.test_console import ARTIFACTS, SYMMETRIC_3
from tests.fixtures.browser import browser_session

pytestmark = pytest.mark.integration


def cli(*args: str) -> list[dict[str, str]]:
    """A `meshmq … list` command's rows (piped: tab-separated, a header first)."""
    out = subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    header, *rows = [line.split("\t") for line in out.stdout.splitlines()]
    return [dict(zip(header, row)) for row in rows]


async def test_the_console_lists_and_closes_connections_and_operates_queues_as_the_cli_counts(launched):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    state = await LocalCluster(load_cluster_spec(SYMMETRIC_3).with_free_ports(), launched.run_dir()).up()
    console = state.gateway.endpoint + "/"
    url = f"meshmq://{state.node('n1').endpoint}?useTopologyForLoadBalancing=false"
    loop = asyncio.get_running_loop()

    def run(coro, timeout=30):
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    client = await connect(url + "&reconnectAttempts=0")
    async with await connect(url) as conn:
        await conn.admin.create_queue("ops.q", routing_type="anycast")
        await conn.admin.create_queue("ops.dst", routing_type="anycast")
        internal = [q.name for q in await conn.admin.list_queues() if q.name.startswith(INTERNAL_PREFIX)]
    assert internal, "a cluster node has store-and-forward queues"
    s1, s2 = await client.session(), await client.session()
    producer = await s1.create_producer("ops.q")
    for i in range(5):
        await producer.send(b"m%d" % i, properties={"n": i})
    consumer = await s2.create_consumer("ops.q", window_size=0)  # no prefetch: one in flight
    held = await consumer.receive(10)
    assert held is not None

    def steps(page) -> None:
        from playwright.sync_api import expect

        dialogs: list[str] = []
        answer = {"accept": True}

        def on_dialog(d):
            dialogs.append(d.message)
            d.accept() if answer["accept"] else d.dismiss()

        page.on("dialog", on_dialog)
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", "admin")
        page.click("form.login button[type=submit]")

        # Connections: the client's row has the numbers the CLI gives.
        [ours] = [c for c in cli("connection", "list", "--url", url) if c["consumers"] == "1"]
        page.click("nav >> text=Connections")
        row = page.locator(f'#connections tr[data-id="{ours["id"]}"]')
        for cls, key in (("sessions", "sessions"), ("producers", "producers"), ("consumers", "consumers"),
                         ("in-flight", "in-flight"), ("credits", "credit")):
            expect(row.locator(f"td.{cls}")).to_have_text(ours[key])
        assert ours["sessions"] == "2" and ours["producers"] == "1" and int(ours["in-flight"]) >= 1
        page.screenshot(path=str(ARTIFACTS / "ops-1-connections.png"), full_page=True)

        # The queue table's paused column; the queue page's consumers, as the CLI counts them.
        page.click("nav >> text=Queues")
        qrow = page.locator('#queues tr[data-node="n1"][data-queue="ops.q"]')
        expect(qrow.locator("td.paused")).to_have_text("no")
        [q] = [x for x in cli("queue", "list", "--url", url) if x["queue"] == "ops.q"]
        qrow.locator("a", has_text="ops.q").click()
        expect(page.locator("#consumers tbody tr")).to_have_count(int(q["consumers"]))
        expect(page.locator("#consumers td.delivering")).to_have_text(q["delivering"])

        # A bad selector is said beside the filter box; the page stays.
        page.fill("form.filter input[name=filter]", "n = = 1")
        page.click("form.filter button")
        expect(page.locator("#filter-error")).to_be_visible()
        expect(page.locator("#consumers")).to_be_visible()
        expect(page.locator("#message-count")).to_have_text(q["messages"])
        page.screenshot(path=str(ARTIFACTS / "ops-2-bad-filter.png"), full_page=True)

        # Move with a limit: two of the waiting messages.
        page.fill("form[action$='/move'] input[name=to_queue]", "ops.dst")
        page.fill("#move-limit", "2")
        page.click("form[action$='/move'] button[type=submit]")
        expect(page.locator("#operation")).to_contain_text("2 / 2 — done", timeout=20_000)
        moved = {x["queue"]: x for x in cli("queue", "list", "--url", url)}
        assert moved["ops.dst"]["messages"] == "2", moved["ops.dst"]

        # Close the connection, confirmed first: the client's sessions fail, the CLI no longer lists it.
        page.click("nav >> text=Connections")
        page.locator(f'#connections tr[data-id="{ours["id"]}"] button.close').click()
        expect(page.locator(".flash")).to_contain_text(f"connection {ours['id']} on n1 closed (2 sessions)")
        assert dialogs and "Close connection" in dialogs[-1]
        assert all(c["id"] != ours["id"] for c in cli("connection", "list", "--url", url))
        expect(page.locator(f'#connections tr[data-id="{ours["id"]}"]')).to_have_count(0)

        # Purge asks first: dismissed, nothing happens; accepted, the queue empties.
        page.goto(console + "nodes/n1/queues/ops.q")
        waiting = {x["queue"]: x for x in cli("queue", "list", "--url", url)}["ops.q"]["messages"]
        assert waiting == "3"  # 5 sent, 2 moved; the closed session's delivery came back
        answer["accept"] = False
        page.click("#purge")
        expect(page.locator("#message-count")).to_have_text("3")
        assert "Purge queue ops.q" in dialogs[-1]
        answer["accept"] = True
        page.click("#purge")
        expect(page.locator(".flash")).to_contain_text("purged 3 messages")
        assert {x["queue"]: x for x in cli("queue", "list", "--url", url)}["ops.q"]["messages"] == "0"

        # An internal store-and-forward queue's page offers no delete; the node shows memory in units.
        page.goto(console + f"nodes/n1/queues/{internal[0]}")
        expect(page.locator("#purge")).to_be_visible()
        expect(page.locator("#delete")).to_have_count(0)
        page.goto(console + "nodes/n1")
        expect(page.locator("#memory")).to_have_text(re.compile(r"^\d+(\.\d)? (B|KiB|MiB|GiB) of \d+(\.\d)? (B|KiB|MiB|GiB)"))
        page.screenshot(path=str(ARTIFACTS / "ops-3-node-memory.png"), full_page=True)

    try:
        await asyncio.to_thread(browser_session, console, steps)
        with pytest.raises(MeshMQError):
            await consumer.receive(5)
    finally:
        await client.close()
    async with httpx.AsyncClient(base_url=state.gateway.endpoint, timeout=30) as http:
        r = await http.post("/api/v1/auth/token", json={"username": "admin", "password": "admin"})
        http.headers["Authorization"] = f"Bearer {r.json()['token']}"
        r = await http.delete(f"/api/v1/nodes/n1/queues/{internal[0]}")
        assert r.status_code == 409 and "internal queue" in r.json()["detail"], r.text
