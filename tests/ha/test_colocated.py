"""Colocated backups on a shared store (Artemis's colocated HA policy, its
"typical configuration"): two lives, each on its own PostgreSQL store, each
hosting a backup of the other in its own process; a live killed with -9 is
taken over by the backup its peer hosts, which scales every message down to
that peer and stops. Real router processes, a real PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import Nodes, eventually, free_port

from .test_shared_store import LEASE, QUEUE, drain, log_has, node_info, send

pytestmark = pytest.mark.integration


def _offset_to_a_free_port(port: int) -> int:
    """A backup-port-offset that puts the hosted backup on a port free right now."""
    while (free := free_port()) <= port:
        pass
    return free - port


def colocated(nodes: Nodes, name: str, port: int, pg_url: str, peer: tuple[str, int], slave: str) -> object:
    peer_name, peer_port = peer
    return nodes.router(name, extra=(
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\n"
        f"connectors:\n  {peer_name}: 127.0.0.1:{peer_port}\n"
        f"cluster-connections:\n  cc: {{static-connectors: [{peer_name}]}}\n"
        f"journal:\n  url: {pg_url}\n{LEASE}"
        "ha-policy:\n  shared-store:\n    colocated:\n"
        "      request-backup: true\n      backup-request-retry-interval: 200\n"
        f"      backup-port-offset: {_offset_to_a_free_port(port)}\n"
        f"      excludes: [{peer_name}]\n"
        f"      slave: {{{slave}}}\n"
        f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"))


async def test_each_live_backs_up_the_other_and_a_killed_live_s_messages_end_up_on_its_peer(nodes, make_pg_url):
    px, py = free_port(), free_port()
    x = colocated(nodes, "x", px, make_pg_url(), ("y", py), "scale-down: {}")
    y = colocated(nodes, "y", py, make_pg_url(), ("x", px), "scale-down: {}")

    async def backed_up(node) -> bool:  # its store names the waiting backup its peer hosts
        info = await node_info(node)
        return not isinstance(info, Exception) and bool(info.backup_connector)
    await eventually(lambda: backed_up(x), 30, "x to be backed up by y")
    await eventually(lambda: backed_up(y), 30, "y to be backed up by x")
    assert (await node_info(x)).ha_policy == "shared-store colocated"
    assert log_has(y, "colocated: hosting colocated_backup_1, a backup of x")
    assert log_has(x, "colocated: y hosts a backup of this node")

    await send(x, 0, 100)
    await send(y, 1000, 10)
    await asyncio.to_thread(x.kill9)
    # y's hosted backup takes x's store over, moves its 100 messages to y (its host) and stops.
    await eventually(lambda: log_has(y, "colocated: colocated_backup_1 (backup of x) stopped"), 60,
                     "the backup of x to scale down and stop")
    assert log_has(y, "scaled down 100 messages to")
    assert y.proc.poll() is None  # the host goes on
    got = await drain(y, 110)
    assert sorted(got) == list(range(100)) + list(range(1000, 1010))  # each exactly once
    assert [n for n in got if n < 1000] == list(range(100))  # x's in their order


async def test_a_node_hosts_no_more_than_max_backups_and_says_why(nodes, make_pg_url):
    """Two lives ask the same host; with max-backups 1 it takes the first and refuses the second."""
    ph = free_port()
    host = nodes.router("h", extra=(
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {ph}}}\n"
        f"journal:\n  url: {make_pg_url()}\n{LEASE}"
        "connectors:\n  unused: 127.0.0.1:1\n"
        "cluster-connections:\n  cc: {static-connectors: [unused]}\n"
        "ha-policy:\n  shared-store:\n    colocated:\n"
        f"      max-backups: 1\n      backup-port-offset: {_offset_to_a_free_port(ph)}\n"
        "      excludes: [unused]\n"))
    lives = []
    # a asks until h takes it (a loaded machine may answer its first rounds late); b gives up after 3 rounds.
    for name, retries in (("a", 50), ("b", 2)):
        port = free_port()
        lives.append(nodes.router(name, extra=(
            f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\n"
            f"connectors:\n  h: 127.0.0.1:{ph}\n"
            "cluster-connections:\n  cc: {static-connectors: [h]}\n"
            f"journal:\n  url: {make_pg_url()}\n{LEASE}"
            "ha-policy:\n  shared-store:\n    colocated:\n"
            f"      request-backup: true\n      backup-request-retries: {retries}\n"
            "      backup-request-retry-interval: 200\n"
            f"      backup-port-offset: {_offset_to_a_free_port(port)}\n      excludes: [h]\n")))
        if name == "a":
            await eventually(lambda: log_has(lives[0], "colocated: h hosts a backup of this node"), 30,
                             "h to host a's backup")
    b = lives[1]
    await eventually(lambda: log_has(b, "after 3 rounds (backup-request-retries=2): it runs without one"), 30,
                     "b to give up")
    assert log_has(b, "h will not host a backup of this node: this node hosts max-backups=1 already")
    async with await connect(host.url) as conn:  # the host itself serves on
        assert (await conn.admin.node_info()).name == "h"


def colocated_replicating(nodes: Nodes, name: str, port: int, peers: dict[str, int]) -> object:
    connectors = "".join(f"  {peer}: 127.0.0.1:{peer_port}\n" for peer, peer_port in peers.items())
    return nodes.router(name, extra=(
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\n"
        f"connectors:\n{connectors}"
        f"cluster-connections:\n  cc: {{static-connectors: [{', '.join(peers)}], check-period: 500, "
        "connection-ttl: 2000}\n"
        "ha-policy:\n  replication:\n    colocated:\n"
        "      request-backup: true\n      backup-request-retry-interval: 200\n      max-backups: 2\n"
        f"      backup-port-offset: {_offset_to_a_free_port(port)}\n"
        f"      excludes: [{', '.join(peers)}]\n"
        "      master: {vote-retry-wait: 200, quorum-vote-wait: 2}\n"
        "      slave: {vote-retry-wait: 200, quorum-vote-wait: 2, scale-down: {}}\n"
        f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"))


async def test_by_replication_each_live_hosts_a_copy_of_another_and_a_killed_live_s_messages_move_to_its_host(
    nodes,
):
    """The seed's colocated example, with replication, on three lives: each hosted slave
    copies the live that asked into a store of its own; when that live is killed, the
    slave takes over and scales its messages down to its host; the live whose own copy
    died with the killed node goes on confirming (the third live takes the notice that
    the copy is stale)."""
    ports = {name: free_port() for name in ("x", "y", "z")}
    lives = {name: colocated_replicating(nodes, name, port, {p: q for p, q in ports.items() if p != name})
             for name, port in ports.items()}

    async def backed_up(node) -> bool:  # the live names its in-sync backup
        info = await node_info(node)
        return not isinstance(info, Exception) and bool(info.backup_connector)
    for node in lives.values():
        await eventually(lambda: backed_up(node), 30, f"{node.name}'s copy to be in sync")
    x = lives["x"]
    assert (await node_info(x)).ha_policy == "replication colocated"
    # (With max-backups 1, two lives may take each other and leave the third none: 2 here.)
    host, slot = next((n, slot) for n in lives.values() for slot in ("colocated_backup_1", "colocated_backup_2")
                      if log_has(n, f"colocated: hosting {slot}, a backup of x "))
    assert (nodes.tmp / f"{host.name}-data" / slot / "journal.db").is_file()  # its copy of x

    await send(x, 0, 100)
    await asyncio.to_thread(x.kill9)
    await eventually(lambda: log_has(host, f"colocated: {slot} (backup of x) stopped"), 60,
                     "the copy of x to take over, scale down and stop")
    assert log_has(host, "scaled down 100 messages to")
    assert all(n.proc.poll() is None for n in lives.values() if n is not x)
    got = await drain(host, 100)
    assert got == list(range(100))
    for node in lives.values():  # every survivor confirms again
        if node is not x:
            await send(node, 1000, 1)
