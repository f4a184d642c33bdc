"""The gateway's REST API against a real secured router: log-in and roles,
queue operations with the counts they change, long operations with progress,
problem+json errors, a router that is down, CSRF on cookie sessions, metrics."""

from __future__ import annotations

import re
import time
from datetime import datetime
from urllib.parse import quote

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from meshmq.client import connect
from tests.fixtures.nodes import ServiceProcess, wait_for
from tests.gateway.conftest import gateway_config

pytestmark = pytest.mark.integration

PROBLEM = "application/problem+json"


def _problem(r: httpx.Response, status: int, reason: str | None = None) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith(PROBLEM), r.headers
    body = r.json()
    assert body["status"] == status and body["detail"]
    if reason is not None:
        assert body["reason"] == reason, body
    return body


async def _send(url: str, address: str, bodies: list[bytes], properties=None) -> None:
    async with await connect(url) as conn:
        session = await conn.session()
        producer = await session.create_producer(address)
        for i, body in enumerate(bodies):
            await producer.send(body, properties=(properties or (lambda i: {}))(i))


def test_log_in_gives_each_user_their_role_and_refuses_default_and_wrong_passwords(stack):
    anonymous = stack.client()
    _problem(anonymous.get("/api/v1/nodes"), 401, "UNAUTHENTICATED")
    admin, viewer = stack.client("admin"), stack.client("viewer")
    assert admin.get("/api/v1/whoami").json() == {"username": "admin", "can_view": True, "can_manage": True}
    assert viewer.get("/api/v1/whoami").json() == {"username": "viewer", "can_view": True, "can_manage": False}
    refused = anonymous.post("/api/v1/auth/token", json={"username": "guest", "password": "guest"})
    assert "default password" in _problem(refused, 401)["detail"]
    wrong = anonymous.post("/api/v1/auth/token", json={"username": "admin", "password": "nope"})
    assert "invalid username or password" in _problem(wrong, 401)["detail"]
    # A revoked token stops working.
    assert admin.delete("/api/v1/auth/token").status_code == 204
    _problem(admin.get("/api/v1/nodes"), 401)


async def test_a_queue_created_filled_browsed_and_purged_through_the_api(stack):
    admin = stack.client("admin")
    created = admin.post("/api/v1/nodes/node/queues", json={"name": "gw.orders", "routing_type": "anycast"})
    assert created.status_code == 201, created.text
    assert created.json()["message_count"] == 0 and created.json()["address"] == "gw.orders"
    _problem(admin.post("/api/v1/nodes/node/queues", json={"name": "gw.orders"}), 409, "QUEUE_EXISTS")

    await _send(stack.sdk_url, "gw.orders", [f"order {i} ".encode() * 10 for i in range(5)],
                properties=lambda i: {"n": i, "region": "eu" if i % 2 else "us"})
    q = admin.get("/api/v1/nodes/node/queues/gw.orders").json()
    assert (q["message_count"], q["waiting"], q["messages_added"], q["consumers"]) == (5, 5, 5, 0)
    listed = {(x["node"], x["name"]): x for x in admin.get("/api/v1/queues", params={"search": "orders"}).json()}
    assert listed[("node", "gw.orders")]["message_count"] == 5

    page = admin.get("/api/v1/nodes/node/queues/gw.orders/messages",
                     params={"offset": 1, "limit": 2, "preview": 7}).json()
    assert page["total"] == 5
    assert [m["properties"]["n"] for m in page["messages"]] == [1, 2]
    first = page["messages"][0]
    assert first["body_preview"] == "order 1" and first["body_truncated"] and first["body_size"] == 80
    assert first["state"] == "waiting" and first["durable"]
    eu = admin.get("/api/v1/nodes/node/queues/gw.orders/messages", params={"filter": "region = 'eu'"}).json()
    assert eu["total"] == 2 and [m["properties"]["n"] for m in eu["messages"]] == [1, 3]
    bad = admin.get("/api/v1/nodes/node/queues/gw.orders/messages", params={"filter": "region = = 'eu'"})
    _problem(bad, 400, "INVALID_SELECTOR")
    # Browsing consumed nothing.
    assert admin.get("/api/v1/nodes/node/queues/gw.orders").json()["message_count"] == 5

    assert admin.post("/api/v1/nodes/node/queues/gw.orders/purge").json() == {"messages_removed": 5}
    assert admin.get("/api/v1/nodes/node/queues/gw.orders").json()["message_count"] == 0
    assert admin.delete("/api/v1/nodes/node/queues/gw.orders").status_code == 200
    _problem(admin.get("/api/v1/nodes/node/queues/gw.orders"), 404)
    _problem(admin.get("/api/v1/nodes/elsewhere/queues/gw.orders"), 404, "NODE_NOT_FOUND")


