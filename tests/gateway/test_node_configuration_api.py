"""What a node's configuration says and a test message, through the gateway's
REST API on two real secured routers linked by a cluster connection (and a
network connector to nowhere): the address-settings in force with the match
each came from, as the CLI prints them; a test message sent as the caller,
stored before the answer (it survives kill -9), with its fields and typed
properties as a consumer sees them, refused where the caller may not send,
and bad bodies refused naming the field; each node's link configurations
with the values that differ from defaults marked, its links, no secret shown, and a
node that went down said so."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from meshmq.client import connect
from meshmq.config import defaults
from tests.fixtures.nodes import Nodes, ServiceProcess, eventually, free_port

from .conftest import USERS, Stack, security_yaml

pytestmark = pytest.mark.integration

CLUSTER_PASSWORD = "s3cret-cluster"
NETWORK_PASSWORD = "hunter2-network"
# Appended to security_yaml()'s address-settings ("#": DLQ, ExpiryQueue, 2 attempts),
# and a match where admin may manage but not send.
MORE = """\
  "orders.#": {max-delivery-attempts: 5, redelivery-delay: 250}
  orders.eu: {expiry-delay: 600000, dead-letter-address: EuDLQ}
"""
ADDRESSES = "  orders.eu: {anycast: [{name: orders.eu}]}\n  EuDLQ: {anycast: [{name: EuDLQ}]}\n"
SECRET_SECURITY = """\
  "secret.#": {manage: [admins], view: [viewers], consume: [admins], create-address: [admins]}
"""


def node_yaml(port: int, peer: str, peer_port: int, extra: str = "") -> str:
    security = (security_yaml().replace("security-settings:\n", "security-settings:\n" + SECRET_SECURITY)
                .replace("addresses:\n", "addresses:\n" + ADDRESSES))
    return (f"acceptors: [{{name: grpc, host: 127.0.0.1, port: {port}}}]\n"
            f"{security}{MORE}"
            f"cluster-password: {CLUSTER_PASSWORD}\n"
            f"connectors: {{{peer}: '127.0.0.1:{peer_port}'}}\n"
            f"cluster-connections: {{cc: {{static-connectors: [{peer}], max-hops: 2, retry-interval: 200}}}}\n"
            + extra)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Started once for the module; a test that kills a node starts it again."""
    tmp_path = tmp_path_factory.mktemp("pair")
    nodes = Nodes(tmp_path)
    p1, p2, nowhere = free_port(), free_port(), free_port()
    network = (f"network-connectors:\n  nc: {{uri: 'static:(meshmq://127.0.0.1:{nowhere})', "
               f"userName: bridge, password: {NETWORK_PASSWORD}}}\n")
    n1 = nodes.router("n1", extra=node_yaml(p1, "n2", p2, network), start=False)
    n2 = nodes.router("n2", extra=node_yaml(p2, "n1", p1), start=False)
    n1.start(), n2.start()
    gateway = ServiceProcess(tmp_path, "gateway", "gateway", f"""
name: gateway
connectors: {{n1: '127.0.0.1:{p1}', n2: '127.0.0.1:{p2}'}}
gateway:
  listen: {{host: 127.0.0.1, port: 0}}
  static-connectors: [n1, n2]
{security_yaml()}""")
    nodes.started.append(gateway)
    gateway.start()
    s = Stack(nodes, n1, gateway)
    s.n2 = n2
    yield s
    s.close()
    nodes.stop_all()


def cli(*args: str) -> list[list[str]]:
    out = subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [line.split("\t") for line in out.stdout.splitlines()]


