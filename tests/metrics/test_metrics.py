"""Prometheus /metrics on every service (docs/metrics.md): real processes
scraped over HTTP before and after traffic, checking that the right series
moved by the right amounts and that the output parses."""

from __future__ import annotations

import socket
import threading
import uuid
from pathlib import Path

import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from meshmq.client import connect
from meshmq.config.loader import ConfigError, load_config
from meshmq.config.models import MetricsSettings
from meshmq.discovery import Announcer, GrpcDiscoveryClient, TopologyWatcher
from meshmq.metrics import Histogram, serving
from meshmq.transport import open_channel
from meshmq.v1 import discovery_pb2 as dpb
from meshmq.v1 import ha_coordinator_pb2 as hpb
from meshmq.v1 import ha_coordinator_pb2_grpc as hgrpc
from tests.fixtures.nodes import ServiceProcess, eventually, free_port

METRICS = "metrics: {enabled: true, host: 127.0.0.1, port: 0}\n"
LOAD = 3000


class Scrape:
    """One scrape, parsed: every sample by name and labels."""

    def __init__(self, text: str) -> None:
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.samples = [s for f in self.families.values() for s in f.samples]

    def get(self, name: str, **labels: str) -> float:
        """The one sample named `name` whose labels include `labels`; 0 when there is none."""
        found = [s.value for s in self.samples if s.name == name and labels.items() <= s.labels.items()]
        assert len(found) <= 1, f"{len(found)} samples of {name} with {labels}"
        return found[0] if found else 0.0


async def scrape(url: str, auth: tuple[str, str] | None = None) -> Scrape:
    """The node's metrics; `auth` (a user who may view) when security is on."""
    async with httpx.AsyncClient(timeout=10) as client:
        resp = await client.get(url, auth=auth)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    return Scrape(resp.text)


def own_threads() -> set[threading.Thread]:
    """Threads but the event loop's executor workers (asyncio.to_thread's; they live as long as the loop)."""
    return {t for t in threading.enumerate() if not t.name.startswith("asyncio_")}


def uniq(prefix: str) -> str:
    return f"{prefix}.{uuid.uuid4().hex[:8]}"


# --- config ------------------------------------------------------------------


def test_metrics_config_defaults_and_bad_values_name_the_key(tmp_path: Path) -> None:
    assert MetricsSettings() == MetricsSettings(enabled=False, host="127.0.0.1", port=0)
    path = tmp_path / "node.yaml"
    path.write_text("name: a\nmetrics:\n  enabled: true\n  port: 70000\n")
    with pytest.raises(ConfigError) as bad:
        load_config(path)
    assert str(bad.value).startswith(f"{path}:4: metrics.port: ")
    path.write_text("name: a\nmetrics:\n  enabled: yes-please\n  prot: 9100\n")
    with pytest.raises(ConfigError) as bad:
        load_config(path)
    problems = str(bad.value).splitlines()
    assert f"{path}:4: metrics.prot: unknown key (did you mean 'port'?)" in problems
    assert any(p.startswith(f"{path}:3: metrics.enabled: ") for p in problems)


# --- the shared module -------------------------------------------------------


