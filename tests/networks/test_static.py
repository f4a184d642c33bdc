"""Static propagation (staticallyIncludedDestinations) on real router
processes: the seed's chain A→B→C→{D,E}, where messages move with no
consumer anywhere, and a destination not so included that stays put."""

from __future__ import annotations

import pytest

from .network import queue_count, send, start_network, wait_count, wait_linked, wait_network_consumers

pytestmark = pytest.mark.integration

CHAIN = {"A": {"to-b": "B"}, "B": {"to-c": "C"}, "C": {"to-d": "D", "to-e": "E"}, "D": {}, "E": {}}


async def test_the_seeds_chain_puts_five_on_d_and_five_on_e(nodes):
    """10 sent to TEST.FOO on A with no consumer anywhere: static on every
    connector, they go A→B→C, and C sends them alternately to D and E.

    networkTTL: 4, not the default 1: ActiveMQ's messageTTL counts hops, the
    links a message has crossed (carried on it as _MQ_NETWORK_HOPS), and a
    link forwards a message only while its hops so far are below the TTL.
    A→B→C→D is three links, so the TTL must exceed the two hops a message has
    made on reaching C; with 1 the messages would stop on B."""
    static = {"staticallyIncludedDestinations": {"queues": ["TEST.FOO"]}, "networkTTL": 4}
    net = start_network(nodes, CHAIN, static)
    await wait_linked(net["A"], 1)
    await wait_linked(net["B"], 1)
    await wait_linked(net["C"], 2)
    await wait_network_consumers(net["C"], "TEST.FOO", 2)  # C's static subscriptions for D and E
    await send(net["A"], "TEST.FOO", 10)
    await wait_count(net["D"], "TEST.FOO", 5)
    await wait_count(net["E"], "TEST.FOO", 5)
    for name in "ABC":
        assert await queue_count(net[name], "TEST.FOO") == 0, name


async def test_a_destination_not_statically_included_waits_for_demand(nodes):
    static = {"staticallyIncludedDestinations": {"queues": ["TEST.FOO"]}, "networkTTL": 4}
    net = start_network(nodes, CHAIN, static)
    await wait_linked(net["A"], 1)
    await wait_linked(net["B"], 1)
    await wait_linked(net["C"], 2)
    await wait_network_consumers(net["C"], "TEST.FOO", 2)
    await send(net["A"], "TEST.BAR", 7)
    await send(net["A"], "TEST.FOO", 4)
    # TEST.FOO reaching D and E, sent after TEST.BAR, shows the links carry messages; TEST.BAR, with no
    # consumer, stays on A.
    await wait_count(net["D"], "TEST.FOO", 2)
    await wait_count(net["E"], "TEST.FOO", 2)
    assert await queue_count(net["A"], "TEST.BAR") == 7
    for name in "BCDE":
        assert await queue_count(net[name], "TEST.BAR") == 0, name
