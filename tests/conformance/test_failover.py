"""Conformance: a kill -9 of the live with a client on a `failover:` URI.
A replicating live/backup pair (quorum on the worker's etcd) per scenario, as
real router processes; the SDK under test produces and consumes through the
failover, and nothing confirmed is lost or delivered twice."""

from __future__ import annotations

import uuid

import pytest

from meshmq.client.blocking import connect as blocking_connect
from tests.fixtures.nodes import wait_for
from tests.ha.test_replication import pair, stored_messages, syncs
from tests.ha.test_shared_store import QUEUE

from .conftest import b64, body

pytestmark = pytest.mark.integration

# ActiveMQ's failover transport options: the listed order, retries every 100-200 ms.
FAILOVER_OPTIONS = "randomize=false&initialReconnectDelay=100&maxReconnectDelay=200"


def queue_count(url: str) -> int:
    with blocking_connect(url) as conn:
        return conn.admin.queue(QUEUE).message_count


def test_after_a_kill_9_of_the_live_every_confirmed_message_arrives_once_from_the_backup(driver, nodes, etcd_session):
    """Phase 1 is confirmed before the kill (40 of it consumed and stored as such);
    phase 2 is in flight on an idempotent producer when the live dies; phase 3 is
    sent after; phase 4 is a transaction open at the kill, whose commit raises
    TRANSACTION_ROLLED_BACK and whose redo with the same duplicate ids commits.
    Each message of the four arrives exactly once, in its order."""
    primary, backup = pair(nodes, etcd_session, ns=f"conf-{uuid.uuid4().hex[:8]}")
    wait_for(lambda: syncs(primary) > 0, 20, "the backup to be in sync")
    uri = f"failover:(meshmq://{primary.endpoint},meshmq://{backup.endpoint})?{FAILOVER_OPTIONS}"
    conn = driver.request("connect", uri=uri)["connection"]
    session = driver.request("session", connection=conn)["session"]
    producer = driver.request("producer", session=session, address=QUEUE)["producer"]
    idempotent = driver.request("producer", session=session, address=QUEUE, idempotent=True)["producer"]
    consumer = driver.request("consumer", session=session, queue=QUEUE)["consumer"]
    tx = driver.request("session", connection=conn, transacted=True)["session"]
    tx_producer = driver.request("producer", session=tx, address=QUEUE)["producer"]
    driver.request("send_many", producer=producer, count=100, properties={"phase": 1})  # confirmed: stored on both
    for i in range(40):
        m = driver.request("receive", consumer=consumer, timeout_ms=5000)["message"]
        assert body(m) == str(i).encode() and m["properties"]["phase"] == 1
        driver.request("ack", message=m["handle"])
    # Acks have no answer, and one the live has applied but not yet stored and streamed to
    # its backup dies with it: its message comes again (docs/client-failover.md). Wait until
    # the backup's copy holds the 40 acks (60 messages left), so none of the 40 may come again.
    wait_for(lambda: stored_messages(backup) == 60, 10, "the backup's copy to hold the first 40 acks")

    for i in range(5):
        driver.request("send", producer=tx_producer, body=b64(str(i)), properties={"phase": 4}, duplicate_id=f"tx-{i}")
    in_flight = driver.submit("send_many", producer=idempotent, count=300, properties={"phase": 2})
    primary.kill9()
    # Whatever of phase 2 the live had not confirmed, the idempotent producer sends again
    # to the backup, which drops what it already has: the request succeeds.
    driver.wait(in_flight, timeout=60)
    # The plain producer carries on too; its sends wait out the failover.
    driver.request("send_many", producer=producer, count=50, properties={"phase": 3}, timeout=60)
    # The transaction was open when its node died: the backup never had it, and commit says so.
    err = driver.error("commit", session=tx, timeout=60)
    assert err.reason == "TRANSACTION_ROLLED_BACK", err
    for i in range(5):
        driver.request("send", producer=tx_producer, body=b64(str(i)), properties={"phase": 4}, duplicate_id=f"tx-{i}")
    driver.request("commit", session=tx)
    expected = {1: list(range(40, 100)), 2: list(range(300)), 3: list(range(50)), 4: list(range(5))}
    got = []
    for _ in range(sum(map(len, expected.values()))):
        m = driver.request("receive", consumer=consumer, timeout_ms=30000, timeout=60)["message"]
        assert m is not None, f"only {len(got)} messages came: {sorted(got)}"
        got.append((m["properties"]["phase"], int(body(m))))
        driver.request("ack", message=m["handle"])
    assert sorted(got) == [(phase, n) for phase, ns in expected.items() for n in ns], got  # each exactly once
    assert {phase: [n for p, n in got if p == phase] for phase in expected} == expected  # each phase in order
    # All of it was confirmed before the first receive: a copy would be in the queue already.
    extra = driver.request("receive", consumer=consumer, timeout_ms=1000)["message"]
    assert extra is None, f"a message came again after all {len(got)}: {extra} (in order: {got})"
    events = driver.request("failover_events", connection=conn)["events"]
    assert "FAILOVER_COMPLETED" in events and "FAILOVER_FAILED" not in events, events
    driver.request("close", handle=conn)
    wait_for(lambda: queue_count(backup.url) == 0, 10, "the backup to store the acks")
