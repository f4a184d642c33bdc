"""The `meshmq` command as a user runs it."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys

import httpx
import pytest

from tests.fixtures.nodes import eventually, wait_for

pytestmark = pytest.mark.integration


def meshmq(*args, cwd=None, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "meshmq.cli.main", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )


def test_up_starts_the_embedded_default_and_says_where_it_listens(tmp_path):
    ready = tmp_path / "ready.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshmq.cli.main", "up", "--port", "0", "--console-port", "0", "--ready-file",
         str(ready)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: ready.exists() or proc.poll() is not None, 60, "meshmq up")
        info = json.loads(ready.read_text())
        url = f"meshmq://{info['endpoints'][0]}"
        assert (tmp_path / "data" / "journal.db").exists()
        sent = meshmq("send", "--url", url, "--address", "greetings", "--body", "hello", "--count", "2", "-p", "lang=en")
        assert sent.returncode == 0, sent.stderr
        assert "sent 2 of 2" in sent.stdout
        listed = meshmq("queue", "list", "--url", url)
        assert "greetings" in listed.stdout and "DLQ" in listed.stdout
        got = meshmq("receive", "--url", url, "--queue", "greetings", "--count", "2", "--filter", "lang = 'en'")
        assert got.returncode == 0, got.stderr
        assert got.stdout.count("hello") == 2
        # drained and without consumers, the auto-created queue is auto-deleted (auto-delete-queues)
        assert "greetings" not in meshmq("queue", "list", "--url", url).stdout
        purge = meshmq("queue", "purge", "greetings", "--url", url)
        assert purge.returncode == 2 and "QUEUE_NOT_FOUND" in purge.stderr
        # The admin gateway runs in the same process (dev mode: admin / admin) and shows this node.
        console = info["console"]
        token = httpx.post(f"{console}api/v1/auth/token", json={"username": "admin", "password": "admin"}).json()
        nodes = httpx.get(f"{console}api/v1/nodes", headers={"Authorization": f"Bearer {token['token']}"}).json()
        assert [(n["connector"], n["up"]) for n in nodes] == [(info["endpoints"][0], True)]
        assert httpx.get(console, follow_redirects=False).headers["location"].startswith("/login")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert f"listening on {info['endpoints'][0]}" in out and f"console {info['console']}" in out
    assert "# effective configuration" in err and "address-settings:" in err


def test_bad_config_names_the_file_line_and_key(tmp_path):
    cfg = tmp_path / "node.yaml"
    cfg.write_text("name: n\nacceptors:\n  - name: a\n    prot: 61616\naddress-settings:\n  '#':\n    max-delivery-attempts: lots\n")
    r = meshmq("serve", "router", "--config", str(cfg))
    assert r.returncode == 2
    assert "node.yaml:4" in r.stderr and "prot" in r.stderr and "did you mean 'port'" in r.stderr
    assert "node.yaml:7" in r.stderr and "max-delivery-attempts" in r.stderr
    assert "Traceback" not in r.stderr


def test_unreachable_router_and_bad_uri_are_clear_errors():
    r = meshmq("queue", "list", "--url", "meshmq://127.0.0.1:1?callTimeout=2000")
    assert r.returncode == 2 and "CONNECTION_FAILED" in r.stderr and "Traceback" not in r.stderr
    r = meshmq("queue", "list", "--url", "amqp://127.0.0.1:1")
    assert r.returncode == 2 and "unsupported URI scheme 'amqp'" in r.stderr


def test_unreachable_postgresql_journal_fails_start_with_a_clear_message(tmp_path):
    cfg = tmp_path / "node.yaml"
    cfg.write_text("name: n\njournal:\n  url: postgresql+psycopg://nobody@127.0.0.1:1/none\nacceptors:\n  - {port: 0}\n")
    r = meshmq("serve", "router", "--config", str(cfg), "--quiet")
    assert r.returncode == 2 and "unreachable" in r.stderr and "Traceback" not in r.stderr


def test_perf_prints_rate_and_percentiles(shared_router):
    r = meshmq("perf", "client", "--url", shared_router.url, "--count", "2000", "--address", "perf.cli", "--json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    roles = {line["role"]: line for line in lines}
    assert roles["consumer"]["messages"] == 2000
    assert roles["producer"]["rate"] > 0 and roles["producer"]["p99_ms"] >= roles["producer"]["p50_ms"]


def test_invalid_selector_on_a_configured_queue_is_a_config_error_with_its_line(tmp_path):
    cfg = tmp_path / "node.yaml"
    cfg.write_text("name: n\naddresses:\n  orders:\n    anycast:\n      - name: orders\n        filter: \"color = 'red' AND\"\n")
    for args in (("config", "check", str(cfg)), ("serve", "router", "--config", str(cfg))):
        r = meshmq(*args)
        assert r.returncode == 2, args
        assert "node.yaml:6" in r.stderr and "addresses.orders.anycast[0].filter" in r.stderr, r.stderr
        assert "position 17" in r.stderr and "Traceback" not in r.stderr


def test_up_refuses_flags_that_its_config_file_would_silently_override(tmp_path):
    cfg = tmp_path / "node.yaml"
    cfg.write_text("name: n\n")
    for flags in (("--port", "5555"), ("--data-dir", str(tmp_path / "d")), ("--host", "127.0.0.2")):
        r = meshmq("up", "--config", str(cfg), *flags)
        assert r.returncode == 2
        assert f"{flags[0]} shape the starter config and cannot be combined with --config" in r.stderr


CLI_DEAD_LETTERS = """
address-settings:
  "cli.#": {max-delivery-attempts: 1, dead-letter-address: cli.DLQ}