async def test_a_view_only_user_sees_everything_and_changes_nothing(stack):
    admin, viewer = stack.client("admin"), stack.client("viewer")
    admin.post("/api/v1/nodes/node/queues", json={"name": "gw.readonly"})
    await _send(stack.sdk_url, "gw.readonly", [b"keep me"])
    assert [q["message_count"] for q in viewer.get("/api/v1/queues", params={"search": "gw.readonly"}).json()] == [1]
    assert viewer.get("/api/v1/nodes/node/queues/gw.readonly/messages").json()["total"] == 1
    for method, path, body in (("POST", "/api/v1/nodes/node/queues/gw.readonly/purge", None),
                               ("POST", "/api/v1/nodes/node/queues", {"name": "gw.new"}),
                               ("DELETE", "/api/v1/nodes/node/queues/gw.readonly", None),
                               ("POST", "/api/v1/nodes/node/queues/gw.readonly/move", {"to_queue": "x"})):
        _problem(viewer.request(method, path, json=body), 403, "PERMISSION_DENIED")
    assert admin.get("/api/v1/nodes/node/queues/gw.readonly").json()["message_count"] == 1
    assert admin.get("/api/v1/nodes/node/queues/gw.new").status_code == 404


async def test_moving_messages_reports_progress_and_moves_exactly_the_selected_ones(stack):
    admin = stack.client("admin")
    for name in ("gw.src", "gw.dst"):
        admin.post("/api/v1/nodes/node/queues", json={"name": name})
    await _send(stack.sdk_url, "gw.src", [b"m%d" % i for i in range(3000)], properties=lambda i: {"even": i % 2 == 0})
    r = admin.post("/api/v1/nodes/node/queues/gw.src/move", json={"to_queue": "gw.dst", "filter": "even = TRUE"})
    assert r.status_code == 202, r.text
    op = r.json()
    assert op["kind"] == "move" and op["started_by"] == "admin"

    def finished():
        nonlocal op
        op = admin.get(f"/api/v1/operations/{op['id']}").json()
        return op["finished"]

    wait_for(finished, 60, "the move to finish")
    assert (op["done"], op["total"], op["error"]) == (1500, 1500, "")
    src = admin.get("/api/v1/nodes/node/queues/gw.src").json()
    dst = admin.get("/api/v1/nodes/node/queues/gw.dst").json()
    assert (src["message_count"], dst["message_count"]) == (1500, 1500)
    moved = admin.get("/api/v1/nodes/node/queues/gw.dst/messages", params={"limit": 1000}).json()["messages"]
    assert all(m["properties"]["even"] for m in moved)
    # A move to a queue that does not exist is refused up front, not reported as a failed operation.
    _problem(admin.post("/api/v1/nodes/node/queues/gw.src/move", json={"to_queue": "gw.none"}), 404,
             "QUEUE_NOT_FOUND")


async def test_dead_letters_retried_go_back_to_their_queue(stack):
    admin = stack.client("admin")
    admin.post("/api/v1/nodes/node/queues", json={"name": "gw.work"})
    await _send(stack.sdk_url, "gw.work", [b"poison"])
    async with await connect(stack.sdk_url) as conn:
        session = await conn.session(transacted=True)
        consumer = await session.create_consumer("gw.work")
        for _ in range(2):  # max-delivery-attempts 2: the second rollback sends it to DLQ
            assert (await consumer.receive(timeout=10)) is not None
            await session.rollback()
        await consumer.close()
    wait_for(lambda: admin.get("/api/v1/nodes/node/queues/DLQ").json()["message_count"] == 1, 10,
             "the message in DLQ")
    assert admin.get("/api/v1/nodes/node/queues/DLQ").json()["message_count"] == 1
    r = admin.post("/api/v1/nodes/node/queues/DLQ/retry", json={})
    assert r.status_code == 202, r.text
    op_id = r.json()["id"]
    op = _finished(admin, op_id)
    assert (op["done"], op["total"], op["kept"], op["status"]) == (1, 1, 0, "succeeded")
    [outcome] = op["outcomes"]
    assert (outcome["result"], outcome["queues"]) == ("returned", ["gw.work"])
    assert admin.get("/api/v1/nodes/node/queues/DLQ").json()["message_count"] == 0
    assert admin.get("/api/v1/nodes/node/queues/gw.work").json()["message_count"] == 1
    fragment = _console_login(stack, "admin", "s3cret-admin").get(f"/console/fragments/operations/{op_id}")
    assert 'class="operation succeeded"' in fragment.text and "done" in fragment.text, fragment.text


