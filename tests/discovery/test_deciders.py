"""The pure parts of discovery: topology rules, retry delays, outage logging,
announcement checks, etcd targets and values."""

from __future__ import annotations

import logging

import pytest

from meshmq.discovery import Backoff, OutageLog, TopologyState, join_problems
from meshmq.discovery.etcd_backend import decode, encode, grpc_target
from meshmq.v1 import discovery_pb2 as dpb


def node(node_id: str, connector: str = "127.0.0.1:61616", **fields) -> dpb.ClusterNode:
    return dpb.ClusterNode(node_id=node_id, cluster_name="c", connector=connector, **fields)


def kinds(events) -> list[tuple[str, str]]:
    return [(dpb.NodeEventKind.Name(e.kind), e.node.node_id) for e in events]


def snapshot(*nodes) -> dpb.WatchNodesResponse:
    return dpb.WatchNodesResponse(snapshot=dpb.ClusterSnapshot(nodes=nodes, available=True))


def up(n) -> dpb.WatchNodesResponse:
    return dpb.WatchNodesResponse(event=dpb.NodeEvent(kind=dpb.NODE_UP, node=n))


def down(node_id: str) -> dpb.WatchNodesResponse:
    return dpb.WatchNodesResponse(event=dpb.NodeEvent(kind=dpb.NODE_DOWN, node=node(node_id)))


# --------------------------------------------------------------------------- TopologyState


def test_first_snapshot_brings_every_node_up():
    s = TopologyState(grace_s=10)
    assert kinds(s.apply(snapshot(node("b"), node("a")), now=0)) == [("NODE_UP", "b"), ("NODE_UP", "a")]
    assert [n.node_id for n in s.snapshot()] == ["a", "b"]
    assert s.synced


def test_put_of_a_known_node_is_an_update_only_when_it_changed():
    s = TopologyState(grace_s=10)
    s.apply(snapshot(node("a")), now=0)
    assert s.apply(up(node("a")), now=1) == []  # a resumed announcement writes the same value again
    assert kinds(s.apply(up(node("a", backup_connector="127.0.0.1:2")), now=2)) == [("NODE_UPDATED", "a")]


def test_delete_from_the_source_removes_at_once():
    s = TopologyState(grace_s=10)
    s.apply(snapshot(node("a"), node("b")), now=0)
    events = s.apply(down("a"), now=1)
    assert kinds(events) == [("NODE_DOWN", "a")]
    assert events[0].node.connector == "127.0.0.1:61616"  # the last announcement, not the bare id
    assert s.apply(down("a"), now=2) == []


def test_node_missing_after_a_resync_stays_for_the_grace_period():
    s = TopologyState(grace_s=10)
    s.apply(snapshot(node("a"), node("b")), now=0)
    assert s.apply(snapshot(node("a")), now=100) == []  # etcd came back empty of b, so far
    assert [n.node_id for n in s.snapshot()] == ["a", "b"]
    assert s.next_deadline() == 110
    assert s.expire(now=109.9) == []
    assert kinds(s.expire(now=110)) == [("NODE_DOWN", "b")]
    assert s.next_deadline() is None


def test_node_that_announces_again_within_the_grace_period_never_leaves():
    s = TopologyState(grace_s=10)
    s.apply(snapshot(node("a"), node("b")), now=0)
    s.apply(snapshot(), now=100)
    assert s.apply(up(node("b")), now=101) == []  # same announcement: no event at all
    assert kinds(s.expire(now=200)) == [("NODE_DOWN", "a")]  # a did not come back
    assert [n.node_id for n in s.snapshot()] == ["b"]


def test_a_later_resync_restarts_the_grace_period():
    s = TopologyState(grace_s=10)
    s.apply(snapshot(node("a")), now=0)
    s.apply(snapshot(), now=100)
    s.apply(snapshot(), now=105)
    assert s.expire(now=111) == []
    assert kinds(s.expire(now=115)) == [("NODE_DOWN", "a")]


def test_status_messages_change_nothing():
    s = TopologyState(grace_s=10)
    s.apply(snapshot(node("a")), now=0)
    status = dpb.WatchNodesResponse(status=dpb.DiscoveryStatus(available=False, message="x"))
    assert s.apply(status, now=1) == []
    assert [n.node_id for n in s.snapshot()] == ["a"]


def test_stored_nodes_do_not_alias_the_callers_messages():
    s = TopologyState(grace_s=10)
    mine = node("a")
    s.apply(up(mine), now=0)
    mine.connector = "10.0.0.1:1"
    assert s.snapshot()[0].connector == "127.0.0.1:61616"


