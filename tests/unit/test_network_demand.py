"""The demand decider of network connectors and the tree connector
(services/router/network/demand.py), driven over small networks of
in-process nodes (simulation.py): who ends up forwarding to whom, with the
seed's examples and figures."""

from __future__ import annotations

import pytest

from meshmq.config.destination_wildcards import DestinationFilter
from services.router.network.demand import (
    CHILD, PEER, QUEUE, TOPIC, Changes, Demand, Destination, LinkPolicy, LinkSpec, NetworkDemand, OfferDelta,
)
from services.router.network.simulation import Network, link_to

ORDERS = Destination(QUEUE, "ORDERS")


def subs(net: Network, node: str, peer: str) -> dict[str, tuple[str, int, bool]]:
    """key -> (selector, priority, static) of `node`'s subscriptions toward `peer`."""
    return {s.key: (s.selector, s.priority, s.static) for s in net.nodes[node].subscriptions(link_to(peer))}


def forwarding(net: Network) -> set[tuple[str, str]]:
    """(node, peer) for every link a node holds a dynamic subscription on (a return one aside)."""
    return {(node_id, peer) for node_id, node in net.nodes.items() for peer in net.neighbours[node_id]
            if any(not s.static and not s.replay for s in node.subscriptions(link_to(peer)))}


def state(net: Network) -> dict:
    """Every node's offers and subscriptions, order aside."""
    return {(node_id, link_id): (sorted(map(repr, node.offer(link_id))), sorted(map(repr, node.subscriptions(link_id))))
            for node_id, node in net.nodes.items() for link_id in map(link_to, net.neighbours[node_id])}


def consume(net: Network, node: str, consumer: str, dest: Destination = ORDERS, selector: str = "", **kw):
    return net.deliver(node, net.nodes[node].consumer_added(consumer, dest, selector, **kw))


def mesh(edges: str, policy: LinkPolicy) -> Network:
    """Duplex connectors for "A-B B-C ..."."""
    net = Network()
    for edge in edges.split():
        a, b = edge.split("-")
        net.connect(a, b, policy, duplex=True)
    return net


def test_a_one_way_connector_takes_demand_from_b_and_gives_none_to_it():
    net = Network()
    net.connect("A", "B")  # defined on A: messages A→B, demand B→A
    on_b = consume(net, "B", "c1")
    assert on_b.messages == 1 and subs(net, "A", "B") == {"queue:ORDERS": ("", 0, False)}
    on_a = consume(net, "A", "c2", Destination(QUEUE, "REPLIES"))
    assert on_a.messages == 0 and subs(net, "B", "A") == {}


def test_a_duplex_connector_carries_demand_both_ways():
    net = Network()
    net.connect("A", "B", duplex=True)
    consume(net, "A", "c1")
    consume(net, "B", "c2", Destination(TOPIC, "prices"))
    assert subs(net, "B", "A") == {"queue:ORDERS": ("", 0, False)}
    assert subs(net, "A", "B") == {"topic:prices": ("", 0, False)}


def test_a_conduit_carries_the_or_of_its_consumers_selectors():
    """The guide's stuck-message case: one subscription that takes us and emea, and so never apac."""
    net = Network()
    net.connect("A", "B")
    consume(net, "B", "C1", selector="region = 'us'")
    second = consume(net, "B", "C2", selector="region = 'emea'")
    assert second.subscriptions_created == 1  # the update of the one conduit subscription
    assert subs(net, "A", "B") == {"queue:ORDERS": ("(region = 'us') OR (region = 'emea')", 0, False)}
    consume(net, "B", "C3")
    assert subs(net, "A", "B") == {"queue:ORDERS": ("", 0, False)}  # a consumer that takes everything
    net.deliver("B", net.nodes["B"].consumer_removed("C3"))
    assert subs(net, "A", "B") == {"queue:ORDERS": ("(region = 'us') OR (region = 'emea')", 0, False)}


def test_without_conduit_each_consumer_is_a_subscription():
    net = Network()
    net.connect("A", "B", LinkPolicy(conduit_subscriptions=False))
    consume(net, "B", "C1", selector="region = 'us'")
    consume(net, "B", "C2", selector="region = 'emea'")
    assert subs(net, "A", "B") == {"queue:ORDERS#B/C1": ("region = 'us'", 0, False),
                                   "queue:ORDERS#B/C2": ("region = 'emea'", 0, False)}


