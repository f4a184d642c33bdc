"""Rates and charts on a real router: known traffic, then the gateway's REST
rates and its console charts count what was sent, delivered and acknowledged,
as the CLI's counts say; a router restarted is a reset, never a negative rate.
The gateway samples every 200 ms here (gateway.history-interval)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time

import pytest

from meshmq.client import connect
from services.gateway.auth import SESSION_COOKIE
from tests.fixtures.nodes import Nodes, ServiceProcess, eventually, free_port
from tests.gateway.conftest import Stack, gateway_config, security_yaml

pytestmark = pytest.mark.integration

# 40 sent, 25 taken and acknowledged; the consumer's window may have been handed more of them
# ("out": delivered), which go back to the queue when it closes.
SENT, TAKEN = 40, 25


@pytest.fixture
def fast_stack(tmp_path):
    nodes = Nodes(tmp_path)
    acceptor = f"acceptors: [{{name: grpc, host: 127.0.0.1, port: {free_port()}}}]\n"
    router = nodes.router("node", extra=acceptor + security_yaml())
    config = gateway_config(router.endpoint).replace(
        "  static-connectors: [node]\n",
        "  static-connectors: [node]\n  history-interval: 200\n  history-length: 120000\n")
    gateway = ServiceProcess(tmp_path, "gateway", "gateway", config)
    nodes.started.append(gateway)
    gateway.start()
    s = Stack(nodes, router, gateway)
    yield s
    s.close()
    nodes.stop_all()


def _cli_counts(stack, queue: str) -> dict[str, int]:
    """The queue's row of `meshmq queue list`: messages, added, delivered, acked."""
    run = subprocess.run([sys.executable, "-m", "meshmq.cli.main", "queue", "list", "--url", stack.sdk_url],
                         capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert run.returncode == 0, run.stderr
    header, *rows = [line.split("\t") for line in run.stdout.splitlines()]
    row = dict(zip(header, next(r for r in rows if r[0] == queue)))
    return {k: int(row[k]) for k in ("messages", "added", "delivered", "acked")}


def _totals(view: dict) -> dict[str, int]:
    return {s["name"]: s["total"] for s in view["series"]}


async def test_rates_count_the_traffic_sent_and_a_restart_is_a_reset(fast_stack):
    stack = fast_stack
    admin = stack.client("admin")  # logged in: the sampler calls with this identity's credentials
    # A node's first answered sample is where its rates start; the samples before the token's
    # first use are gaps (security is on): the traffic waits until the node has answered one.
    await eventually(lambda: admin.get("/api/v1/nodes/node/rates").status_code == 200, 30,
                     "the sampler to have seen the node answer")
    assert admin.post("/api/v1/nodes/node/queues", json={"name": "rates.q"}).status_code == 201

    async with await connect(stack.sdk_url) as conn:
        session = await conn.session()
        producer = await session.create_producer("rates.q")
        for i in range(SENT):
            await producer.send(b"m%d" % i)
        consumer = await session.create_consumer("rates.q")
        for _ in range(TAKEN):
            msg = await consumer.receive(timeout=10)
            assert msg is not None
            msg.ack()
        await consumer.close()

    # The router's own counts, once the acknowledgements are in: every message added, 25 acknowledged,
    # and delivered at least the 25 (the consumer's window may have taken up to all 40).
    cli = await eventually(lambda: (c := _cli_counts(stack, "rates.q"))["acked"] == TAKEN and c, 30, "the acks")
    assert (cli["added"], cli["messages"]) == (SENT, SENT - TAKEN) and TAKEN <= cli["delivered"] <= SENT

    def settled():
        r = admin.get("/api/v1/nodes/node/queues/rates.q/rates")
        want = {"in": cli["added"], "out": cli["delivered"], "acked": cli["acked"]}
        return r.status_code == 200 and _totals(r.json()) == want and r.json()

    view = await eventually(settled, 30, "the queue's rates to count what the CLI counts")
    assert view["interval_ms"] == 200 and view["length_ms"] == 120000
    assert all(s["unit"] == "msg/s" for s in view["series"])
    assert len(view["times"]) == len(view["series"][0]["rates"])
    # The rates add up to the counts: each interval's msg/s times its length.
    spans = [b - a for a, b in zip(view["times"], view["times"][1:])]
    in_rates = view["series"][0]["rates"][1:]
    assert sum(r * s for r, s in zip(in_rates, spans) if r) == pytest.approx(SENT, rel=0.05)

    # The node's and the cluster's rates include the queue's.
    overview = admin.get("/api/v1/rates").json()
    assert _totals(overview["cluster"])["in"] >= SENT
    assert [n["node"] for n in overview["nodes"]] == ["node"]
    assert _totals(admin.get("/api/v1/nodes/node/rates").json())["in"] >= SENT
    assert admin.get("/api/v1/nodes/nope/rates").status_code == 404
    assert admin.get("/api/v1/nodes/node/queues/nope/rates").status_code == 404

    # The console's chart of the queue shows the same numbers beside it.
    browser = stack.client()
    browser.cookies.set(SESSION_COOKIE, admin.headers["Authorization"].split()[1])
    fragment = browser.get("/console/fragments/nodes/node/queues/rates.q/rates")
    assert fragment.status_code == 200
    assert "<svg" in fragment.text and ">msg/s</text>" in fragment.text
    totals = dict(re.findall(r'<tr data-series="(\w+)"><th>\w+</th><td class="current">[^<]*</td>'
                             r'<td class="total">(\d+)</td>', fragment.text))
    assert totals == {"in": str(cli["added"]), "out": str(cli["delivered"]), "acked": str(cli["acked"])}
    assert stack.client().get("/console/fragments/rates").status_code == 401

    # A restart resets the node's counters: a gap while it is down, then rates again, never negative.
    stack.router.stop()
    await eventually(lambda: admin.get("/api/v1/rates").json()["sampler"]["problem"].startswith("node:"), 30,
                     "the sampler to find the router down")
    stack.router.start()
    async with await connect(stack.sdk_url) as conn:
        producer = await (await conn.session()).create_producer("rates.q")
        for i in range(5):
            await producer.send(b"after %d" % i)

    def after_restart():
        v = admin.get("/api/v1/nodes/node/queues/rates.q/rates").json()
        return _totals(v)["in"] >= SENT + 5 and v

    view = await eventually(after_restart, 60, "rates after the restart")
    for series in view["series"]:
        assert all(r is None or r >= 0 for r in series["rates"]), series
    assert None in view["series"][0]["rates"], "no gap while the router was down"


async def test_a_sampler_user_keeps_the_history_while_nobody_is_logged_in(tmp_path):
    """gateway.sampler-user: the sampler calls as that view-only user, so traffic
    while no one has a console session open is in the history when someone looks."""
    nodes = Nodes(tmp_path)
    try:
        acceptor = f"acceptors: [{{name: grpc, host: 127.0.0.1, port: {free_port()}}}]\n"
        router = nodes.router("node", extra=acceptor + security_yaml())
        config = gateway_config(router.endpoint).replace(
            "  static-connectors: [node]\n",
            "  static-connectors: [node]\n  history-interval: 200\n  history-length: 120000\n"
            "  sampler-user: viewer\n  sampler-password: s3cret-viewer\n")
        gateway = ServiceProcess(tmp_path, "gateway", "gateway", config)
        nodes.started.append(gateway)
        gateway.start()
        stack = Stack(nodes, router, gateway)
        # Nobody logs in to the gateway until the traffic is over: 40 messages over about 2 s,
        # a stretch of 200 ms samples.
        async with await connect(stack.sdk_url) as conn:
            await conn.admin.create_queue("unwatched.q")
            producer = await (await conn.session()).create_producer("unwatched.q")
            for i in range(SENT):
                await producer.send(b"m%d" % i)
                await asyncio.sleep(0.05)
        await eventually(lambda: _cli_counts(stack, "unwatched.q")["added"] == SENT, 30, "the sends")
        logged_in_at = time.time()
        viewer = stack.client("viewer")
        status = viewer.get("/api/v1/rates").json()["sampler"]
        assert status["problem"] == "" and status["samples"] > 3
        view = viewer.get("/api/v1/nodes/node/queues/unwatched.q/rates").json()
        before = [r for t, r in zip(view["times"], view["series"][0]["rates"]) if t < logged_in_at]
        # Sampled while nobody was logged in: rates, not gaps, and messages counted in.
        assert before and any(r for r in before if r is not None), view
        assert 0 < _totals(view)["in"] <= SENT
        stack.close()
    finally:
        nodes.stop_all()
