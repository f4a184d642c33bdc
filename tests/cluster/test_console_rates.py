"""Rates and charts in a real browser (Playwright driving Debian's chromium)
against the launcher's 3-node symmetric cluster, its gateway sampling every
500 ms: messages sent on n1 to a consumer on n2 cross the link n1 -> n2; the
overview, node and queue pages draw them, with numbers that match the CLI's
counts and the REST rates. Its overview screenshot (test-artifacts/console/rates-overview.png)
is what docs/images/console-rates.png shows; copy it there by hand when the console changes.
And /api/docs renders its operations with every request off the gateway refused."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from meshmq.client import connect
from meshmq.launcher import LocalCluster, load_cluster_spec
from tests.cluster.test_console import ARTIFACTS, SYMMETRIC_3
from tests.fixtures.browser import CHROMIUM, browser_session
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration

ADDRESS = "rates.orders"
SENT = 120


def _cli_queue(url: str, queue: str) -> dict[str, str]:
    run = subprocess.run([sys.executable, "-m", "meshmq.cli.main", "queue", "list", "--url", url],
                         capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert run.returncode == 0, run.stderr
    header, *rows = [line.split("\t") for line in run.stdout.splitlines()]
    return dict(zip(header, next(r for r in rows if r[0] == queue)))


def _totals(view: dict) -> dict[str, int]:
    return {s["name"]: s["total"] for s in view["series"]}


async def test_the_console_charts_the_rates_and_the_api_docs_work_offline(launched):
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed (scripts/setup.sh --test installs it)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    spec = load_cluster_spec(SYMMETRIC_3).with_free_ports()
    spec = spec.model_copy(update={"gateway": spec.gateway.model_copy(update={"history_interval": 500})})
    state = await LocalCluster(spec, launched.run_dir()).up()
    base = state.gateway.endpoint
    n1, n2 = (f"meshmq://{state.node(n).endpoint}?useTopologyForLoadBalancing=false" for n in ("n1", "n2"))

    with httpx.Client(base_url=base, timeout=30) as api:
        token = api.post("/api/v1/auth/token", json={"username": "admin", "password": "admin"}).json()["token"]
        api.headers["Authorization"] = f"Bearer {token}"
        # A node's first answered sample is where its rates start from (its counters then may be
        # hours old): the traffic comes after n1 and n2 have answered one (the sampler uses the
        # token's credentials from its first use, so the samples before it are gaps).
        await eventually(lambda: all(api.get(f"/api/v1/nodes/{n}/rates").status_code == 200 for n in ("n1", "n2")),
                         30, "the sampler to have seen n1 and n2 answer")

        # A queue on n2 (made here, so it stays when its consumer leaves), a consumer on it,
        # messages sent on n1 over a few seconds: they cross the link n1 -> n2.
        assert api.post("/api/v1/nodes/n2/queues", json={"name": ADDRESS}).status_code == 201
        async with await connect(n2) as c2, await connect(n1) as c1:
            consumer = await (await c2.session()).create_consumer(ADDRESS)
            async def knows_the_consumer():
                state = await c1.admin.cluster_state()
                return any(rb.queue == ADDRESS and rb.consumer_filters for rb in state.remote_bindings)

            await eventually(knows_the_consumer, 30, "n1 to learn of n2's consumer")
            producer = await (await c1.session()).create_producer(ADDRESS)
            for i in range(SENT):
                await producer.send(b"order %d" % i, routing_type="anycast")
                if i % 10 == 9:
                    await asyncio.sleep(0.25)  # pacing: the traffic spans several samples
            for _ in range(SENT):
                msg = await consumer.receive(timeout=20)
                assert msg is not None
                msg.ack()

            seen: list = []

            def counted():
                q = api.get(f"/api/v1/nodes/n2/queues/{ADDRESS}/rates")
                seen[:] = [q.status_code, _totals(q.json()) if q.status_code == 200 else q.text,
                           api.get("/api/v1/rates").json()["sampler"],
                           # each interval's "in" (None: n2 did not answer then), to see where a count went
                           q.json()["series"][0]["rates"] if q.status_code == 200 else []]
                return q.status_code == 200 and _totals(q.json()) == {"in": SENT, "out": SENT, "acked": SENT}

            try:
                await eventually(counted, 30, "n2's queue rates to count every message")
            except TimeoutError:
                raise AssertionError(f"n2's queue rates after 30 s: {seen}; the CLI: {_cli_queue(n2, ADDRESS)}") from None
            cli = _cli_queue(n2, ADDRESS)
            assert (cli["added"], cli["delivered"], cli["acked"]) == (str(SENT),) * 3

            links_seen: list = []

            def link_counted():
                links = api.get("/api/v1/nodes/n1/links/rates").json()
                links_seen[:] = [(v["link"], _totals(v)) for v in links]
                to_n2 = [v for v in links if v["link"].endswith("-> n2")]
                return len(to_n2) == 1 and _totals(to_n2[0])["forwarded"] == SENT

            try:
                await eventually(link_counted, 30, "the link n1 -> n2 to count every message forwarded")
            except TimeoutError:
                raise AssertionError(f"n1's links after 30 s: {links_seen} ({SENT} sent)") from None

        def steps(page) -> None:
            from playwright.sync_api import expect

            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", "admin")
            page.click("form.login button[type=submit]")
            # The overview: the cluster's chart, one per node and one per link (3 nodes, 6 links).
            rates = page.locator("#rates")
            expect(rates.locator("figure.rate[data-kind=cluster] svg.rate-chart polyline").first).to_be_visible()
            expect(rates.locator("figure.rate[data-kind=node]")).to_have_count(3)
            expect(rates.locator("figure.rate[data-kind=link]")).to_have_count(6)
            expect(rates.locator("figure.rate[data-kind=cluster] svg text", has_text="msg/s").first).to_be_visible()
            link = rates.locator('figure.rate[data-kind=link][data-node=n1]', has_text="-> n2")
            expect(link.locator('tr[data-series=forwarded] td.total')).to_have_text(str(SENT))
            page.screenshot(path=str(ARTIFACTS / "rates-overview.png"), full_page=True)
            # The queue's page: the same numbers as the CLI.
            page.goto(f"{base}/nodes/n2/queues/{ADDRESS}")
            figure = page.locator("#rates figure.rate[data-kind=queue]")
            for series, column in (("in", "added"), ("out", "delivered"), ("acked", "acked")):
                expect(figure.locator(f"tr[data-series={series}] td.total")).to_have_text(cli[column])
            page.screenshot(path=str(ARTIFACTS / "rates-queue.png"), full_page=True)
            # The node's page: its chart and its links'.
            page.goto(f"{base}/nodes/n1")
            expect(page.locator("#rates figure.rate[data-kind=node] svg.rate-chart")).to_have_count(1)
            expect(page.locator("#rates figure.rate[data-kind=link]")).to_have_count(2)

            # /api/docs with nothing but the gateway reachable: Swagger UI comes from the gateway.
            refused = []

            def only_the_gateway(route) -> None:
                if route.request.url.startswith(base):
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            page.route("**/*", only_the_gateway)
            page.goto(f"{base}/api/docs")
            expect(page.locator(".opblock-summary-path", has_text="/api/v1/rates").first).to_be_visible()
            assert page.locator(".opblock").count() > 20
            page.screenshot(path=str(ARTIFACTS / "api-docs-offline.png"), full_page=False)
            assert refused == [], refused

        await asyncio.to_thread(browser_session, base + "/", steps)
    assert (ARTIFACTS / "rates-overview.png").stat().st_size > 10_000
