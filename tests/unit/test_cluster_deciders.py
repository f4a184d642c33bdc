"""The pure parts of cluster connections: address matching, the four
message-load-balancing modes, the reconnect schedule (issue 11)."""

from __future__ import annotations

from itertools import islice

import pytest

from services.router.cluster.address_match import AddressMatch
from services.router.cluster.balancing import (
    ANYCAST, MULTICAST, OFF, OFF_WITH_REDISTRIBUTION, ON_DEMAND, STRICT, choose, remote_only,
)
from services.router.cluster.bridge import gives_up, retry_delays


@pytest.mark.parametrize("spec, yes, no", [
    ("", ["a", "eu.uk", "$.anything"], []),
    ("eu", ["eu", "eu.uk", "europe"], ["us", "xeu"]),
    ("!eu", ["us", "asia.eu"], ["eu", "eu.uk"]),
    ("eu.uk,eu.de", ["eu.uk.london", "eu.de"], ["eu.fr", "eu"]),
    ("eu,!eu.uk", ["eu.de", "eu"], ["eu.uk", "eu.uk.x", "us"]),
    ("!eu.uk,eu", ["eu.de"], ["eu.uk"]),  # exclusion wins whatever the order
    ("eu.*", ["eu.*x"], ["eu.uk"]),  # no wildcards: '*' is a character
    (" eu , !eu.uk ", ["eu.de"], ["eu.uk"]),
])
def test_address_matching_as_the_seed_says(spec, yes, no):
    m = AddressMatch(spec)
    assert [a for a in yes if m.matches(a)] == yes
    assert [a for a in no if m.matches(a)] == []


class Q:
    def __init__(self, name, accepts=True, consumer=True):
        self.name, self._accepts, self._consumer = name, accepts, consumer

    def accepts(self, msg):
        return self._accepts

    def has_consumer_for(self, msg):
        return self._consumer

    def __repr__(self):
        return self.name


def rotation(mode, local, remote, n=8):
    out, position = [], 0
    for _ in range(n):
        chosen, advanced = choose(mode, local, remote, None, position)
        position += advanced
        out.append(chosen.name if chosen is not None else None)
    return out


def test_on_demand_rotates_over_members_with_a_consumer_local_first():
    a, b, c, d = Q("A"), Q("B"), Q("C", consumer=False), Q("D")
    assert rotation(ON_DEMAND, a, [b, c, d], 6) == ["A", "B", "D", "A", "B", "D"]


def test_on_demand_keeps_it_local_when_nobody_consumes():
    a = Q("A", consumer=False)
    assert rotation(ON_DEMAND, a, [Q("B", consumer=False)], 3) == ["A", "A", "A"]


def test_on_demand_without_a_local_queue_still_delivers_a_subscription_held_elsewhere():
    assert rotation(ON_DEMAND, None, [Q("B", consumer=False), Q("C", consumer=False)], 4) == ["B", "C", "B", "C"]


def test_a_remote_queue_whose_filter_refuses_is_never_chosen():
    assert rotation(STRICT, Q("A"), [Q("B", accepts=False), Q("C")], 4) == ["A", "C", "A", "C"]


def test_strict_ignores_consumers():
    a, b = Q("A", consumer=False), Q("B", consumer=False)
    assert rotation(STRICT, a, [b], 4) == ["A", "B", "A", "B"]


@pytest.mark.parametrize("mode", [OFF, OFF_WITH_REDISTRIBUTION])
def test_off_never_forwards(mode):
    assert rotation(mode, Q("A", consumer=False), [Q("B")], 3) == ["A", "A", "A"]
    assert rotation(mode, None, [Q("B")], 2) == [None, None]


def test_initial_connect_attempts_count_every_attempt_and_reconnect_attempts_count_those_after_the_break():
    # initial-connect-attempts 3: down after the third failed attempt, not the fourth
    assert [gives_up(n, False, 3, -1) for n in (1, 2, 3)] == [False, False, True]
    assert gives_up(1, False, 0, -1) and gives_up(1, False, 1, -1)  # one attempt is always made
    assert not gives_up(1_000, False, -1, 0)  # -1: never
    # reconnect-attempts 2: two more attempts after the break; 0: down at the break itself
    assert [gives_up(n, True, -1, 2) for n in (0, 1, 2)] == [False, False, True]
    assert gives_up(0, True, -1, 0)
    assert not gives_up(1_000, True, 5, -1)


def test_retry_delays_grow_by_the_multiplier_up_to_the_maximum():
    assert list(islice(retry_delays(500, 1.0, 2000), 4)) == [500, 500, 500, 500]
    assert list(islice(retry_delays(100, 2.0, 1000), 6)) == [100, 200, 400, 800, 1000, 1000]
    assert list(islice(retry_delays(3000, 1.5, 2000), 2)) == [2000, 2000]