def _finished(client: httpx.Client, op_id: str) -> dict:
    return wait_for(lambda: (op := client.get(f"/api/v1/operations/{op_id}").json())["finished"] and op, 30,
                    f"operation {op_id} to finish")


async def test_a_retry_that_moves_nothing_is_not_reported_done_and_says_why(stack):
    admin = stack.client("admin")
    await _send(stack.sdk_url, "DLQ", [b"sent here, not dead-lettered"])  # no _AMQ_ORIG_*: nowhere to go
    r = admin.post("/api/v1/nodes/node/queues/DLQ/retry", json={})
    assert r.status_code == 202, r.text
    op = _finished(admin, r.json()["id"])
    assert (op["done"], op["total"], op["kept"], op["status"], op["error"]) == (0, 1, 1, "nothing_moved", "")
    [outcome] = op["outcomes"]
    assert (outcome["result"], outcome["reason"]) == ("kept", "NO_ORIGIN") and outcome["detail"]
    assert admin.get("/api/v1/nodes/node/queues/DLQ").json()["message_count"] == 1
    # The console shows it as a warning with the reason, not as a green "done".
    browser = _console_login(stack, "admin", "s3cret-admin")
    fragment = browser.get(f"/console/fragments/operations/{op['id']}")
    assert 'class="operation nothing_moved"' in fragment.text, fragment.text
    assert "moved nothing" in fragment.text and "NO_ORIGIN" in fragment.text and "done" not in fragment.text
    page = browser.get("/nodes/node/queues/DLQ", params={"operation": op["id"]})
    assert page.status_code == 200 and 'class="operation nothing_moved"' in page.text, page.text
    # A message id the queue does not hold is refused up front, naming it.
    missing = _problem(admin.post("/api/v1/nodes/node/queues/DLQ/retry", json={"message_id": 987654321}), 404,
                       "MESSAGE_NOT_FOUND")
    assert "987654321" in missing["detail"] and "DLQ" in missing["detail"]
    _problem(admin.post("/api/v1/nodes/node/queues/gw.none/retry", json={}), 404, "QUEUE_NOT_FOUND")


async def test_a_paused_queue_keeps_its_messages_until_resumed(stack):
    admin = stack.client("admin")
    admin.post("/api/v1/nodes/node/queues", json={"name": "gw.paused"})
    assert admin.post("/api/v1/nodes/node/queues/gw.paused/pause").json()["paused"] is True
    await _send(stack.sdk_url, "gw.paused", [b"held"])
    async with await connect(stack.sdk_url) as conn:
        consumer = await (await conn.session()).create_consumer("gw.paused")
        assert await consumer.receive(timeout=0.5) is None
        assert admin.get("/api/v1/nodes/node/queues/gw.paused").json()["message_count"] == 1
        assert admin.post("/api/v1/nodes/node/queues/gw.paused/resume").json()["paused"] is False
        msg = await consumer.receive(timeout=10)
        assert msg is not None and msg.body == b"held"
        msg.ack()


async def test_addresses_are_created_and_deleted_and_a_busy_one_needs_force(stack):
    admin = stack.client("admin")
    r = admin.post("/api/v1/nodes/node/addresses", json={"name": "gw.events", "routing_types": ["multicast"]})
    assert r.status_code == 201 and r.json()["routing_types"] == ["multicast"], r.text
    admin.post("/api/v1/nodes/node/queues", json={"name": "gw.sub", "address": "gw.events",
                                                    "routing_type": "multicast"})
    await _send(stack.sdk_url, "gw.events", [b"e1", b"e2"])
    _problem(admin.delete("/api/v1/nodes/node/addresses/gw.events"), 409)
    assert admin.delete("/api/v1/nodes/node/addresses/gw.events", params={"force": True}).json() == {
        "messages_removed": 2}
    assert "gw.events" not in [a["name"] for a in admin.get("/api/v1/addresses").json()]


