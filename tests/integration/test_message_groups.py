"""Message groups on one node (services/router/message_groups.py) on a real
router: a group stays on one consumer in order, JMSXGroupSeq -1 closes it, a
closing consumer hands its groups on, and the queue attributes group-buckets,
group-rebalance and group-first-key (per queue and as address settings)."""

from __future__ import annotations

import asyncio
import time

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually
from tests.integration.shared import uniq

pytestmark = pytest.mark.integration

FIRST = "JMSXGroupFirstForConsumer"


async def collect(consumers: dict, total: int, *, ack: bool = True, timeout: float = 10.0) -> dict:
    """Receive `total` messages from the named consumers between them: name -> messages in arrival order."""
    got: dict[str, list] = {name: [] for name in consumers}
    deadline = time.monotonic() + timeout
    while sum(map(len, got.values())) < total:
        assert time.monotonic() < deadline, f"only {sum(map(len, got.values()))} of {total} messages came"
        for name, c in consumers.items():
            m = await c.receive(0.05)
            if m is not None:
                got[name].append(m)
                if ack:
                    m.ack()
    for c in consumers.values():
        assert await c.receive(0.2) is None, "more messages than sent"
    return got


def groups_of(messages) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for m in messages:
        out.setdefault(m.group_id, []).append(m.group_seq)
    return out


async def send(p, q: str, *items) -> None:
    for group, seq in items:
        await p.send(f"{group}:{seq}".encode(), routing_type="anycast", group_id=group, group_seq=seq)


async def two_consumers(conn, q: str):
    s = await conn.session()
    return s, await s.create_consumer(q), await s.create_consumer(q), await s.create_producer(q)


async def test_each_group_goes_to_one_consumer_in_order(conn):
    q = uniq("groups")
    info = await conn.admin.create_queue(q)
    assert (info.group_buckets, info.group_rebalance, info.group_first_key) == (-1, False, "")
    _, c1, c2, p = await two_consumers(conn, q)
    # three groups interleaved: round robin alone would split every one of them
    await send(p, q, *[(g, seq) for seq in range(1, 7) for g in ("a", "b", "c")])
    got = await collect({"c1": c1, "c2": c2}, 18)
    placed = {name: groups_of(ms) for name, ms in got.items()}
    for g in ("a", "b", "c"):
        owners = [name for name, groups in placed.items() if g in groups]
        assert len(owners) == 1, f"group {g} went to {owners}"
        assert placed[owners[0]][g] == [1, 2, 3, 4, 5, 6]
    assert placed["c1"] and placed["c2"], "the groups spread over both consumers"
    assert (await conn.admin.queue(q)).group_count == 3


async def test_group_sequence_minus_one_closes_the_group_and_the_next_message_pins_afresh(conn):
    q = uniq("groups-close")
    await conn.admin.create_queue(q)
    _, c1, c2, p = await two_consumers(conn, q)
    await send(p, q, ("g", 1), ("g", -1))
    got = await collect({"c1": c1, "c2": c2}, 2)
    owner, other = ("c1", "c2") if got["c1"] else ("c2", "c1")
    assert [m.group_seq for m in got[owner]] == [1, -1]  # the closing message still goes to the group's consumer
    assert (await conn.admin.queue(q)).group_count == 0
    await send(p, q, ("g", 1), ("g", 2))  # the group picks again: round robin moved on to the other consumer
    again = await collect({"c1": c1, "c2": c2}, 2)
    assert [m.group_seq for m in again[other]] == [1, 2] and not again[owner]
    assert (await conn.admin.queue(q)).group_count == 1


async def test_a_closing_consumer_hands_its_groups_on_in_order_and_nothing_is_lost(conn):
    q = uniq("groups-handoff")
    await conn.admin.create_queue(q)
    s1 = await conn.session()
    c1 = await s1.create_consumer(q)
    s2 = await conn.session()
    c2 = await s2.create_consumer(q)
    p = await s2.create_producer(q)
    await send(p, q, *[(g, seq) for seq in range(1, 4) for g in ("a", "b", "c")])
    got = await collect({"c1": c1, "c2": c2}, 9, ack=False)
    held = groups_of(got["c1"])  # c1's groups, unacknowledged
    assert held
    for m in got["c2"]:
        m.ack()
    await c1.close()
    # c1's messages come back to c2 in their order; later ones follow them there,
    # even with a new consumer attached (the groups are pinned to c2 now)
    handed = await collect({"c2": c2}, sum(map(len, held.values())))
    assert groups_of(handed["c2"]) == held
    c3 = await s1.create_consumer(q)
    await send(p, q, *[(g, seq) for seq in range(4, 7) for g in held])
    later = await collect({"c2": c2, "c3": c3}, 3 * len(held))
    assert not later["c3"] and groups_of(later["c2"]) == {g: [4, 5, 6] for g in held}