def test_the_starter_configs_cluster_connection_example_is_every_parameter_at_its_default():
    from meshmq.config.loader import default_dev_config_yaml, load_config_text
    from meshmq.config.models import ClusterConnection

    text = default_dev_config_yaml()
    block = text[text.index("# connectors:"):text.index("# Shared store")]
    uncommented = "\n".join(line[2:] for line in block.splitlines() if line.startswith("# "))
    cc = load_config_text(uncommented).cluster_connections["my-cluster"]
    assert cc == ClusterConnection(static_connectors=("other-node",))
    listed = {line.split(":")[0].strip() for line in uncommented.splitlines()[4:]}
    assert listed == {name.replace("_", "-") for name in ClusterConnection.model_fields}


class FakeLink:
    def __init__(self, name, local="me", spec=""):
        from services.router.cluster.address_match import AddressMatch

        self.name, self.local_node_id, self.matches = name, local, AddressMatch(spec).matches


def binding(node, queue, address="orders", hops=1, consumers=()):
    from meshmq.v1 import cluster_pb2 as cpb

    return cpb.ClusterBinding(node_id=node, node_name=node.upper(), queue=queue, address=address, hops=hops,
                              consumer_filters=list(consumers))


def test_remote_bindings_keep_the_nearest_copy_and_drop_our_own_and_unmatched_addresses():
    from services.router.cluster.bindings import RemoteBindings

    changed = []
    reg = RemoteBindings(lambda addresses: changed.append(sorted(addresses)))
    to_b, to_c = FakeLink("cc->b"), FakeLink("cc->c", spec="orders")
    reg.apply(to_b, [binding("b", "q1"), binding("c", "q1", hops=2), binding("me", "q1"),
                     binding("b", "$.meshmq.sf.cc.x"), binding("b", "n1", address="news")])
    assert sorted((rb.node_id, rb.queue, rb.link.name) for rb in reg.all()) == [
        ("b", "n1", "cc->b"), ("b", "q1", "cc->b"), ("c", "q1", "cc->b")]
    reg.apply(to_c, [binding("c", "q1", hops=1, consumers=["", "x > 1"]), binding("c", "n2", address="news")])
    group = reg.for_address("orders")["q1"]
    assert [(rb.node_name, rb.hops, rb.link.name) for rb in group] == [("B", 1, "cc->b"), ("C", 1, "cc->c")]
    assert group[1].consumer_filters == ("", "x > 1")
    assert "n2" not in reg.for_address("news")  # cc->c balances "orders" only
    reg.drop(to_c)
    assert [(rb.node_name, rb.hops) for rb in reg.for_address("orders")["q1"]] == [("B", 1), ("C", 2)]
    assert changed[-1] == ["orders"]
    reg.drop(to_b)
    assert reg.all() == [] and not reg.for_address("orders")


class G(Q):
    def __init__(self, name, routing_type, **kw):
        super().__init__(name, **kw)
        self.routing_type = routing_type


def test_an_address_held_only_elsewhere_gives_each_multicast_group_a_copy_and_one_anycast_group_the_message():
    groups = {"sub1": [G("A.sub1", MULTICAST)], "tmp": [G("A.tmp", ANYCAST), G("C.tmp", ANYCAST)],
              "sub2": [G("C.sub2", MULTICAST)], "other": [G("A.other", ANYCAST)]}
    first = lambda name, members: members[0]  # noqa: E731
    positions: dict[str, int] = {}
    picked = [[m.name for m in remote_only(groups, 0, first, positions)] for _ in range(3)]
    assert picked == [["A.sub1", "C.sub2", "A.tmp"], ["A.sub1", "C.sub2", "A.other"], ["A.sub1", "C.sub2", "A.tmp"]]
    assert [m.name for m in remote_only(groups, ANYCAST, first, {})] == ["A.tmp"]
    assert [m.name for m in remote_only(groups, MULTICAST, first, {})] == ["A.sub1", "C.sub2"]


def test_an_anycast_group_nobody_in_which_takes_the_message_passes_it_to_the_next():
    groups = {"refuses": [G("A.refuses", ANYCAST, accepts=False)], "takes": [G("B.takes", ANYCAST)]}

    def pick(name, members):
        return choose(ON_DEMAND, None, members, None, 0)[0]
    assert [m.name for m in remote_only(groups, 0, pick, {})] == ["B.takes"]
    assert remote_only({"refuses": groups["refuses"]}, 0, pick, {}) == []  # nobody: routed as before (auto-create…)


def test_a_temporary_queues_binding_is_named_as_temporary_and_its_round_robin_goes_with_the_address():
    from services.router.cluster.bindings import TEMPORARY_MARK, RemoteBindings

    reg = RemoteBindings(lambda addresses: None)
    link = FakeLink("cc->b")
    temp = binding("b", "reply", address="reply")
    temp.temporary = True
    reg.apply(link, [temp, binding("b", "q1")])
    [rb] = reg.for_address("reply")["reply"]
    assert rb.key == "b/reply" + TEMPORARY_MARK and reg.find(rb.key) is rb and rb.to_proto(2).temporary
    assert reg.find("b/q1").key == "b/q1"
    reg.positions("reply")["reply"] = 3
    reg.apply(link, [temp, binding("b", "q1")])
    assert reg.positions("reply") == {"reply": 3}  # kept while the address is known
    reg.apply(link, [binding("b", "q1")])  # the requester left
    reg.apply(link, [temp, binding("b", "q1")])
    assert reg.positions("reply") == {}  # went with it
