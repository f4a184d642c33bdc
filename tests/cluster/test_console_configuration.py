"""The console's address page, test-message form, cluster connections page and
Verify page in a real browser (Playwright driving Debian's chromium) against
the launcher's 3-node cluster and its gateway, each number checked against
the `meshmq` CLI or the REST API: the settings in force for an address and
the match each came from (`meshmq address settings`), a test message sent
from the form and found by the CLI and the queue page, a bad properties line
said in the banner, every cluster connection parameter (`meshmq cluster
connections`), and a `meshmq verify` run with a node paused (SIGSTOP/SIGCONT)
and etcd restarted: it passes, and the Verify page shows the counts and
faults `GET /api/v1/verify/runs/last` gives. Screenshots go to
test-artifacts/console/."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import httpx
import pytest

from meshmq.client import connect
from meshmq.launcher import LocalCluster, load_cluster_spec
from tests.cluster.test_console import ARTIFACTS, ROOT, SYMMETRIC_3
from tests.fixtures.browser import browser_session
from tests.cluster.test_console_operations import cli

pytestmark = pytest.mark.integration


def table(*args: str) -> list[list[str]]:
    """A CLI command's piped output, one list of tab-separated fields per line."""
    out = subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return [line.split("\t") for line in out.stdout.splitlines()]


def page_value(value_json: str) -> str:
    """How the console writes a value the CLI prints as JSON."""
    return "none" if value_json == "null" else value_json


async def test_the_console_shows_settings_links_and_the_last_verify_run_as_the_cli_and_api_do(launched, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    run = launched.run_dir()
    state = await LocalCluster(load_cluster_spec(SYMMETRIC_3).with_free_ports(), run).up()
    console = state.gateway.endpoint + "/"
    url = f"meshmq://{state.node('n1').endpoint}?useTopologyForLoadBalancing=false"
    async with await connect(url) as conn:
        await conn.admin.create_queue("cfg.orders", routing_type="anycast")
    settings = table("address", "settings", "cfg.orders", "--url", url)
    assert settings[0][0].startswith("address cfg.orders: matched by #")
    settings_rows = settings[2:]
    link_rows = table("cluster", "connections", "--url", url)[1:]
    assert {(k, n) for k, n, *_ in link_rows} == {("cluster", "symmetric-3")}

    def steps(page) -> None:
        from playwright.sync_api import expect

        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", "admin")
        page.click("form.login button[type=submit]")

        # The address page: each setting's value and where it came from, as the CLI prints them.
        page.goto(console + "nodes/n1")
        page.locator("#addresses a", has_text="cfg.orders").click()
        expect(page.locator("h1")).to_contain_text("Address cfg.orders")
        expect(page.locator("#matched")).to_contain_text("#")
        for name, value, source in settings_rows:
            row = page.locator(f'#settings tr[data-name="{name}"]')
            expect(row.locator("td.value")).to_have_text(page_value(value))
            expect(row.locator("td.match")).to_have_text(source)
        page.screenshot(path=str(ARTIFACTS / "config-1-address-settings.png"), full_page=True)

        # A test message from the form: the banner says where it went; the CLI and the queue page find it.
        page.fill("#send-message textarea[name=body]", "from the browser")
        page.fill("#send-message textarea[name=properties]", "region=emea\nn=3")
        page.select_option("#send-message select[name=priority]", "6")
        page.click("#send-message button[type=submit]")
        expect(page.locator(".flash")).to_contain_text("sent to cfg.orders: stored in cfg.orders")
        [q] = [x for x in cli("queue", "list", "--url", url) if x["queue"] == "cfg.orders"]
        assert q["messages"] == "1", q
        page.screenshot(path=str(ARTIFACTS / "config-2-test-message.png"), full_page=True)
        page.goto(console + "nodes/n1/queues/cfg.orders")
        row = page.locator("#messages tbody tr").first
        expect(row).to_contain_text("region=emea")
        expect(row).to_contain_text("n=3")
        expect(row.locator("td").nth(3)).to_have_text("6")

        # A properties line without `=`: said in the banner, nothing sent.
        page.goto(console + "nodes/n1/addresses/cfg.orders")
        page.fill("#send-message textarea[name=properties]", "oops")
        page.click("#send-message button[type=submit]")
        expect(page.locator(".error")).to_contain_text("properties line 1: expected name=value")
        [q] = [x for x in cli("queue", "list", "--url", url) if x["queue"] == "cfg.orders"]
        assert q["messages"] == "1", q

        # Cluster connections: every parameter as the CLI prints it, and n1's links to the other two.
        page.click("nav >> text=Cluster connections")
        article = page.locator('article.link-config[data-node="n1"][data-name="symmetric-3"]')
        for _, _, key, value, source in link_rows:
            row = article.locator(f'table.parameters tr[data-key="{key}"]')
            expect(row.locator("td.value code")).to_have_text(page_value(value))
            expect(row.locator("td").nth(2)).to_have_text(source)
        expect(article.locator("table.links tbody tr")).to_have_count(2)
        page.screenshot(path=str(ARTIFACTS / "config-3-cluster-connections.png"), full_page=True)

    await asyncio.to_thread(browser_session, console, steps)

    # meshmq verify with a node paused and etcd restarted: it passes and posts its report.
    report_file = tmp_path / "report.json"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "meshmq.cli.main", "verify", "--run-dir", str(run), "--duration", "5s",
         "--pause-node", "n3", "--restart-etcd", "--every", "2s", "--down-for", "0.5s", "--producers", "2",
         "--rate", "100", "--drain-timeout", "60s", "--report", str(report_file)],
        capture_output=True, text=True, timeout=180, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_file.read_text())
    counts = report["counts"]
    assert counts["lost"] == 0 and counts["duplicated"] == 0 and counts["confirmed"] > 0
    faults = {(f["fault"], f["target"], f["action"]) for f in report["faults"]}
    assert faults == {("SIGSTOP", "n3", "inject"), ("SIGSTOP", "n3", "heal"),
                      ("restart etcd", "etcd", "inject"), ("restart etcd", "etcd", "heal")}
    assert not [f for f in report["faults"] if f["outcome"].startswith("failed")], report["faults"]
    async with httpx.AsyncClient(base_url=state.gateway.endpoint, timeout=10) as http:
        token = (await http.post("/api/v1/auth/token", json={"username": "admin", "password": "admin"})).json()
        last = (await http.get("/api/v1/verify/runs/last",
                               headers={"Authorization": f"Bearer {token['token']}"})).json()
    assert last["run_id"] == report["run_id"] and last["counts"] == counts

    def verify_steps(page) -> None:
        from playwright.sync_api import expect

        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", "admin")
        page.click("form.login button[type=submit]")
        page.click("nav >> text=Verify")
        expect(page.locator("#last-run h2")).to_contain_text(last["run_id"])
        expect(page.locator("#verdict")).to_have_text("passed")
        for name, value in last["counts"].items():
            expect(page.locator(f"#count-{name.replace('_', '-')}")).to_have_text(str(value))
        expect(page.locator("#faults tbody tr")).to_have_count(len(last["faults"]))
        page.screenshot(path=str(ARTIFACTS / "config-4-verify.png"), full_page=True)

    await asyncio.to_thread(browser_session, console, verify_steps)
