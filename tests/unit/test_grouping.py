"""Clustered grouping's deciders (services/router/cluster/grouping.py): the
LOCAL handler's answer to a proposal, group-timeout, and which member of a
queue group a grouped message goes to; and the grouping-handler config."""

from __future__ import annotations

import pytest

from meshmq.config.loader import ConfigError, load_config_text
from meshmq.errors import BrokerError, Reason
from meshmq.v1 import messages_pb2 as mpb
from services.router.cluster.grouping import (Grouping, LocalHandler, RemoteHandler, decide, expired,
                                              full_group_id, group_of)

OWN = "node-a"


class Link:
    load_balancing = "STRICT"


class Member:
    """A remote binding as balancing and grouping read it."""

    link = Link()

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id

    def accepts(self, msg) -> bool:
        return True

    def has_consumer_for(self, msg) -> bool:
        return True


class LocalQueue:
    def accepts(self, msg) -> bool:
        return True

    def has_consumer_for(self, msg) -> bool:
        return True


def _node_of_remote_binding(monkeypatch):
    import services.router.cluster.grouping as g
    monkeypatch.setattr(g, "RemoteBinding", Member)


def test_a_new_group_takes_the_proposal():
    assert decide(None, "b") == ("b", True)


def test_a_decided_group_keeps_its_node_whatever_is_proposed():
    assert decide("a", "b") == ("a", False)
    assert decide("a", "b", replace="c") == ("a", False)  # the gone node is not the decided one


def test_a_proposal_naming_the_decided_node_gone_replaces_it():
    assert decide("a", "b", replace="a") == ("b", True)


def test_group_timeout_minus_one_never_expires():
    assert not expired(0, 10**12, -1)
    assert not expired(1000, 1500, 1000)
    assert expired(1000, 2001, 1000)


def test_the_full_group_id_is_group_and_queue_as_in_artemis():
    assert full_group_id("g1", "orders") == "g1.orders"


def test_the_group_id_is_the_field():
    assert group_of(mpb.Message(group_id="g")) == "g"
    assert group_of(mpb.Message()) == ""


def test_the_local_handler_stores_each_new_decision_once_and_what_it_forgets():
    rows: list = []
    removed: list = []
    h = LocalHandler("gh", 1000, lambda add, rm: rows.append((add, rm)), removed.extend)
    assert h.propose("g.q", "b") == "b"
    assert h.propose("g.q", "c") == "b"
    assert rows == [([("g.q", "b")], [])]
    assert h.propose("g.q", "c", replace="b") == "c"
    assert rows[-1] == ([("g.q", "c")], []) and removed == ["g.q"]  # REMOTE handlers drop their answer
    h.used["g.q"] = 0
    h.propose("h.q", "a")
    assert h.reap(now=h.used["h.q"]) == ["g.q"]  # unused since 0; h.q just used
    assert "g.q" not in h.decisions and "h.q" in h.decisions
    assert rows[-1] == ([], ["g.q"]) and removed[-1] == "g.q"


def test_restored_decisions_hold():
    h = LocalHandler("gh", -1, lambda add, rm: None)
    h.restore("g.q", "c")
    assert h.propose("g.q", "a") == "c"


def test_the_local_node_routes_a_group_to_its_decided_member_and_decides_a_new_one(monkeypatch):
    _node_of_remote_binding(monkeypatch)
    b, c, q = Member("node-b"), Member("node-c"), LocalQueue()
    local = LocalHandler("gh", -1, lambda add, rm: None)
    g = Grouping(_config("LOCAL"), lambda: OWN, local=local)
    positions: dict[str, int] = {}
    first = g.member(object(), "g1", "q", q, [b, c], positions)
    assert first is q and local.decisions == {"g1.q": OWN}  # round robin starts with the local queue
    for _ in range(5):
        assert g.member(object(), "g1", "q", q, [b, c], positions) is q
    assert g.member(object(), "g2", "q", q, [b, c], positions) is b  # the next group goes on round robin
    assert g.member(object(), "g2", "q", None, [c], positions) is c  # b's queue gone: decided again
    assert local.decisions["g2.q"] == "node-c"


