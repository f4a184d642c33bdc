"""A node killed with kill -9 keeps showing what it last showed: the REST API
and the console (Playwright with Debian's chromium) list it as down since a
time, in words, with its last known info, and its queues as unreachable with
their last counts; the surviving routers keep their bridge series to it at 0
after its discovery lease lapses (docs/gateway.md, "A node down")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from meshmq.client import connect
from meshmq.launcher import LocalCluster, load_cluster_spec
from tests.cluster.test_console import ARTIFACTS, SYMMETRIC_3
from tests.fixtures.browser import CHROMIUM, browser_session
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration

STRANDED = 150


async def _api(client: httpx.AsyncClient, path: str):
    resp = await client.get(path)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _samples(text: str, name: str) -> list:
    return [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == name]


async def test_a_killed_node_keeps_its_last_state_and_its_queues_show_unreachable(launched):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cluster = LocalCluster(load_cluster_spec(SYMMETRIC_3).with_free_ports(), launched.run_dir())
    state = await cluster.up()
    gateway = state.gateway.endpoint
    n1, n3 = state.node("n1"), state.node("n3")
    async with await connect(f"{n3.url}?useTopologyForLoadBalancing=false") as conn:
        p = await (await conn.session()).create_producer("down.stranded")
        for i in range(STRANDED):
            await p.send_async(b"m%d" % i, routing_type="anycast")
        await p.flush()

    async with httpx.AsyncClient(base_url=gateway, timeout=20) as client:
        token = (await client.post("/api/v1/auth/token", json={"username": "admin", "password": "admin"})).json()
        client.headers["Authorization"] = f"Bearer {token['token']}"
        before = {n["name"]: n for n in await _api(client, "/api/v1/nodes")}
        assert before["n3"]["up"] and before["n3"]["status"] == "up"
        queues = await _api(client, "/api/v1/queues?search=down.stranded")
        assert [(q["node"], q["message_count"], q["reachable"]) for q in queues] == [("n3", STRANDED, True)]
        await _api(client, "/api/v1/cluster")  # the gateway sees n3's links once

        await cluster.kill("n3")

        async def n3_down():
            nodes = {n["name"]: n for n in await _api(client, "/api/v1/nodes")}
            return nodes["n3"] if not nodes["n3"]["up"] else None

        down = await eventually(n3_down, 30, "the gateway to find n3 down")
        assert down["stale"] and down["status"].startswith("down since ") and down["status"].endswith(" ago)")
        assert down["problem"]  # the raw error, kept as the detail
        for kept in ("node_id", "version", "epoch", "started_at", "journal", "global_max_size"):
            assert down[kept] == before["n3"][kept], kept
        assert down["uptime_s"] == 0 and down["last_seen"] > 0 and down["down_since"] >= down["last_seen"]
        queues = await _api(client, "/api/v1/queues?search=down.stranded")
        assert [(q["node"], q["message_count"], q["reachable"]) for q in queues] == [("n3", STRANDED, False)]
        detail = await _api(client, "/api/v1/nodes/n3")
        assert detail["node"]["stale"] and [q["name"] for q in detail["queues"] if q["name"] == "down.stranded"]
        assert all(b["stale"] for b in detail["bridges"]) and detail["bridges"]

        # Past discovery's refresh-timeout n3 leaves the group: n1's bridge to it is kept, departed,
        # and its series stay, at 0.
        async with await connect(f"{n1.url}?useTopologyForLoadBalancing=false") as conn:
            async def departed():
                st = await conn.admin.cluster_state()
                gone = [b for b in st.bridges if b.endpoint == n3.endpoint and b.state == "departed"]
                return gone or None

            await eventually(departed, 60, "n1's bridge to n3 to be marked departed")
        text = (await client.get(n1.metrics)).text
        connected = [s for s in _samples(text, "meshmq_bridge_connected") if s.labels["endpoint"] == n3.endpoint]
        assert [s.value for s in connected] == [0.0]
        # The general family too: n1's two cluster links, to n2 (up) and to n3 (down).
        links = [s.value for s in _samples(text, "meshmq_link_connected") if s.labels["kind"] == "cluster"]
        assert sorted(links) == [0.0, 1.0]

    def steps(page) -> None:
        from playwright.sync_api import expect

        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", "admin")
        page.click("form.login button[type=submit]")
        row = page.locator('#nodes tr[data-node="n3"]')
        expect(row).to_have_class("down stale")
        expect(row.locator("td.state")).to_contain_text("down since")
        expect(row.locator("td.state")).to_contain_text("ago)")
        page.screenshot(path=str(ARTIFACTS / "down-1-overview.png"), full_page=True)
        page.click("text=Queues")
        q = page.locator('#queues tr[data-node="n3"][data-queue="down.stranded"]')
        expect(q).to_have_class("unreachable")
        expect(q.locator("td.count")).to_have_text(str(STRANDED))
        expect(q).to_contain_text("unreachable")
        page.screenshot(path=str(ARTIFACTS / "down-2-queues.png"), full_page=True)
        page.goto(gateway + "/nodes/n3")
        expect(page.locator("#stale")).to_contain_text("down since")

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed (scripts/setup.sh --test installs it)"
    await asyncio.to_thread(browser_session, gateway + "/", steps)