async def test_the_settings_in_force_name_the_match_each_came_from_as_the_cli_does(pair):
    viewer = pair.client("viewer")
    r = viewer.get("/api/v1/nodes/n1/addresses/orders.eu/settings")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["node"] == "n1" and body["matched"] == ["orders.eu", "orders.#", "#"]
    by = {s["name"]: (s["value"], s["match"]) for s in body["settings"]}
    assert by["expiry-delay"] == (600000, "orders.eu")
    assert by["dead-letter-address"] == ("EuDLQ", "orders.eu")  # the most specific match wins
    assert by["max-delivery-attempts"] == (5, "orders.#")
    assert by["redelivery-delay"] == (250, "orders.#")
    assert by["expiry-address"] == ("ExpiryQueue", "#")
    assert by["redistribution-delay"] == (-1, None)  # nobody sets it: Artemis's default
    assert by["address-full-policy"] == ("PAGE", None)

    # An address that does not exist yet: what it would get.
    other = {s["name"]: (s["value"], s["match"])
             for s in viewer.get("/api/v1/nodes/n2/addresses/billing/settings").json()["settings"]}
    assert other["max-delivery-attempts"] == (2, "#") and other["expiry-delay"] == (-1, None)

    # The CLI prints the same table.
    url = f"meshmq://admin:{dict((u, p) for u, p, _ in USERS)['admin']}@{pair.router.endpoint}"
    header, *rows = cli("address", "settings", "orders.eu", "--url", url)[1:]
    assert header == ["setting", "value", "from"]
    assert {name: (value, match) for name, value, match in rows} == {
        s["name"]: (json.dumps(s["value"]), s["match"] or "default") for s in body["settings"]}

    assert viewer.get("/api/v1/nodes/nowhere/addresses/orders.eu/settings").status_code == 404


async def test_a_test_message_is_stored_as_the_callers_before_the_answer_and_consumed_as_sent(pair):
    admin, viewer = pair.client("admin"), pair.client("viewer")
    r = admin.post("/api/v1/nodes/n1/addresses/orders.eu/messages", json={
        "body": "hello from the console", "priority": 7, "correlation_id": "c-1", "type": "probe",
        "properties": {"region": "emea", "amount": 12.5, "vip": True, "n": 3}})
    assert r.status_code == 201, r.text
    sent = r.json()
    assert sent["node"] == "n1" and sent["queues"] == ["orders.eu"] and sent["message_id"] > 0

    # Stored before the answer: kill -9 and start again, it is there.
    pair.router.kill9()
    pair.router.start()
    async with await connect(pair.sdk_url) as conn:
        consumer = await (await conn.session()).create_consumer("orders.eu")
        m = await consumer.receive(10)
        assert m is not None and m.body == b"hello from the console"
        assert m.message_id == sent["message_id"] and m.priority == 7 and m.durable
        assert (m.correlation_id, m.type, m.proto.user_id) == ("c-1", "probe", "admin")
        assert m.properties == {"region": "emea", "amount": 12.5, "vip": True, "n": 3}
        m.ack()
    await eventually(lambda: all(n["up"] for n in viewer.get("/api/v1/nodes").json()), 20,
                     "the gateway to reach n1 again")

    # Bytes, non-durable, to a multicast address nothing subscribes to: stored nowhere, said so.
    assert admin.post("/api/v1/nodes/n1/addresses", json={"name": "news", "routing_types": ["multicast"]}
                      ).status_code == 201
    r = admin.post("/api/v1/nodes/n1/addresses/news/messages", json={"body_base64": "AAEC", "durable": False})
    assert r.status_code == 201 and r.json()["queues"] == [], r.text

    # Sent as the caller: a manager without the send permission there is refused by the router.
    admin.post("/api/v1/nodes/n1/addresses", json={"name": "secret.x"})
    r = admin.post("/api/v1/nodes/n1/addresses/secret.x/messages", json={"body": "x"})
    assert r.status_code == 403 and "send" in r.text, r.text
    r = viewer.post("/api/v1/nodes/n1/addresses/orders.eu/messages", json={"body": "x"})
    assert r.status_code == 403 and "view-only" in r.text


