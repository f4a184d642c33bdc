"""The web console in a real browser (Playwright driving Debian's chromium)
against the launcher's 3-node symmetric cluster and its gateway: log in, see
the topology, create a queue, watch its count change when the SDK sends, purge
it. Screenshots of each step go to test-artifacts/console/ (kept after the run)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from meshmq.client import connect
from meshmq.launcher import LocalCluster, load_cluster_spec
from tests.fixtures.browser import CHROMIUM, browser_session

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SYMMETRIC_3 = ROOT / "deploy" / "local" / "symmetric-3.yaml"
ARTIFACTS = ROOT / "test-artifacts" / "console"
async def test_the_console_shows_the_cluster_and_operates_a_queue(launched):
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed (scripts/setup.sh --test installs it)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    state = await LocalCluster(load_cluster_spec(SYMMETRIC_3).with_free_ports(), launched.run_dir()).up()
    console = state.gateway.endpoint + "/"
    n1 = state.node("n1").endpoint
    sent = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def send_one() -> None:
        async with await connect(f"meshmq://{n1}?useTopologyForLoadBalancing=false") as conn:
            producer = await (await conn.session()).create_producer("console.orders")
            await producer.send(b'{"order": 1}', properties={"region": "eu"})

    def steps(page) -> None:
        from playwright.sync_api import expect

        # Log in (the example runs in dev mode: admin / admin).
        expect(page).to_have_url(console + "login?next=%2F")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", "admin")
        page.click("form.login button[type=submit]")
        # The topology: three live nodes, all up, linked by connected bridges both ways.
        expect(page.locator("#topology-graph g.node.live.up")).to_have_count(3)
        expect(page.locator("#topology-graph line.bridge")).to_have_count(6)
        expect(page.locator("#nodes tbody tr.up")).to_have_count(3)
        page.screenshot(path=str(ARTIFACTS / "1-topology.png"), full_page=True)

        # Create a queue on n1 through the form.
        page.click("text=Queues")
        page.select_option("#create-queue select[name=node]", "n1")
        page.fill("#create-queue input[name=name]", "console.orders")
        page.click("#create-queue button[type=submit]")
        expect(page.locator(".flash")).to_contain_text("queue console.orders created on n1")
        row = page.locator('#queues tr[data-node="n1"][data-queue="console.orders"]')
        expect(row.locator("td.count")).to_have_text("0")
        page.screenshot(path=str(ARTIFACTS / "2-queue-created.png"), full_page=True)

        # A message sent through the SDK shows up without reloading (the table refreshes itself).
        asyncio.run_coroutine_threadsafe(send_one(), loop).result(30)
        expect(row.locator("td.count")).to_have_text("1")
        page.screenshot(path=str(ARTIFACTS / "3-count-changed.png"), full_page=True)

        # Its page browses the message; purging empties the queue.
        row.locator("a", has_text="console.orders").click()
        expect(page.locator("#messages tbody tr")).to_have_count(1)
        expect(page.locator("#messages")).to_contain_text('{"order": 1}')
        expect(page.locator("#messages")).to_contain_text("region=eu")
        page.screenshot(path=str(ARTIFACTS / "4-browse.png"), full_page=True)
        # Purge asks first (the browser's confirm, accepted here).
        page.once("dialog", lambda d: d.accept())
        page.click("#purge")
        expect(page.locator(".flash")).to_contain_text("purged 1 messages")
        expect(page.locator("#message-count")).to_have_text("0")
        page.screenshot(path=str(ARTIFACTS / "5-purged.png"), full_page=True)
        sent.set()

    await asyncio.to_thread(browser_session, console, steps)
    assert sent.is_set()
    # What the browser did is what the node holds.
    async with await connect(f"meshmq://{n1}?useTopologyForLoadBalancing=false") as conn:
        queue = await conn.admin.queue("console.orders")
    assert queue is not None and (queue.message_count, queue.messages_added) == (0, 1)
