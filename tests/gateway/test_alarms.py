"""A node in disk alarm, seen through the gateway: its alarm fields in
GET /api/v1/nodes and the console's banner (Playwright with Debian's
chromium), gone once the limit is raised (docs/gateway.md, docs/broker.md
"Alarms")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from meshmq.client import connect
from tests.cluster.test_console import ARTIFACTS
from tests.fixtures.browser import CHROMIUM, browser_session
from tests.fixtures.nodes import Nodes, ServiceProcess, eventually, free_port
from tests.gateway.conftest import USERS, gateway_config, security_yaml

pytestmark = pytest.mark.integration

PASSWORD = dict((u, p) for u, p, _ in USERS)["admin"]


async def test_a_node_in_disk_alarm_shows_in_rest_and_as_a_console_banner_until_the_limit_is_raised(tmp_path):
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed (scripts/setup.sh --test installs it)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    nodes = Nodes(tmp_path)
    acceptor = f"acceptors: [{{name: grpc, host: 127.0.0.1, port: {free_port()}}}]\n"
    router = nodes.router("node", extra=acceptor + "max-disk-usage: 0\ndisk-scan-period: 200\n" + security_yaml())
    gateway = ServiceProcess(tmp_path, "gateway", "gateway", gateway_config(router.endpoint))
    nodes.started.append(gateway)
    gateway.start()
    try:
        async with httpx.AsyncClient(base_url=gateway.endpoint, timeout=20) as client:
            token = (await client.post("/api/v1/auth/token",
                                       json={"username": "admin", "password": PASSWORD})).json()["token"]
            client.headers["Authorization"] = f"Bearer {token}"

            async def alarmed():
                [n] = (await client.get("/api/v1/nodes")).json()
                return n if n["disk_alarm"] else None

            node = await eventually(alarmed, 15, "the node's disk alarm in the REST API")
            assert node["max_disk_usage"] == 0 and "above max-disk-usage 0%" in node["disk_alarm_reason"]
            assert 0 < node["disk_used_percent"] < 100 and node["disk_free_bytes"] > 0 and node["journal_bytes"] > 0
            assert node["memory_alarm"] is False
            # The gateway's own metrics carry the `node` label (its config name) and take the name filter.
            scraped = await client.get("/metrics", params=[("name[]", "meshmq_gateway_sessions")],
                                       auth=("admin", PASSWORD), headers={"Authorization": ""})
            assert scraped.status_code == 200, scraped.text
            samples = [line for line in scraped.text.splitlines() if line and not line.startswith("#")]
            assert samples and all(line.startswith('meshmq_gateway_sessions{node="gateway"}') for line in samples)

        raised = asyncio.Event()
        loop = asyncio.get_running_loop()

        async def raise_limit() -> None:
            url = f"meshmq://admin:{PASSWORD}@{router.endpoint}?useTopologyForLoadBalancing=false"
            async with await connect(url) as conn:
                assert not (await conn.admin.set_max_disk_usage(99)).disk_alarm
            raised.set()

        def steps(page) -> None:
            from playwright.sync_api import expect

            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", PASSWORD)
            page.click("form.login button[type=submit]")
            banner = page.locator("#alarms")
            expect(banner).to_contain_text("Node node is in alarm")
            expect(banner).to_contain_text("above max-disk-usage 0%")
            expect(banner).to_contain_text("producers are blocked")
            page.screenshot(path=str(ARTIFACTS / "alarm-1-banner.png"), full_page=True)
            asyncio.run_coroutine_threadsafe(raise_limit(), loop).result(30)
            # The overview's topology refreshes itself: the banner goes without a reload.
            expect(banner).to_have_count(0)
            page.goto(gateway.endpoint + "/nodes/node")
            expect(page.locator("#disk")).to_contain_text("max-disk-usage 99%")

        await asyncio.to_thread(browser_session, gateway.endpoint + "/", steps)
        assert raised.is_set()
    finally:
        nodes.stop_all()