async def test_an_endpoint_serves_fills_read_on_the_loop_and_stops_without_leaving_a_thread_or_port() -> None:
    threads = own_threads()
    hist = Histogram("meshmq_test_seconds", "A test histogram.", (0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 3.0):
        hist.observe(v)
    seen_on: list[threading.Thread] = []

    def fill(fam) -> None:
        seen_on.append(threading.current_thread())
        fam.counter("meshmq_test_things_total", "Things.", 7, kind="a")
        fam.histogram(hist)

    async with serving(MetricsSettings(enabled=True), service="test", node="n1") as metrics:
        metrics.put("test", fill)
        got = await scrape(metrics.url)
        port = int(metrics.url.rsplit(":", 1)[1].split("/")[0])
    assert seen_on == [threading.main_thread()]  # the loop's thread, not the HTTP server's
    assert got.get("meshmq_test_things_total", node="n1", kind="a") == 7
    assert got.families["meshmq_test_things"].type == "counter"
    assert got.get("meshmq_test_seconds_bucket", le="0.1") == 2  # le is inclusive
    assert got.get("meshmq_test_seconds_bucket", le="1.0") == 3
    assert got.get("meshmq_test_seconds_bucket", le="+Inf") == 4
    assert got.get("meshmq_test_seconds_count") == 4 and got.get("meshmq_test_seconds_sum") == pytest.approx(3.65)
    assert got.get("meshmq_service_info", service="test") == 1
    assert got.get("process_resident_memory_bytes") > 0
    assert own_threads() <= threads
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


async def test_a_disabled_endpoint_listens_nowhere() -> None:
    threads = own_threads()
    async with serving(MetricsSettings(), service="test", node="n1") as metrics:
        assert metrics.url == ""
        assert own_threads() == threads


# --- services ----------------------------------------------------------------

@pytest.mark.integration
async def test_router_metrics_count_exactly_what_went_through_a_queue(nodes) -> None:
    node = nodes.router("metered", extra=METRICS)
    url = node.info["metrics"]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
    q = uniq("metrics.load")
    before = await scrape(url)
    assert before.get("meshmq_service_info", service="router", node="metered") == 1
    assert before.get("meshmq_router_active") == 1
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer(q)
        for i in range(LOAD):
            await p.send_async(b"m%d" % i, routing_type="anycast")
        await p.flush()
        loaded = await scrape(url)
        labels = {"node": "metered", "address": q, "queue": q}
        assert loaded.get("meshmq_queue_messages_added_total", **labels) == LOAD
        assert loaded.get("meshmq_queue_messages", **labels) == LOAD
        assert loaded.get("meshmq_queue_consumers", **labels) == 0
        assert loaded.get("meshmq_address_memory_bytes", address=q) > 0
        # Every stored message went to the journal in some group-commit append, exactly once.
        moved = {name: loaded.get(name) - before.get(name) for name in (
            "meshmq_journal_batch_messages_sum", "meshmq_journal_batch_messages_count",
            "meshmq_confirm_latency_seconds_count", "meshmq_journal_commit_seconds_count",
            "meshmq_journal_transaction_records_sum", "meshmq_journal_transaction_appends_sum",
            "meshmq_journal_transaction_seconds_count", "meshmq_journal_appends_total")}
        assert moved["meshmq_journal_batch_messages_sum"] == LOAD
        assert 1 <= moved["meshmq_journal_batch_messages_count"] <= LOAD
        assert moved["meshmq_confirm_latency_seconds_count"] >= 1
        assert moved["meshmq_journal_commit_seconds_count"] == moved["meshmq_journal_appends_total"] >= 1
        # The embedded journal's own view: the same appends, merged into SQL transactions.
        assert moved["meshmq_journal_transaction_appends_sum"] == moved["meshmq_journal_appends_total"]
        assert moved["meshmq_journal_transaction_records_sum"] >= LOAD
        assert 1 <= moved["meshmq_journal_transaction_seconds_count"] <= moved["meshmq_journal_appends_total"]
        assert loaded.get("meshmq_journal_writer_up") == 1
        assert loaded.get("meshmq_router_sessions") >= 1

        c = await s.create_consumer(q)
        got = 0
        while got < LOAD:
            batch = await c.receive_batch(500, timeout=10)
            assert batch, f"only {got} of {LOAD} messages came back"
            for msg in batch:
                msg.ack()
            got += len(batch)

        async def drained():
            now = await scrape(url)
            return now if now.get("meshmq_queue_messages_acknowledged_total", **labels) == LOAD else None

        consumed = await eventually(drained, 30, "the router to count every acknowledgement")
        assert consumed.get("meshmq_queue_messages", **labels) == 0
        assert consumed.get("meshmq_queue_delivering_messages", **labels) == 0
        assert consumed.get("meshmq_queue_consumers", **labels) == 1
        assert consumed.get("meshmq_queue_messages_added_total", **labels) == LOAD
        assert consumed.get("meshmq_queue_messages_killed_total", **labels) == 0
        assert consumed.get("meshmq_queue_messages_expired_total", **labels) == 0
    for family in ("meshmq_queue_messages_added", "meshmq_journal_batch_messages", "meshmq_confirm_latency_seconds"):
        assert consumed.families[family].type == ("counter" if family.endswith("added") else "histogram")
    stopped_url = url
    assert node.stop() == 0
    with pytest.raises(httpx.ConnectError):
        await scrape(stopped_url)


@pytest.mark.integration
async def test_a_network_link_is_in_the_link_family_at_both_ends_by_kind_and_direction(nodes) -> None:
    from tests.clustering.cluster import collect
    from tests.networks.network import link_states, send, start_network, wait_linked

    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}}, per_node={"A": METRICS, "B": METRICS})
    a, b = net["A"], net["B"]
    await wait_linked(a, 1)
    async with await connect(b.url) as conn:
        consumer = await (await conn.session()).create_consumer("metered.orders")

        async def subscribed():
            now = await scrape(a.info["metrics"])
            return now if now.get("meshmq_link_subscriptions", kind="network", direction="out") == 1 else None
        await eventually(subscribed, 20, "A to hold B's demand as a network subscription")
        await send(a, "metered.orders", 5)
        assert (await collect({"b": consumer}, 5))["b"] == list(range(5))

        async def confirmed():
            now = await scrape(a.info["metrics"])
            labels = {"kind": "network", "connection": "to-b", "direction": "out"}
            return now if now.get("meshmq_link_messages_confirmed_total", **labels) == 5 else None
        at_a = await eventually(confirmed, 20, "A to count B's confirmations on the link")
        at_b = await scrape(b.info["metrics"])
        # the management API says the same (meshmq cluster bindings, the gateway)
        [dialed], [accepted] = await link_states(a), await link_states(b)
    out = {"kind": "network", "connection": "to-b", "direction": "out"}
    assert at_a.get("meshmq_link_connected", **out) == 1
    assert at_a.get("meshmq_link_messages_forwarded_total", **out) == 5
    assert at_a.get("meshmq_link_demand_received_total", **out) >= 1
    # B accepted the link: it offers the demand, it forwards nothing (one-way)
    inward = {"kind": "network", "connection": "to-b", "direction": "in"}
    assert at_b.get("meshmq_link_connected", **inward) == 1
    assert at_b.get("meshmq_link_demand_sent_total", **inward) >= 1
    assert at_b.get("meshmq_link_messages_forwarded_total", **inward) == 0
    # not a cluster bridge: the old family has none of it
    assert not [s for s in at_a.samples if s.name.startswith("meshmq_bridge_")]
    assert (dialed.kind, dialed.direction, dialed.role, dialed.duplex, dialed.subscriptions, dialed.forwarded) == (
        "network", "out", "peer", False, 1, 5)
    assert (accepted.kind, accepted.direction, accepted.demand_sent >= 1, accepted.target_node_name) == (
        "network", "in", True, "A")


