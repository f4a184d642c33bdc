"""Pairing by group-name, the seed's example exactly (issue 12): 5 lives and
6 backups — fish ×3 lives / 4 backups, bird ×2 / 2 — each backup trying
every live in turn until one of its group without a backup takes it. The
fish keep one spare; the birds pair one to one. Real routers and etcd."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.transport import open_channel
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import management_pb2_grpc as mggrpc
from tests.fixtures.nodes import eventually, free_port

from .test_shared_store import answers

pytestmark = pytest.mark.integration

LIVES = {"live1": "fish", "live2": "fish", "live3": "fish", "live4": "bird", "live5": "bird"}
BACKUPS = {"backup1": "fish", "backup2": "fish", "backup3": "fish", "backup4": "fish",
           "backup5": "bird", "backup6": "bird"}


async def named_backup(live) -> str:
    """The backup connector the live names in the topology it pushes."""
    channel = open_channel(live.endpoint)
    try:
        async for topology in mggrpc.ManagementStub(channel).WatchTopology(mgpb.WatchTopologyRequest(), timeout=3):
            return topology.members[0].backup_connector
        return ""
    finally:
        await channel.close()


async def test_five_lives_and_six_backups_pair_by_group_name(nodes, etcd):
    manager = (f"manager: {{properties: {{connect-string: '{etcd.endpoint}', session-ms: 2000, "
               "session-percent: 25, namespace: groups}}")
    ports = {name: free_port() for name in [*LIVES, *BACKUPS]}
    lives = {name: nodes.router(name, extra=(
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {ports[name]}}}\n"
        f"ha-policy:\n  replication:\n    primary: {{group-name: {group}, {manager}}}\n"))
        for name, group in LIVES.items()}
    connectors = ", ".join(f"{name}: '127.0.0.1:{ports[name]}'" for name in LIVES)
    backups = {name: nodes.router(name, extra=(
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {ports[name]}}}\n"
        f"connectors: {{{connectors}}}\n"
        f"cluster-connections: {{ha: {{static-connectors: [{', '.join(LIVES)}]}}}}\n"
        f"ha-policy:\n  replication:\n    backup: {{group-name: {group}, {manager}}}\n"))
        for name, group in BACKUPS.items()}
    by_endpoint = {f"127.0.0.1:{ports[name]}": name for name in BACKUPS}

    async def pairing() -> dict[str, str] | None:
        paired = {live: by_endpoint.get(await named_backup(proc), "") for live, proc in lives.items()}
        return paired if all(paired.values()) else None
    paired = await eventually(pairing, 30, "every live to name an in-sync backup")
    # Each live's backup is of its group, and no backup serves two lives.
    assert {live: BACKUPS[b] for live, b in paired.items()} == LIVES
    assert len(set(paired.values())) == 5
    spare = set(BACKUPS) - set(paired.values())
    assert len(spare) == 1 and BACKUPS[spare.pop()] == "fish"  # the fish keep one spare
    assert sorted(b for live, b in paired.items() if LIVES[live] == "bird") == ["backup5", "backup6"]
    for proc in backups.values():  # passive, all of them, the spare too
        assert not await answers(proc)
    # The pairs hold: idle streams live on pings (the quorum session is 2 s, a ping every 0.25 s).
    # A read cancelled by a timeout once ended every stream after 0.5 s, and each backup
    # copied a live again and again; three such periods later, each copied once.
    await asyncio.sleep(1.5)
    assert {b: backups[b].log_path.read_text().count("copy installed") for b in paired.values()} == {
        b: 1 for b in paired.values()}