"""


async def _dead_letter_from_an_auto_created_queue(url: str, queue: str, n: int) -> list[int]:
    """`n` messages dead-lettered from `queue`, which is then auto-deleted; their ids in the DLQ."""
    from meshmq.client import connect

    async with await connect(url) as conn:
        p = await (await conn.session()).create_producer(queue)
        for i in range(n):
            await p.send(f"m{i}".encode(), properties={"n": i}, routing_type="anycast")
        c = await (await conn.session()).create_consumer(queue)
        for _ in range(n):
            (await c.receive(5)).nack()
        await c.close()

        async def settled():
            dlq = await conn.admin.queue("cli.DLQ")
            return dlq is not None and dlq.message_count == n and await conn.admin.queue(queue) is None

        await eventually(settled, 10, f"{n} dead letters and {queue} auto-deleted")
        return [b.message.message_id for b in (await conn.admin.browse("cli.DLQ")).messages]


async def _send_to(url: str, address: str, body: bytes) -> None:
    from meshmq.client import connect

    async with await connect(url) as conn:
        await (await (await conn.session()).create_producer(address)).send(body)


def test_queue_retry_says_what_happened_to_each_message_and_fails_when_it_moved_nothing(nodes):
    router = nodes.router("cli-retry", extra=CLI_DEAD_LETTERS)
    ids = asyncio.run(_dead_letter_from_an_auto_created_queue(router.url, "cli.orders", 3))

    r = meshmq("queue", "retry", "cli.DLQ", "--url", router.url)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == (f"message {ids[0]}: sent to address cli.orders, to queue cli.orders "
                        "(created: address cli.orders, queue cli.orders)")
    assert lines[1:3] == [f"message {i}: returned to queue cli.orders" for i in ids[1:]]
    assert lines[3] == "retried 3 of 3 message(s) from cli.DLQ"

    asyncio.run(_send_to(router.url, "cli.DLQ", b"no origin"))
    r = meshmq("queue", "retry", "cli.DLQ", "--url", router.url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "kept in cli.DLQ: NO_ORIGIN" in r.stdout
    assert "retried 0 of 1 message(s) from cli.DLQ; 1 kept" in r.stdout

    r = meshmq("queue", "retry", "cli.DLQ", "--url", router.url, "--message-id", "987654321")
    assert r.returncode == 2 and "MESSAGE_NOT_FOUND" in r.stderr and "987654321" in r.stderr, r.stderr
    r = meshmq("queue", "retry", "cli.nope", "--url", router.url)
    assert r.returncode == 2 and "QUEUE_NOT_FOUND" in r.stderr and "cli.nope" in r.stderr, r.stderr


def test_send_sets_the_jms_headers_and_a_delivery_time_and_browse_and_receive_show_them(shared_router):
    url, queue = shared_router.url, "cli.headers"
    sent = meshmq("send", "--url", url, "--address", queue, "--body", "req", "--count", "2", "--reply-to", "cli.replies",
                  "--correlation-id", "c-7", "--type", "order", "--group-id", "g1", "--group-seq", "1")
    assert sent.returncode == 0, sent.stderr
    at = "2100-01-02T03:04:05.678Z"
    later = meshmq("send", "--url", url, "--address", queue, "--body", "later", "--delivery-time", at)
    assert later.returncode == 0, later.stderr
    delayed = meshmq("send", "--url", url, "--address", queue, "--body", "delayed", "--delivery-delay", "3600000")
    assert delayed.returncode == 0, delayed.stderr

    listed = meshmq("queue", "list", "--url", url).stdout.splitlines()
    header = listed[0].split("\t")
    row = dict(zip(header, next(line.split("\t") for line in listed if line.startswith(queue + "\t"))))
    assert (row["messages"], row["scheduled"]) == ("4", "2")

    browsed = meshmq("queue", "browse", queue, "--url", url).stdout.splitlines()
    assert browsed[0].split("\t") == ["id", "state", "priority", "deliveries", "size", "properties", "headers", "body"]
    rows = {line.split("\t")[-1]: line.split("\t") for line in browsed[1:]}
    common = "reply-to=cli.replies correlation-id=c-7 type=order group-id=g1"
    # Scheduled first (they come back at the head), then the waiting ones.
    assert [line.split("\t")[1] for line in browsed[1:]] == ["scheduled", "scheduled", "waiting", "waiting"]
    assert [line.split("\t")[6] for line in browsed[3:]] == [f"{common} group-seq=1", f"{common} group-seq=2"]
    assert rows["later"][1] == "scheduled" and rows["later"][6] == f"delivery-time={at}"
    assert rows["delayed"][1] == "scheduled" and rows["delayed"][6].startswith("delivery-time=")

    got = meshmq("receive", "--url", url, "--queue", queue, "--count", "2", "--filter", "JMSCorrelationID = 'c-7'")
    assert got.returncode == 0, got.stderr
    assert [line.split("] ", 1)[1] for line in got.stdout.splitlines()] == [
        f"req {common} group-seq=1", f"req {common} group-seq=2"]
    assert meshmq("queue", "purge", queue, "--url", url).returncode == 0


def test_send_refuses_a_delivery_time_it_cannot_read(shared_router):
    r = meshmq("send", "--url", shared_router.url, "--address", "cli.bad", "--delivery-time", "tomorrow")
    assert r.returncode == 2 and "neither ms since the epoch nor an ISO 8601 time" in r.stderr


def test_queue_create_group_options_and_reset_groups(shared_router):
    from meshmq.client.blocking import connect
    from tests.integration.shared import uniq

    url, q, first = shared_router.url, uniq("cli-groups"), "JMSXGroupFirstForConsumer"
    r = meshmq("queue", "create", q, "--url", url, "--group-buckets", "4", "--group-rebalance",
               "--group-rebalance-pause-dispatch", "--group-first-key", first)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (f"created queue {q} on address {q} (group-rebalance, group-rebalance-pause-dispatch, "
                                f"group-buckets=4, group-first-key={first})")
    off = uniq("cli-groups-off")
    r = meshmq("queue", "create", off, "--url", url, "--group-buckets", "0", "--no-group-rebalance")
    assert r.returncode == 0 and r.stdout.strip() == f"created queue {off} on address {off} (group-buckets=0)", r.stderr
    bad = meshmq("queue", "create", uniq("cli-groups-bad"), "--url", url, "--group-buckets", "-2")
    assert bad.returncode == 2 and "--group-buckets" in bad.stderr and "Traceback" not in bad.stderr
    with connect(url) as conn:
        info = conn.admin.queue(q)
        assert (info.group_buckets, info.group_rebalance, info.group_rebalance_pause_dispatch,
                info.group_first_key) == (4, True, True, first)
        s = conn.session()
        c = s.create_consumer(q)
        p = s.create_producer(q)
        for group in ("a", "b"):  # CRC-32 puts "a" and "b" in different buckets of 4
            p.send(b"m", routing_type="anycast", group_id=group)
        for _ in range(2):
            c.ack(c.receive(10))
        assert conn.admin.queue(q).group_count == 2
        listed = meshmq("queue", "list", "--url", url)
        header, *rows = [line.split("\t") for line in listed.stdout.splitlines()]
        row = next(r for r in rows if r[0] == q)
        assert row[header.index("groups")] == "2" and "group-buckets=4" in row[header.index("kind")]
        r = meshmq("queue", "reset-groups", q, "--url", url)
        assert r.returncode == 0 and r.stdout.strip() == f"reset 2 message group(s) of queue {q}", r.stderr
        assert conn.admin.queue(q).group_count == 0
    r = meshmq("queue", "reset-groups", uniq("cli-groups-nope"), "--url", url)
    assert r.returncode == 2 and "QUEUE_NOT_FOUND" in r.stderr and "Traceback" not in r.stderr