# Names holding what a URL reserves; each travels as one percent-encoded path segment
# ("gw%2Fliteral" has a real percent sign: decoded once, it must not turn into a slash).
AWKWARD_NAMES = ("gw/orders/eu", "gw%2Fliteral", "gw?q=1", "gw#frag", "gw with space")


async def test_queues_and_addresses_named_with_reserved_url_characters_are_read_purged_and_deleted(stack):
    admin = stack.client("admin")
    for name in AWKWARD_NAMES:
        r = admin.post("/api/v1/nodes/node/queues", json={"name": name})
        assert r.status_code == 201 and r.json()["name"] == name, r.text
        await _send(stack.sdk_url, name, [b"one", b"two"])
    for name in AWKWARD_NAMES:
        path = f"/api/v1/nodes/node/queues/{quote(name, safe='')}"
        q = admin.get(path)
        assert q.status_code == 200 and (q.json()["name"], q.json()["message_count"]) == (name, 2), q.text
        assert admin.get(f"{path}/messages").json()["total"] == 2
        assert admin.post(f"{path}/purge").json() == {"messages_removed": 2}
        assert admin.delete(path).status_code == 200
        _problem(admin.get(path), 404)
    created = admin.post("/api/v1/nodes/node/addresses", json={"name": "gw/events"})
    assert created.status_code == 201, created.text
    assert admin.delete(f"/api/v1/nodes/node/addresses/{quote('gw/events', safe='')}").json() == {
        "messages_removed": 0}
    assert "gw/events" not in [a["name"] for a in admin.get("/api/v1/addresses").json()]


async def test_the_console_links_to_a_queue_whose_name_has_a_slash_and_purges_it(stack):
    admin = stack.client("admin")
    admin.post("/api/v1/nodes/node/queues", json={"name": "gw/console"})
    await _send(stack.sdk_url, "gw/console", [b"one"])
    browser = _console_login(stack, "admin", "s3cret-admin")
    table = browser.get("/queues", params={"search": "gw/console"}).text
    link = re.search(r'<a href="(/nodes/node/queues/[^"]+)">gw/console</a>', table).group(1)
    assert link == "/nodes/node/queues/gw%2Fconsole", table
    page = browser.get(link)
    assert page.status_code == 200 and '<dd id="message-count">1</dd>' in page.text, page.text
    # (The form asks the browser to confirm first: data-confirm, not part of what is posted.)
    purge = re.search(r'<form method="post" action="([^"]+/purge)"[^>]*><input type="hidden" name="csrf_token" '
                      r'value="([^"]+)"', page.text)
    r = browser.post(purge.group(1), data={"csrf_token": purge.group(2)})
    assert r.status_code == 303 and r.headers["location"].startswith(link + "?done="), r.headers
    assert admin.get("/api/v1/nodes/node/queues/gw%2Fconsole").json()["message_count"] == 0



def test_a_queue_name_with_quotes_is_shown_in_the_confirmation_never_run(stack):
    # A queue name may hold quotes: the purge and delete confirmations carry it as
    # escaped attribute text (data-confirm, read by /static/confirm.js), never inside
    # an inline handler where the browser would decode it back into script.
    name = "gw');alert(1);('"
    admin = stack.client("admin")
    assert admin.post("/api/v1/nodes/node/queues", json={"name": name}).status_code == 201
    browser = _console_login(stack, "admin", "s3cret-admin")
    page = browser.get("/nodes/node/queues/" + quote(name, safe="")).text
    assert "onsubmit" not in page and "confirm(" not in page, page
    assert 'data-confirm="Purge queue gw&#39;);alert(1);(&#39; on node?' in page, page
    assert browser.get("/static/confirm.js").status_code == 200

def test_a_node_shows_its_event_log_through_the_api_and_the_console(stack):
    [node] = stack.client("admin").get("/api/v1/nodes").json()
    # The defaults: written, kept 7 days, nothing deleted yet on a fresh store.
    assert (node["event_log_enabled"], node["event_retention"], node["events_kept_from"], node["events_pruned"]) \
        == (True, 7 * 24 * 3600 * 1000, 0, 0)
    page = _console_login(stack, "admin", "s3cret-admin").get("/nodes/node")
    assert re.search(r'<dd id="event-log">written, kept 7d 0h; complete from the start</dd>', page.text), page.text