# --------------------------------------------------------------------------- Backoff


def test_backoff_doubles_up_to_the_cap_and_resets():
    b = Backoff(initial_s=0.1, cap_s=0.5, jitter=0.0)
    assert [b.next() for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    b.reset()
    assert b.next() == 0.1


def test_backoff_jitter_only_shortens():
    b = Backoff(initial_s=1.0, cap_s=1.0, jitter=0.2, rng=lambda: 1.0)
    assert b.next() == pytest.approx(0.8)


def test_backoff_cap_below_initial_wins():
    assert Backoff(initial_s=0.1, cap_s=0.05, jitter=0).next() == 0.05


# --------------------------------------------------------------------------- OutageLog


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def outage_records(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "test.outage"]


def test_an_outage_is_logged_once_and_its_end_once(caplog):
    clock = Clock()
    o = OutageLog("etcd at x", logger=logging.getLogger("test.outage"), clock=clock)
    caplog.set_level(logging.DEBUG, "test.outage")
    for i in range(10):
        clock.t = i
        o.failed("connection refused", started_at=clock.t)
    clock.t = 12.5
    o.ok(started_at=12)
    o.ok(started_at=13)
    messages = [m for m in outage_records(caplog) if "still" not in m]
    assert messages == [
        "etcd at x is unreachable: connection refused; keeping the last known topology and retrying "
        "(not logged again until it is back)",
        "etcd at x is reachable again after 12.5 s",
    ]


def test_stale_attempts_do_not_flip_the_state(caplog):
    clock = Clock()
    o = OutageLog("etcd at x", logger=logging.getLogger("test.outage"), clock=clock)
    caplog.set_level(logging.WARNING, "test.outage")
    clock.t = 10
    o.failed("down", started_at=9)
    o.ok(started_at=8)  # a call that started before the outage and happened to succeed
    assert o.is_down
    clock.t = 20
    o.ok(started_at=19)
    o.failed("down", started_at=18)  # a call from before the recovery, failing late
    assert not o.is_down
    assert len(outage_records(caplog)) == 2


# --------------------------------------------------------------------------- announcements


def join(**fields) -> dpb.AnnounceRequest.Join:
    defaults = dict(node=node("n1", instance_id="i1"), broadcast_period_ms=2000, refresh_timeout_ms=10000)
    defaults.update(fields)
    return dpb.AnnounceRequest.Join(**defaults)


def test_a_good_join_has_no_problems():
    assert join_problems(join(), min_refresh_timeout_ms=2000) == []


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (dict(node=node("a/b", instance_id="i")), "without '/'"),
        (dict(node=node("", instance_id="i")), "node_id"),
        (dict(node=node("n", connector="nohost", instance_id="i")), "connector"),
        (dict(node=node("n", backup_connector="x:0", instance_id="i")), "backup_connector"),
        (dict(node=node("n")), "instance_id is required"),
        (dict(broadcast_period_ms=10000), "must be greater than broadcast_period_ms"),
        (dict(refresh_timeout_ms=1000, broadcast_period_ms=500), "smallest lease TTL"),
    ],
)
def test_join_problems_name_the_field(bad, says):
    problems = join_problems(join(**bad), min_refresh_timeout_ms=2000)
    assert any(says in p for p in problems), problems


# --------------------------------------------------------------------------- etcd plumbing


def test_grpc_target_for_one_or_several_endpoints():
    assert grpc_target(["127.0.0.1:2379"]) == ("127.0.0.1", 2379)
    assert grpc_target(["etcd.example:2379"]) == ("etcd.example", 2379)
    assert grpc_target(["[::1]:2379"]) == ("[::1]", 2379)
    host, port = grpc_target(["10.0.0.1:2379", "10.0.0.2:2380"])
    assert f"{host}:{port}" == "ipv4:10.0.0.1:2379,10.0.0.2:2380"
    host, port = grpc_target(["[fd00::1]:2379", "[fd00::2]:2379"])
    assert f"{host}:{port}" == "ipv6:[fd00::1]:2379,[fd00::2]:2379"


def test_values_are_readable_json_and_round_trip():
    n = node("n1", node_name="a", role=dpb.NODE_ROLE_BACKUP, group_name="g", instance_id="i", announced_at_ms=5)
    raw = encode(n)
    assert b'"role": "NODE_ROLE_BACKUP"' in raw and b"\n" not in raw
    assert decode(raw) == n
    assert decode(b'{"node_id": "x", "a_field_from_a_newer_version": 1}') == dpb.ClusterNode(node_id="x")
    assert decode(b"not json") is None