@pytest.mark.integration
async def test_a_journal_service_serves_its_own_metrics(nodes) -> None:
    journal = nodes.journal("metered-journal", extra=METRICS)
    router = nodes.router("uses-journal", journal_address=journal.endpoint, extra=METRICS)
    assert journal.info["metrics"] != router.info["metrics"]
    before = await scrape(journal.info["metrics"])
    assert before.get("meshmq_service_info", service="journal", node="metered-journal") == 1
    async with await connect(router.url) as conn:
        p = await (await conn.session()).create_producer(uniq("metrics.remote"))
        for i in range(500):
            await p.send_async(b"m%d" % i, routing_type="anycast")
        await p.flush()
    after = await scrape(journal.info["metrics"])
    assert after.get("meshmq_journal_writer_up") == 1
    assert after.get("meshmq_journal_transaction_records_sum") - before.get("meshmq_journal_transaction_records_sum") >= 500
    assert after.get("meshmq_journal_transaction_seconds_count") > before.get("meshmq_journal_transaction_seconds_count")
    routed = await scrape(router.info["metrics"])
    assert routed.get("meshmq_journal_batch_messages_sum") >= 500
    assert "meshmq_journal_transaction_records" not in routed.families  # the journal is not in the router's process


@pytest.mark.integration
async def test_discovery_counts_members_announces_and_watchers(nodes, etcd_session) -> None:
    cluster = uniq("metrics").replace(".", "-")
    svc = ServiceProcess(nodes.tmp, "metered-discovery", "discovery", f"""
        name: metered-discovery
        discovery-groups:
          dg1:
            etcd: {{endpoints: ["{etcd_session.endpoint}"]}}
            cluster-name: {cluster}
        discovery:
          listen: {{host: 127.0.0.1, port: 0}}
        {METRICS}""")
    nodes.started.append(svc)
    svc.start()
    url = svc.info["metrics"]
    before = await scrape(url)
    assert before.get("meshmq_discovery_announce_streams") == 0 and "meshmq_discovery_members" in before.families
    client = GrpcDiscoveryClient(svc.endpoint)
    watcher = TopologyWatcher(client, cluster)
    try:
        node = dpb.ClusterNode(node_id="n1", cluster_name=cluster, node_name="one", connector="127.0.0.1:7001")
        async with Announcer(client, node, broadcast_period_ms=500, refresh_timeout_ms=2000):
            watcher.start()
            await watcher.wait_ready(0)

            async def joined():
                now = await scrape(url)
                return now if now.get("meshmq_discovery_members", cluster=cluster) == 1 else None

            now = await eventually(joined, 10, "the discovery service to see the member")
            assert now.get("meshmq_discovery_announce_streams") == 1
            assert now.get("meshmq_discovery_joins_total") == 1
            assert now.get("meshmq_discovery_watch_streams") >= 1
            assert now.get("meshmq_discovery_backend_available", cluster=cluster) == 1
        left = await eventually(lambda: _leaves(url), 10, "the leave to be counted")
        assert left.get("meshmq_discovery_members", cluster=cluster) == 0
    finally:
        await watcher.close()
        await client.close()