BAD_BODIES = [
    ({"priority": 12}, "priority"),
    ({"bogus": 1}, "bogus"),
    ({"body": "a", "body_base64": "YQ=="}, "not both"),
    ({"body_base64": "***"}, "base64"),
    ({"properties": {"_AMQ_GROUP_SEQUENCE": "first"}}, "_AMQ_GROUP_SEQUENCE"),
    ({"properties": {"big": 2**70}}, "64 bits"),
    ({"properties": {"nested": {"a": 1}}}, "nested"),
    ({"routing_type": "broadcast"}, "routing_type"),
]


async def test_a_bad_test_message_is_refused_naming_what_is_wrong_and_nothing_is_sent(pair):
    admin = pair.client("admin")
    before = admin.get("/api/v1/nodes/n1/queues/orders.eu").json()["messages_added"]
    for body, named in BAD_BODIES:
        r = admin.post("/api/v1/nodes/n1/addresses/orders.eu/messages", json=body)
        assert r.status_code == 422 and named in r.text, (body, r.text)
    assert admin.get("/api/v1/nodes/n1/queues/orders.eu").json()["messages_added"] == before


async def test_each_nodes_links_show_their_configuration_their_links_and_no_secret(pair):
    viewer = pair.client("viewer")

    def both_connected():
        nodes = viewer.get("/api/v1/cluster-connections").json()
        ccs = [c for n in nodes for c in n["configurations"] if c["kind"] == "cluster"]
        return nodes if len(ccs) == 2 and all(
            any(b["state"] == "connected" for b in c["links"]) for c in ccs) else None

    nodes = await eventually(both_connected, 20, "both cluster connections connected")
    assert [n["node"] for n in nodes] == ["n1", "n2"] and all(n["up"] for n in nodes)
    n1 = {(c["kind"], c["name"]): c for c in nodes[0]["configurations"]}
    assert set(n1) == {("cluster", "cc"), ("network", "nc")}
    cc = n1["cluster", "cc"]
    assert cc["parameters"]["max-hops"] == 2 and cc["parameters"]["retry-interval"] == 200
    assert {"max-hops", "retry-interval", "static-connectors"} <= set(cc["changed_keys"])
    assert cc["parameters"]["check-period"] == 30000 and "check-period" not in cc["changed_keys"]
    assert cc["parameters"]["message-load-balancing"] == defaults.CC_MESSAGE_LOAD_BALANCING and cc["parameters"]["static-connectors"] == ["n2"]
    assert cc["connectors"] == {"n2": pair.n2.endpoint}
    assert [b["target"] for b in cc["links"]] == ["n2"]
    nc = n1["network", "nc"]
    assert nc["parameters"]["password"] == "***" and nc["parameters"]["userName"] == "bridge"
    assert nc["parameters"]["conduitSubscriptions"] is True and "conduitSubscriptions" not in nc["changed_keys"]
    r = viewer.get("/api/v1/cluster-connections")
    assert NETWORK_PASSWORD not in r.text and CLUSTER_PASSWORD not in r.text

    # One node's, as the CLI prints them.
    one = viewer.get("/api/v1/nodes/n1/cluster-connections").json()
    assert [(c["name"], c["parameters"], c["changed_keys"]) for c in one] == [
        (c["name"], c["parameters"], c["changed_keys"]) for c in nodes[0]["configurations"]]
    url = f"meshmq://admin:{dict((u, p) for u, p, _ in USERS)['admin']}@{pair.router.endpoint}"
    header, *rows = cli("cluster", "connections", "--url", url)
    assert header == ["kind", "name", "parameter", "value", "status"]
    table = {(kind, name, key): (value, source) for kind, name, key, value, source in rows}
    assert table["cluster", "cc", "max-hops"] == ("2", "changed")
    assert table["cluster", "cc", "check-period"] == ("30000", "default")
    assert table["network", "nc", "password"] == ('"***"', "changed")

    # A node that went down is listed with why.
    pair.n2.kill9()
    down = await eventually(lambda: [n for n in viewer.get("/api/v1/cluster-connections").json()
                                     if n["node"] == "n2" and not n["up"]], 20, "n2 listed as down")
    assert down[0]["problem"] and down[0]["configurations"] == []
    pair.n2.start()