async def test_group_buckets_zero_disables_grouping_and_n_buckets_share_consumers(conn):
    off = uniq("groups-0")
    assert (await conn.admin.create_queue(off, group_buckets=0)).group_buckets == 0
    _, c1, c2, p = await two_consumers(conn, off)
    await send(p, off, *[("g", seq) for seq in range(1, 5)])
    got = await collect({"c1": c1, "c2": c2}, 4)
    assert len(got["c1"]) == 2 and len(got["c2"]) == 2  # plain round robin
    assert (await conn.admin.queue(off)).group_count == 0
    one = uniq("groups-1")
    await conn.admin.create_queue(one, group_buckets=1)
    _, c1, c2, p = await two_consumers(conn, one)
    await send(p, one, *[(g, seq) for seq in range(1, 3) for g in ("a", "b", "c", "d")])
    got = await collect({"c1": c1, "c2": c2}, 8)
    assert sorted(len(ms) for ms in got.values()) == [0, 8]  # one bucket: every group on one consumer
    assert (await conn.admin.queue(one)).group_count == 1


async def test_group_rebalance_resets_the_groups_when_a_consumer_joins(conn):
    for rebalance in (False, True):
        q = uniq("groups-rebalance")
        await conn.admin.create_queue(q, group_rebalance=rebalance)
        s = await conn.session()
        c1 = await s.create_consumer(q)
        p = await s.create_producer(q)
        await send(p, q, ("a", 1), ("b", 1), ("c", 1))
        await collect({"c1": c1}, 3)
        assert (await conn.admin.queue(q)).group_count == 3
        c2 = await s.create_consumer(q)
        assert (await conn.admin.queue(q)).group_count == (0 if rebalance else 3)
        await send(p, q, ("a", 2), ("b", 2), ("c", 2))
        got = await collect({"c1": c1, "c2": c2}, 3)
        assert bool(got["c2"]) == rebalance, f"group-rebalance={rebalance}: c2 got {len(got['c2'])}"


@pytest.mark.parametrize("settle", ["ack", "commit"])
async def test_group_rebalance_pause_dispatch_resumes_as_soon_as_the_in_flight_messages_settle(conn, settle):
    q = uniq("groups-pause")
    await conn.admin.create_queue(q, group_rebalance=True, group_rebalance_pause_dispatch=True)
    s1 = await conn.session(transacted=settle == "commit")
    # window -1: the consumers never grant credit, so their acks are all the router hears from them
    c1 = await s1.create_consumer(q, window_size=-1)
    p = await (await conn.session()).create_producer(q)
    await send(p, q, ("a", 1), ("b", 1))
    held = (await collect({"c1": c1}, 2, ack=False))["c1"]
    c2 = await (await conn.session()).create_consumer(q, window_size=-1)  # resets the groups, pauses dispatch
    await send(p, q, ("a", 2), ("b", 2), ("c", 1))
    assert await c2.receive(0.3) is None and await c1.receive(0.05) is None, "dispatched while a1, b1 in flight"
    info = await conn.admin.queue(q)
    assert (info.message_count, info.delivering_count, info.group_count) == (5, 2, 0)
    for m in held:  # and then nothing else happens: no send, no consumer, no credit
        m.ack()
    if settle == "commit":
        await s1.commit()
    got = await collect({"c1": c1, "c2": c2}, 3)
    assert sorted(m.body for ms in got.values() for m in ms) == [b"a:2", b"b:2", b"c:1"]


async def test_group_first_key_marks_the_first_message_of_a_group_for_its_consumer(conn):
    q = uniq("groups-first")
    info = await conn.admin.create_queue(q, group_first_key=FIRST)
    assert info.group_first_key == FIRST
    _, c1, c2, p = await two_consumers(conn, q)
    await send(p, q, ("a", 1), ("b", 1), ("a", 2), ("b", 2))
    got = await collect({"c1": c1, "c2": c2}, 4)
    for ms in got.values():
        assert [m.properties.get(FIRST) for m in ms] == [True, None]
    # a new consumer for the group after a reset gets the marker again
    assert await conn.admin.reset_all_groups(q) == 2
    assert (await conn.admin.queue(q)).group_count == 0
    await send(p, q, ("a", 3))
    again = await collect({"c1": c1, "c2": c2}, 1)
    assert [m.properties.get(FIRST) for ms in again.values() for m in ms] == [True]