@pytest.mark.parametrize(("ttl", "forwarders"), [(1, {("C", "D")}), (2, {("C", "D"), ("B", "C")}),
                                                 (3, {("C", "D"), ("B", "C"), ("A", "B")})])
def test_network_ttl_bounds_how_far_demand_goes_along_a_chain(ttl, forwarders):
    net = mesh("A-B B-C C-D", LinkPolicy(consumer_ttl=ttl))
    consume(net, "D", "c1")
    assert forwarding(net) == forwarders


@pytest.mark.parametrize("edges", ["A-B B-C C-A", "A-B B-C C-D D-E E-A"])
def test_demand_never_returns_to_its_origin_round_a_loop(edges):
    net = mesh(edges, LinkPolicy(consumer_ttl=10))
    consume(net, "A", "c1")  # returns: the messages run out
    others = set(net.nodes) - {"A"}
    assert {node for node, _ in forwarding(net)} == others
    neighbours = net.neighbours["A"]
    assert all(net.nodes["A"].subscriptions(link_to(p)) == [] for p in neighbours)
    assert all("A" not in d.path for p in neighbours for d in net.nodes[p].offer(link_to("A")))


def test_decrease_network_consumer_priority_prefers_the_shortest_route_in_the_seeds_mesh():
    """Figure 2.18: P on B, C1 on E; routes B-E (one hop), B-A-F-E and B-C-D-E (three)."""
    net = mesh("A-B B-C C-D D-E E-F F-A B-E", LinkPolicy(consumer_ttl=3, decrease_network_consumer_priority=True))
    consume(net, "E", "C1")
    assert subs(net, "B", "E") == {"queue:ORDERS": ("", -5, False)}
    assert subs(net, "B", "A") == {"queue:ORDERS": ("", -7, False)}
    assert subs(net, "B", "C") == {"queue:ORDERS": ("", -7, False)}


def test_suppress_duplicate_queue_subscriptions_leaves_one_route_in_the_seeds_triangle():
    """Figure 2.19: A, B, C fully connected, TTL 2, C1 on B: A forwards only toward B, and toward C
    again once the link to B is gone."""
    plain = mesh("A-B B-C C-A", LinkPolicy(consumer_ttl=2))
    consume(plain, "B", "C1")
    assert {p for n, p in forwarding(plain) if n == "A"} == {"B", "C"}

    net = mesh("A-B B-C C-A", LinkPolicy(consumer_ttl=2, suppress_duplicate_queue_subscriptions=True))
    consume(net, "B", "C1")
    assert forwarding(net) == {("A", "B"), ("C", "B")}
    net.disconnect("A", "B")
    assert forwarding(net) == {("A", "C"), ("C", "B")}


def test_included_and_excluded_destinations_with_wildcards():
    """Example 2.4's shape: stock prices on any exchange but the NYSE; topics configured apart."""
    policy = LinkPolicy(queues=DestinationFilter(["PRICE.STOCK.>"], ["PRICE.STOCK.NYSE.*"]),
                        topics=DestinationFilter(excluded=[">"]))
    net = Network()
    net.connect("A", "B", policy)
    for i, name in enumerate(["PRICE.STOCK.NASDAQ.IBM", "PRICE.STOCK.NYSE.IBM", "ORDERS"]):
        consume(net, "B", f"q{i}", Destination(QUEUE, name))
    consume(net, "B", "t1", Destination(TOPIC, "PRICE.STOCK.NASDAQ.IBM"))
    assert set(subs(net, "A", "B")) == {"queue:PRICE.STOCK.NASDAQ.IBM"}


def test_static_destinations_are_subscriptions_without_demand():
    """Figure 2.14: TEST.FOO static on A→B, B→C, C→D and C→E: every node forwards it onwards."""
    net = Network()
    policy = LinkPolicy(static_queues=("TEST.FOO",))
    traffic = [net.connect(a, b, policy) for a, b in [("A", "B"), ("B", "C"), ("C", "D"), ("C", "E")]]
    assert [t.subscriptions_created for t in traffic] == [1, 1, 1, 1] and sum(t.messages for t in traffic) == 0
    for a, b in [("A", "B"), ("B", "C"), ("C", "D"), ("C", "E")]:
        assert subs(net, a, b) == {"static:queue:TEST.FOO": ("", 0, True)}
    consume(net, "E", "c1", Destination(QUEUE, "TEST.FOO"))  # demand adds its own, beside the static one
    assert subs(net, "C", "E") == {"static:queue:TEST.FOO": ("", 0, True), "queue:TEST.FOO": ("", 0, False)}
    excluded = Network()
    excluded.connect("A", "B", LinkPolicy(static_queues=("TEST.FOO",), queues=DestinationFilter(excluded=["TEST.>"])))
    assert subs(excluded, "A", "B") == {}  # exclusions win over static inclusion, as in ActiveMQ