def test_a_remote_node_routes_only_groups_it_has_an_answer_for(monkeypatch):
    _node_of_remote_binding(monkeypatch)
    b = Member("node-b")
    remote = RemoteHandler("gh", "jms", 5000, -1, lambda: OWN, lambda: None)
    g = Grouping(_config("REMOTE"), lambda: OWN, remote=remote)
    remote.answers["g1.q"] = ("node-b", 0)
    assert g.member(object(), "g1", "q", None, [b], {}) is b
    remote.failures["g2.q"] = "no decision from the LOCAL grouping handler 'gh' ... UNAVAILABLE"
    with pytest.raises(BrokerError) as refused:
        g.member(object(), "g2", "q", None, [b], {})
    assert refused.value.reason == Reason.GROUPING_UNAVAILABLE and "'g2'" in refused.value.message
    assert "UNAVAILABLE" in refused.value.message


def test_a_remote_node_asks_for_new_groups_and_gone_bindings_only(monkeypatch):
    _node_of_remote_binding(monkeypatch)
    b, c = Member("node-b"), Member("node-c")
    remote = RemoteHandler("gh", "jms", 5000, -1, lambda: OWN, lambda: None)
    g = Grouping(_config("REMOTE"), lambda: OWN, remote=remote)

    class Addr:
        queues: dict = {}
        remote = {"q": (b, c)}
        cluster_round_robin: dict = {}

    addresses = {"jms.orders": Addr()}
    msgs = [mpb.Message(address="jms.orders", group_id="g1"), mpb.Message(address="jms.orders", group_id="g1"),
            mpb.Message(address="jms.orders"), mpb.Message(address="other", group_id="g1")]
    assert [a[:3] for a in g.pending(msgs, "", addresses)] == [("g1.q", "node-b", "")]  # once, for jms only
    remote.answers["g1.q"] = ("node-c", 0)
    assert g.pending(msgs, "", addresses) == []
    Addr.remote = {"q": (b,)}  # node-c's queue went: propose again, naming it gone
    assert [a[:3] for a in g.pending(msgs, "", addresses)] == [("g1.q", "node-b", "node-c")]


def test_the_local_node_asks_nothing_before_routing():
    g = Grouping(_config("LOCAL"), lambda: OWN, local=LocalHandler("gh", -1, lambda add, rm: None))
    assert g.pending([mpb.Message(address="jms.x", group_id="g")], "", {}) == []


def _config(kind: str):
    return load_config_text(_yaml(f"grouping-handler: {{name: gh, type: {kind}, address: jms}}\n"),
                            "node.yaml").grouping_handler


def _yaml(extra: str) -> str:
    return ("name: a\nconnectors: {b: '127.0.0.1:1'}\ncluster-connections:\n  cc: {static-connectors: [b]}\n"
            + extra)


def test_grouping_handler_config_takes_artemis_defaults():
    gh = _config("local")
    assert (gh.name, gh.type, gh.address, gh.timeout, gh.group_timeout, gh.reaper_period) == (
        "gh", "LOCAL", "jms", 5000, -1, 30000)


@pytest.mark.parametrize(("body", "expected"), [
    ("{name: gh, type: MIDDLE}", "node.yaml:5: grouping-handler.type: Input should be 'LOCAL' or 'REMOTE'"),
    ("{name: gh, type: REMOTE, timeout: 0}", "node.yaml:5: grouping-handler.timeout: Input should be greater than 0"),
    ("{name: gh, type: LOCAL, group-timeout: 0}",
     "node.yaml:5: grouping-handler.group-timeout: 0 is not allowed; use -1 for never or a positive number"),
    ("{name: gh, type: LOCAL, reaper-period: -1}",
     "node.yaml:5: grouping-handler.reaper-period: Input should be greater than 0"),
    ("{type: LOCAL}", "node.yaml:5: grouping-handler.name: required key is missing"),
])
def test_a_bad_grouping_handler_is_refused_naming_the_key(body, expected):
    with pytest.raises(ConfigError) as refused:
        load_config_text(_yaml(f"grouping-handler: {body}\n"), "node.yaml")
    assert expected in str(refused.value)


def test_a_grouping_handler_without_cluster_connections_is_refused():
    with pytest.raises(ConfigError) as refused:
        load_config_text("name: a\ngrouping-handler: {name: gh, type: LOCAL}\n", "node.yaml")
    assert "node.yaml:2: grouping-handler: clustered grouping needs cluster-connections" in str(refused.value)