def test_a_router_that_is_down_shows_as_down_and_the_pages_still_answer(stack):
    admin = stack.client("admin")
    assert [n["up"] for n in admin.get("/api/v1/nodes").json()] == [True]
    stack.router.stop()
    nodes = admin.get("/api/v1/nodes")
    assert nodes.status_code == 200
    [node] = nodes.json()
    assert node["up"] is False and node["problem"]
    assert admin.get("/api/v1/queues").json() == []
    assert admin.get("/api/v1/cluster").json()["nodes"][0]["up"] is False
    _problem(admin.get("/api/v1/nodes/node/queues/DLQ"), 503)
    stack.router.start()
    wait_for(lambda: admin.get("/api/v1/nodes").json()[0]["up"], 30, "the router to show as up again")


def _console_login(stack, username: str, password: str) -> httpx.Client:
    browser = stack.client()
    form = browser.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)
    r = browser.post("/login", data={"username": username, "password": password, "csrf_token": token, "next": "/"})
    assert r.status_code == 303 and r.headers["location"] == "/", r.text
    return browser


def test_cookie_sessions_need_the_csrf_token_for_every_change(stack):
    browser = _console_login(stack, "admin", "s3cret-admin")
    page = browser.get("/queues")
    assert page.status_code == 200 and "Create a queue" in page.text
    csrf = re.search(r'"X-CSRF-Token": "([^"]+)"', page.text).group(1)
    _problem(browser.post("/api/v1/nodes/node/queues", json={"name": "gw.csrf"}), 403)
    # The console's own form, without its token: refused, nothing created.
    r = browser.post("/queues", data={"node": "node", "name": "gw.csrf", "durable": "true"})
    assert r.status_code == 303 and "error=" in r.headers["location"]
    assert browser.get("/api/v1/nodes/node/queues/gw.csrf").status_code == 404
    ok = browser.post("/api/v1/nodes/node/queues", json={"name": "gw.csrf"}, headers={"X-CSRF-Token": csrf})
    assert ok.status_code == 201, ok.text
    # A log-in form posted without the cookie the log-in page set is refused.
    stranger = stack.client()
    r = stranger.post("/login", data={"username": "admin", "password": "s3cret-admin", "csrf_token": "forged"})
    assert r.status_code == 303 and r.headers["location"].startswith("/login") and "meshmq_session" not in r.cookies


def test_queue_kinds_are_created_and_shown_through_the_api(stack):
    admin = stack.client("admin")
    made = admin.post("/api/v1/nodes/node/queues", json={"name": "gw.cache", "last_value_key": "symbol",
                                                          "non_destructive": True})
    assert made.status_code == 201, made.text
    assert (made.json()["last_value_key"], made.json()["non_destructive"], made.json()["exclusive"]) == (
        "symbol", True, False)
    shown = admin.get("/api/v1/nodes/node/queues/gw.cache").json()
    assert (shown["last_value_key"], shown["non_destructive"], shown["exclusive"]) == ("symbol", True, False)
    plain = admin.post("/api/v1/nodes/node/queues", json={"name": "gw.plain.kind"}).json()
    assert (plain["last_value_key"], plain["non_destructive"], plain["exclusive"]) == ("", False, False)
    bad = _problem(admin.post("/api/v1/nodes/node/queues", json={"name": "gw.bad", "exclusive": "maybe"}), 422)
    assert "exclusive" in bad["detail"]