@pytest.mark.parametrize(("dynamic_only", "expected"), [(False, {"topic:news"}), (True, set())])
def test_a_durable_subscription_without_consumer_is_demand_unless_dynamic_only(dynamic_only, expected):
    net = Network()
    net.connect("A", "B", LinkPolicy(dynamic_only=dynamic_only))
    consume(net, "B", "d1", Destination(TOPIC, "news"), durable_subscription=True, active=False)
    assert set(subs(net, "A", "B")) == expected


@pytest.mark.parametrize(("bridge", "expected"), [(True, {"queue:tmp.1"}), (False, set())])
def test_temporary_queues_are_demand_only_with_bridge_temp_destinations(bridge, expected):
    net = Network()
    net.connect("A", "B", LinkPolicy(bridge_temp_destinations=bridge))
    consume(net, "B", "r1", Destination(QUEUE, "tmp.1"), temporary=True)
    assert set(subs(net, "A", "B")) == expected


def test_a_consumer_removed_withdraws_its_demand_everywhere():
    net = mesh("A-B B-C C-D D-A A-C", LinkPolicy(consumer_ttl=3))
    consume(net, "D", "c1")
    assert forwarding(net)
    traffic = net.deliver("D", net.nodes["D"].consumer_removed("c1"))
    assert forwarding(net) == set() and traffic.subscriptions_removed > 0
    assert all(not net.nodes[n].offer(link_to(p)) for n in net.nodes for p in net.neighbours[n])


def tree() -> Network:
    """root; branches b0 (leaves l0, l1) and b1 (leaf l2)."""
    net = Network()
    for child, parent in [("b0", "root"), ("b1", "root"), ("l0", "b0"), ("l1", "b0"), ("l2", "b1")]:
        net.connect_tree(child, parent)
    return net


@pytest.mark.parametrize(("where", "forwarders"), [
    ("l0", {("b0", "l0"), ("root", "b0")}),  # up to the root, never to the sibling l1 nor down b1
    ("b0", {("root", "b0"), ("l0", "b0"), ("l1", "b0")}),  # up, and down to its children
    ("root", {("b0", "root"), ("b1", "root"), ("l0", "b0"), ("l1", "b0"), ("l2", "b1")}),  # down to all
])
def test_tree_demand_goes_up_to_the_root_and_down_only_from_where_it_started(where, forwarders):
    net = tree()
    traffic = consume(net, where, "c1", Destination(QUEUE, "store-1.incoming"))
    assert forwarding(net) == forwarders
    assert traffic.messages == len(forwarders) == traffic.subscriptions_created


def test_tree_demand_ignores_network_ttl():
    net = Network()
    for child, parent in [("b0", "root"), ("l0", "b0")]:
        net.connect_tree(child, parent, LinkPolicy(tree=True, consumer_ttl=1))
    consume(net, "l0", "c1")
    assert forwarding(net) == {("b0", "l0"), ("root", "b0")}


def test_a_leaf_registration_costs_the_depth_however_many_siblings():
    net = Network()
    net.connect_tree("b0", "root")
    for i in range(200):
        net.connect_tree(f"l{i}", "b0")
    traffic = consume(net, "l7", "c1", Destination(QUEUE, "store-7.incoming"))
    assert (traffic.messages, traffic.subscriptions_created) == (2, 2)
    assert set(traffic.received_by) == {"b0", "root"}


def test_removing_a_link_withdraws_what_came_over_it():
    net = mesh("A-B B-C", LinkPolicy(consumer_ttl=2))
    consume(net, "C", "c1")
    assert forwarding(net) == {("A", "B"), ("B", "C")}
    traffic = net.disconnect("B", "C")
    assert forwarding(net) == set() and traffic.subscriptions_removed == 2
    assert net.nodes["A"].offer(link_to("B")) == [] and net.nodes["B"].offer(link_to("A")) == []