async def _leaves(url: str) -> Scrape | None:
    now = await scrape(url)
    done = now.get("meshmq_discovery_leaves_total") == 1 and now.get("meshmq_discovery_announce_streams") == 0
    return now if done and now.get("meshmq_discovery_members") == 0 else None


@pytest.mark.integration
async def test_the_ha_coordinator_counts_activations_and_shows_the_epoch_it_granted(nodes, etcd_session) -> None:
    namespace = uniq("metrics-ns").replace(".", "-")
    coord = ServiceProcess(nodes.tmp, "metered-coord", "ha-coordinator", (
        f"name: metered-coord\nha-coordinator:\n  listen: {{host: 127.0.0.1, port: {free_port()}}}\n"
        f"  etcd: {{endpoints: ['{etcd_session.endpoint}']}}\n{METRICS}"))
    nodes.started.append(coord)
    coord.start()
    url = coord.info["metrics"]
    before = await scrape(url)
    assert before.get("meshmq_ha_activations_total", result="granted") == 0
    channel = open_channel(coord.endpoint)
    try:
        stub = hgrpc.HaCoordinatorStub(channel)
        first = hpb.QuorumKey(namespace=namespace, coordination_id="group-a", instance="live-1")
        granted = await stub.Activate(hpb.QuorumActivateRequest(key=first, session_ms=5000,
                                                                connector="127.0.0.1:7001"), timeout=10)
        assert granted.granted
        second = hpb.QuorumKey(namespace=namespace, coordination_id="group-a", instance="live-2")
        refused = await stub.Activate(hpb.QuorumActivateRequest(key=second, session_ms=5000,
                                                                connector="127.0.0.1:7002"), timeout=10)
        assert not refused.granted
        await stub.KeepAlive(hpb.KeepAliveRequest(lease_id=granted.lease_id), timeout=10)
        await stub.Release(hpb.ReleaseRequest(lease_id=granted.lease_id), timeout=10)
    except grpc.aio.AioRpcError as exc:
        pytest.fail(f"the coordinator refused: {exc.details()}")
    finally:
        await channel.close()
    after = await scrape(url)
    assert after.get("meshmq_ha_activations_total", result="granted") == 1
    assert after.get("meshmq_ha_activations_total", result="refused") == 1
    assert after.get("meshmq_ha_activation_epoch", namespace=namespace, coordination_id="group-a") == granted.sequence
    assert after.get("meshmq_ha_lease_keep_alives_total") == 1
    assert after.get("meshmq_ha_lease_releases_total") == 1
    assert after.get("meshmq_service_info", service="ha-coordinator") == 1