async def test_the_console_shows_queue_kinds_groups_scheduled_messages_and_message_headers(stack):
    admin = stack.client("admin")
    made = admin.post("/api/v1/nodes/node/queues", json={"name": "gw.kinds", "last_value_key": "sku",
                                                          "exclusive": True})
    assert made.status_code == 201, made.text
    admin.post("/api/v1/nodes/node/queues", json={"name": "gw.grouped"})
    at = int(time.time() * 1000) + 3_600_000
    async with await connect(stack.sdk_url) as conn:
        session = await conn.session()
        producer = await session.create_producer("gw.grouped")
        await producer.send(b"later", correlation_id="c-1", reply_to="gw.replies", type="order", group_id="g1",
                            group_seq=3, delivery_time=at)
        for group in ("g1", "g2"):
            await producer.send(group.encode(), group_id=group)
        consumer = await session.create_consumer("gw.grouped")
        assert {(await consumer.receive(5)).body for _ in range(2)} == {b"g1", b"g2"}  # not acknowledged

        def counted() -> bool:
            q = admin.get("/api/v1/nodes/node/queues/gw.grouped").json()
            return (q["group_count"], q["scheduled"], q["message_count"]) == (2, 1, 3)
        wait_for(counted, 10, "two groups pinned and one message scheduled")

        browser = _console_login(stack, "admin", "s3cret-admin")
        table = browser.get("/queues", params={"search": "gw."}).text
        kinds = dict(re.findall(r'data-queue="(gw\.[a-z]+)">.*?<td class="kind">([^<]*)</td>', table, re.S))
        assert kinds == {"gw.kinds": "last-value-key=sku, exclusive", "gw.grouped": ""}, table
        page = browser.get("/nodes/node/queues/gw.grouped").text
        assert '<dd id="queue-kind">ordinary</dd>' in page and '<dd id="group-count">2</dd>' in page, page
        assert re.search(r"<dt>Scheduled</dt><dd>1</dd>", page), page
        # Delivering first (the two pinned), then the scheduled one.
        headers = re.findall(r'<td class="headers">(.*?)</td>', page, re.S)[2]
        assert (f"<code>delivery-time={datetime.fromtimestamp(at / 1000):%Y-%m-%d %H:%M:%S}</code> "
                "<code>correlation-id=c-1</code> <code>group-id=g1</code> <code>group-seq=3</code> "
                "<code>reply-to=gw.replies</code> <code>type=order</code>") in headers, headers
        assert '<dd id="queue-kind">last-value-key=sku, exclusive</dd>' in browser.get("/nodes/node/queues/gw.kinds").text
        browsed = admin.get("/api/v1/nodes/node/queues/gw.grouped/messages").json()["messages"]
        assert [(m["state"], m["correlation_id"], m["group_id"], m["delivery_time"]) for m in browsed] == [
            ("delivering", "", "g1", 0), ("delivering", "", "g2", 0), ("scheduled", "c-1", "g1", at)]


def test_bad_requests_are_problems_naming_what_was_wrong(stack):
    admin = stack.client("admin")
    bad = _problem(admin.post("/api/v1/nodes/node/queues", json={"name": ""}), 422, "INVALID_REQUEST")
    assert "name" in bad["detail"]
    bad = _problem(admin.post("/api/v1/nodes/node/queues", json={"name": "x", "routing_type": "broadcast"}), 422)
    assert "routing_type" in bad["detail"]
    _problem(admin.post("/api/v1/nodes/node/queues", content=b"{not json", headers={"content-type":
                                                                                   "application/json"}), 422)
    internal = admin.post("/api/v1/nodes/node/queues", json={"name": "$.meshmq.mine"})
    _problem(internal, 400, "INVALID_REQUEST")


async def test_the_gateway_metrics_move_with_its_traffic(stack):
    admin = stack.client("admin")

    def requests_total() -> float:
        text = httpx.get(f"{stack.base}/metrics", auth=("viewer", "s3cret-viewer")).text
        return sum(s.value for f in text_string_to_metric_families(text) if f.name == "meshmq_gateway_requests"
                   for s in f.samples if s.name.endswith("_total") and s.labels["route"] == "/api/v1/nodes")

    before = requests_total()
    for _ in range(3):
        admin.get("/api/v1/nodes")
    assert requests_total() == before + 3


def test_with_security_the_gateway_metrics_need_a_user_who_may_view(stack):
    anonymous = httpx.get(f"{stack.base}/metrics")
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Basic ")
    assert "meshmq_gateway" not in anonymous.text
    assert httpx.get(f"{stack.base}/metrics", auth=("viewer", "wrong")).status_code == 401
    ok = httpx.get(f"{stack.base}/metrics", auth=("viewer", "s3cret-viewer"))
    assert ok.status_code == 200 and "meshmq_gateway_requests" in ok.text


def test_without_users_the_gateway_starts_only_in_dev_mode(tmp_path, stack):
    plain = gateway_config(stack.router.endpoint).split("security-enabled")[0]
    refused = ServiceProcess(tmp_path, "gw-nousers", "gateway", plain)
    with pytest.raises(RuntimeError, match="none are configured"):
        refused.start()
    dev = ServiceProcess(tmp_path, "gw-dev", "gateway", plain.replace("static-connectors", "dev-mode: true\n"
                                                                       "  static-connectors"))
    stack.nodes.started.append(dev)
    dev.start()
    with httpx.Client(base_url=dev.endpoint) as c:
        r = c.post("/api/v1/auth/token", json={"username": "admin", "password": "admin"})
        assert r.status_code == 200 and r.json()["can_manage"], r.text