def test_a_reset_and_the_peers_full_offer_give_back_the_same_state():
    net = mesh("A-B B-C C-D D-A A-C", LinkPolicy(consumer_ttl=3, conduit_subscriptions=False,
                                                  decrease_network_consumer_priority=True))
    consume(net, "D", "c1", selector="x = 1")
    consume(net, "B", "c2", Destination(TOPIC, "t"))
    before = state(net)
    for node, peer in [("A", "B"), ("C", "D")]:  # the link reconnects: forget, then the peer's whole offer
        net.deliver(node, net.nodes[node].reset(link_to(peer)))
        full = OfferDelta(added=net.nodes[peer].offer(link_to(node)))
        net.deliver(node, net.nodes[node].received(link_to(peer), full))
    assert state(net) == before


def test_changes_merge_as_one_delta():
    d = Destination(QUEUE, "q")
    item = Demand("queue:q", d, "", ("B",), 1, frozenset({"B/c"}))
    merged = Changes(offers={"l": OfferDelta(added=[item])}).merge(Changes(offers={"l": OfferDelta(removed=["queue:q"])}))
    assert merged.offers["l"] == OfferDelta(removed=["queue:q"])
    merged = Changes(offers={"l": OfferDelta(removed=["queue:q"])}).merge(Changes(offers={"l": OfferDelta(added=[item])}))
    assert merged.offers["l"] == OfferDelta(added=[item])
    assert not Changes().merge(Changes())


def test_a_consumer_leaving_its_durable_subscription_updates_the_peers_subscription_in_place():
    """On B the consumer going and its idle durable subscription staying are two
    events; folded into one update, as the connectors send them, A updates its
    network subscription and never removes it (removing it deletes its queue,
    with the messages on their way into it: the idle subscription lost them)."""
    net = Network()
    net.connect("A", "B")
    news = Destination(TOPIC, "news")
    consume(net, "B", "c1", news, durable_subscription=True)
    b = net.nodes["B"]
    left = Changes().merge(b.consumer_removed("c1")).merge(
        b.consumer_added("subscription/archive", news, "", durable_subscription=True, active=False))
    traffic = net.deliver("B", left)
    assert (traffic.messages, traffic.subscriptions_removed) == (1, 0)
    assert set(subs(net, "A", "B")) == {"topic:news"}


def test_bad_input_is_refused_with_what_was_wrong():
    node = NetworkDemand("A")
    with pytest.raises(ValueError, match="no link 'to-X'"):
        node.reset("to-X")
    with pytest.raises(ValueError, match="policy.tree=True"):
        LinkSpec("to-B", "B", CHILD, LinkPolicy(), True, True)
    with pytest.raises(ValueError, match="kind 'queues'"):
        Destination("queues", "q")
    with pytest.raises(ValueError, match="consumer_ttl 0"):
        LinkPolicy(consumer_ttl=0)
    node.add_link(LinkSpec("to-B", "B", PEER, LinkPolicy(), offers=True, subscribes=False))
    with pytest.raises(ValueError, match="takes no demand"):
        node.received("to-B", OfferDelta())
    node.consumer_added("c1", ORDERS)
    with pytest.raises(ValueError, match="'c1' is registered already"):
        node.consumer_added("c1", ORDERS)


def moved_leaf_tree() -> Network:
    """hq with branches b1 and b2; leaf s (incarnation 1) and s11 under b1."""
    net = Network()
    for child, parent in [("b1", "hq"), ("b2", "hq"), ("s11", "b1")]:
        net.connect_tree(child, parent)
    net.nodes["s"] = NetworkDemand("s", incarnation=1)
    net.connect_tree("s", "b1")
    return net