async def test_group_first_key_marks_a_large_message_too(conn):
    q = uniq("groups-first-large")
    await conn.admin.create_queue(q, group_first_key=FIRST)
    s = await conn.session()
    c = await s.create_consumer(q)
    p = await s.create_producer(q)
    body = b"L" * (300 * 1024)  # above minLargeMessageSize: its body is streamed in chunks after its header
    for seq in (1, 2):
        await p.send(body, routing_type="anycast", group_id="big", group_seq=seq)
    got = (await collect({"c": c}, 2, timeout=30))["c"]
    assert [(len(m.body), m.group_seq, m.properties.get(FIRST)) for m in got] == [(len(body), 1, True),
                                                                                  (len(body), 2, None)]


async def test_address_settings_defaults_and_groups_sent_as_properties(conn):
    s = await conn.session()
    p = await s.create_producer()
    off, first = uniq("groups-off"), uniq("groups-first")
    for address in (off, first):
        await p.send(b"x", address=address, routing_type="anycast")
    queues = {q.name: q for q in await conn.admin.list_queues()}
    assert queues[off].group_buckets == 0 and queues[first].group_first_key == FIRST
    # Artemis's core property names are the group too
    q = uniq("groups-props")
    await conn.admin.create_queue(q)
    _, c1, c2, p = await two_consumers(conn, q)
    for seq in (1, 2, 3):
        await p.send(b"m", address=q, routing_type="anycast", properties={"JMSXGroupID": "g", "JMSXGroupSeq": seq})
    got = await collect({"c1": c1, "c2": c2}, 3)
    ms = got["c1"] or got["c2"]
    assert len(ms) == 3 and [(m.group_id, m.group_seq) for m in ms] == [("g", 1), ("g", 2), ("g", 3)]


async def test_groups_are_not_kept_across_a_restart_the_attributes_come_from_the_settings(nodes):
    node = nodes.router("groups-restart", extra="""
        address-settings:
          "orders.#":
            default-group-buckets: 4
        """)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("orders.eu")
        s = await conn.session()
        c = await s.create_consumer("orders.eu")
        p = await s.create_producer("orders.eu")
        await send(p, "orders.eu", ("a", 1), ("a", 2))
        assert len((await collect({"c": c}, 2, ack=False))["c"]) == 2
        assert (await conn.admin.queue("orders.eu")).group_count == 1
    node.kill9()
    node.start()
    async with await connect(node.url) as conn:
        info = await conn.admin.queue("orders.eu")
        assert (info.group_buckets, info.group_count, info.message_count) == (4, 0, 2)
        s = await conn.session()
        c1, c2 = await s.create_consumer("orders.eu"), await s.create_consumer("orders.eu")
        got = await collect({"c1": c1, "c2": c2}, 2)
        assert sorted(len(ms) for ms in got.values()) == [0, 2]  # re-pinned to one consumer, in order
        assert [m.group_seq for ms in got.values() for m in ms] == [1, 2]


async def test_a_queue_keeps_its_group_attributes_across_a_kill_9(nodes):
    # the address settings say "no grouping": what the queue was created with must win after the restart
    node = nodes.router("groups-attrs-restart", extra="""
        address-settings:
          "jobs.#":
            default-group-buckets: 0
        """)
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("jobs.eu", group_buckets=1, group_rebalance=True,
                                      group_rebalance_pause_dispatch=True, group_first_key=FIRST)
        await conn.admin.create_queue("jobs.us")  # the settings' default, as resolved when it was created
    node.kill9()
    node.start()
    async with await connect(node.url) as conn:
        info = await conn.admin.queue("jobs.eu")
        assert (info.group_buckets, info.group_rebalance, info.group_rebalance_pause_dispatch,
                info.group_first_key) == (1, True, True, FIRST)
        assert (await conn.admin.queue("jobs.us")).group_buckets == 0
        # and it behaves so: one bucket holds every group, pinned to one consumer, marked first once
        s = await conn.session()
        c1, c2 = await s.create_consumer("jobs.eu"), await s.create_consumer("jobs.eu")
        p = await s.create_producer("jobs.eu")
        await send(p, "jobs.eu", ("a", 1), ("b", 1), ("a", 2), ("b", 2))
        got = await collect({"c1": c1, "c2": c2}, 4)
        ms = got["c1"] or got["c2"]
        assert len(ms) == 4 and [m.properties.get(FIRST) for m in ms] == [True, None, None, None]
        assert (await conn.admin.queue("jobs.eu")).group_count == 1
        await s.create_consumer("jobs.eu")  # group-rebalance: a joining consumer resets the groups
        assert (await conn.admin.queue("jobs.eu")).group_count == 0
