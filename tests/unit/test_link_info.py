"""GetClusterState's BridgeInfo for each kind of link: a cluster bridge is
kind "cluster", dialed by its node; a network or tree link says its kind,
which end dialed, its role and the demand it carries; the metrics name the
same links in the meshmq_link_* family, by kind."""

from __future__ import annotations

from types import SimpleNamespace

from meshmq.link_kinds import describe_kind
from meshmq.metrics import Families
from services.router.management import link_info
from services.router.metrics import link_metrics


def _link(**extra) -> SimpleNamespace:
    """A link as management reads it: a cluster bridge unless `extra` says otherwise."""
    common = dict(name="l", cc_name="cc", endpoint="127.0.0.1:1", target_node_id="n-b", target_node_name="B",
                  kind="cluster", dialer=True, state="connected", problem="", routed=7, forwarded=6, batches=2, confirmed=5, pending=2, retries=1,
                  demand_received=3, _sf=SimpleNamespace(name="$.meshmq.sf.cc.n-b"))
    return SimpleNamespace(**{**common, **extra})


def test_a_cluster_bridge_is_kind_cluster_and_dialed_out():
    info = link_info(_link())
    assert (info.kind, info.direction, info.role, info.duplex, info.subscriptions) == ("cluster", "out", "", False, 0)
    assert (info.demand_sent, info.demand_received) == (0, 3)  # the bindings snapshots it was offered
    assert (info.cluster_connection, info.target_node_name, info.routed, info.forwarded, info.batches,
            info.confirmed, info.pending, info.retries, info.store_and_forward_queue) == (
        "cc", "B", 7, 6, 2, 5, 2, 1, "$.meshmq.sf.cc.n-b")


def test_an_accepted_tree_link_names_its_role_and_demand():
    link = _link(kind="tree", dialer=False, duplex=True, role="child", demand_sent=3,
                 demand_received=4, subscriptions={"queue:a": object(), "topic:b": object()}, _sf=None)
    info = link_info(link)
    assert (info.kind, info.direction, info.duplex, info.role, info.demand_sent, info.demand_received,
            info.subscriptions, info.store_and_forward_queue) == ("tree", "in", True, "child", 3, 4, 2, "")


def test_a_dialed_one_way_network_link_is_out_and_not_duplex():
    link = _link(kind="network", dialer=True, duplex=False, role="peer", demand_sent=0,
                 demand_received=9, subscriptions={})
    info = link_info(link)
    assert (info.kind, info.direction, info.duplex, info.role, info.demand_received) == (
        "network", "out", False, "peer", 9)


def test_each_links_kind_reads_as_the_cli_and_console_show_it():
    assert [describe_kind(link_info(link)) for link in (
        _link(),
        _link(kind="network", dialer=False, duplex=True, role="peer", demand_sent=0,
              demand_received=0, subscriptions={}),
        _link(kind="tree", dialer=True, duplex=True, role="parent", demand_sent=0,
              demand_received=0, subscriptions={}),
    )] == ["cluster", "network: in, duplex", "tree: parent"]


def test_every_link_is_in_the_meshmq_link_family_by_kind_and_only_network_links_count_demand():
    fam = Families(node="A")
    link_metrics([_link(),
                  _link(name="to-b<-B(n-b)", cc_name="to-b", kind="network", dialer=False, duplex=False, role="peer",
                        demand_sent=5, demand_received=0, subscriptions={"queue:q": object()})], fam)
    samples = {(s.name, s.labels["kind"], s.labels["direction"], s.labels["link"]): s.value
               for metric in fam for s in metric.samples}
    assert samples[("meshmq_link_connected", "cluster", "out", "l")] == 1
    assert samples[("meshmq_link_messages_forwarded_total", "cluster", "out", "l")] == 6
    assert samples[("meshmq_link_pending_messages", "network", "in", "to-b<-B(n-b)")] == 2
    assert samples[("meshmq_link_demand_sent_total", "network", "in", "to-b<-B(n-b)")] == 5
    assert samples[("meshmq_link_subscriptions", "network", "in", "to-b<-B(n-b)")] == 1
    assert not any(name.startswith(("meshmq_link_demand", "meshmq_link_subscriptions")) and kind == "cluster"
                   for name, kind, _, _ in samples)