def test_a_leaf_moved_with_its_consumer_attached_is_found_under_its_new_branch_and_its_old_demand_goes():
    net = moved_leaf_tree()
    consume(net, "s", "c1")
    assert forwarding(net) == {("hq", "b1"), ("b1", "s")}
    net.move("s", "b2", incarnation=2)  # went down with c1 attached: b1 still holds its demand
    assert forwarding(net) == {("hq", "b1"), ("b1", "s")}

    traffic = consume(net, "s", "c1")
    # hq prefers the newer attachment, tells b1 (one notice), and b1 withdraws the leaf's old demand.
    assert forwarding(net) == {("hq", "b2"), ("b2", "s")}
    assert traffic.messages == 2 + 2 and traffic.received_by == {"b2": 1, "hq": 2, "b1": 1}
    assert net.nodes["b1"].offer(link_to("hq")) == []
    # What waited on b1 for s goes back up: a return subscription toward hq, s's sf queue emptied.
    assert [(s.key, s.replay) for s in net.nodes["b1"].subscriptions(link_to("hq"))] == [("return:queue:ORDERS", True)]
    assert ("b1", link_to("s")) in traffic.stranded

    # Nothing circles: hq takes no return subscription, and a message for s has one route from hq.
    assert all(not s.replay for s in net.nodes["hq"].subscriptions(link_to("b1")))
    # The leaf's next consumer costs the depth again, and no notice.
    again = consume(net, "s", "c2", Destination(QUEUE, "OTHER"))
    assert again.messages == 2 and not again.stranded


def test_a_moved_leaf_leaves_its_old_branchs_other_leaves_as_they_were():
    net = moved_leaf_tree()
    consume(net, "s", "c1", selector="x = 1")
    consume(net, "s11", "c1", selector="x = 2")
    net.move("s", "b2", incarnation=2)
    consume(net, "s", "c1", selector="x = 3")
    assert forwarding(net) == {("hq", "b1"), ("b1", "s11"), ("hq", "b2"), ("b2", "s")}
    assert subs(net, "hq", "b1") == {"queue:ORDERS": ("x = 2", 0, False)}  # b1 folds without s now
    assert subs(net, "b1", "hq") == {"return:queue:ORDERS": ("x = 1", 0, False)}
    # The leaf comes back to b1 later (incarnation 3): b2's hold on it goes as b1's did.
    net.move("s", "b1", incarnation=3)
    consume(net, "s", "c1")
    assert subs(net, "hq", "b2") == {} and subs(net, "b2", "hq") == {"return:queue:ORDERS": ("x = 3", 0, False)}
    assert subs(net, "hq", "b1") == {"queue:ORDERS": ("", 0, False)}
    assert subs(net, "b1", "hq") == {}  # s's demand at b1 is current again: nothing to return


def test_a_leaf_restarting_under_the_same_branch_supersedes_nothing():
    net = moved_leaf_tree()
    consume(net, "s", "c1")
    net.move("s", "b1", incarnation=2)  # b1's link to s comes up again: reset, then s's whole offer
    traffic = consume(net, "s", "c1")
    assert forwarding(net) == {("hq", "b1"), ("b1", "s")} and not traffic.stranded
    assert subs(net, "b1", "hq") == {} and subs(net, "hq", "b1") == {"queue:ORDERS": ("", 0, False)}


def test_each_node_knows_the_link_toward_where_a_moved_leaf_is_now():
    """`toward` (a moved leaf's topic messages follow it): every node on the
    way, and the old branch once told, names the link leading to the leaf."""
    net = moved_leaf_tree()
    consume(net, "s", "c1", Destination(TOPIC, "news"))
    assert (net.nodes["hq"].toward("s"), net.nodes["b1"].toward("s")) == (link_to("b1"), link_to("s"))
    assert net.nodes["b2"].toward("s") is None  # a branch never sees another branch's leaves
    net.move("s", "b2", incarnation=2)
    consume(net, "s", "c1", Destination(TOPIC, "news"))
    assert [net.nodes[n].toward("s") for n in ("hq", "b1", "b2")] == [link_to("b2"), link_to("hq"), link_to("s")]
    # The leaf's old branch goes on knowing the way after its link to the leaf is removed.
    net.nodes["b1"].remove_link(link_to("s"))
    assert net.nodes["b1"].toward("s") == link_to("hq")


def test_an_incarnation_rises_with_the_stores_epoch_and_outranks_the_start_times_sent_before():
    """No clock: the store's epoch (each start raises it) orders a node's
    incarnations; the first one is above any start time in ms, which earlier
    versions sent, so a leaf upgraded in place supersedes its old attachment."""
    import time

    from services.router.network.connectors import incarnation

    assert incarnation(1) > time.time_ns() // 1_000_000 * 2  # beyond any start time in ms for a century
    assert [incarnation(e) for e in (1, 2, 3)] == sorted({incarnation(e) for e in (1, 2, 3)})
    assert incarnation(922_337) < 2**63  # the wire's int64
