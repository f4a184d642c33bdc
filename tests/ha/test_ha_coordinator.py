"""The HA coordinator as a service of its own (`meshmq serve ha-coordinator`):
replicating routers with `manager: {class-name: coordinator}` take their lock,
epochs and in-sync mark through it instead of reaching etcd themselves. Two
coordinator instances in front of one real etcd, real router processes."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from meshmq.transport import open_channel
from meshmq.v1 import ha_coordinator_pb2 as hpb
from meshmq.v1 import ha_coordinator_pb2_grpc as hgrpc
from tests.fixtures.nodes import Nodes, ServiceProcess, eventually, free_port

from .test_replication import in_sync, pair
from .test_shared_store import answers, drain, log_has, node_info, send

pytestmark = pytest.mark.integration

NAMESPACE = "coord-test"


def coordinator(nodes: Nodes, name: str, etcd, extra: str = "") -> ServiceProcess:
    p = ServiceProcess(nodes.tmp, name, "ha-coordinator", (
        f"ha-coordinator:\n  listen: {{host: 127.0.0.1, port: {free_port()}}}\n"
        f"  etcd: {{endpoints: ['{etcd.endpoint}']}}\n{extra}"))
    nodes.started.append(p)
    return p.start()


def pair_through(nodes: Nodes, coordinators: list[ServiceProcess]) -> tuple:
    """A primary and its backup whose quorum manager is the HA coordinator."""
    connect_string = ",".join(c.endpoint for c in coordinators)
    return pair(nodes, None, manager=(
        f"manager: {{class-name: coordinator, properties: {{connect-string: '{connect_string}', "
        f"session-ms: 2000, session-percent: 25, namespace: {NAMESPACE}}}}}"))


async def quorums(coord: ServiceProcess, metadata=()) -> list[hpb.QuorumState]:
    channel = open_channel(coord.endpoint)
    try:
        reply = await hgrpc.HaCoordinatorStub(channel).ListQuorums(hpb.ListQuorumsRequest(namespace=NAMESPACE),
                                                                   metadata=metadata, timeout=5)
        return list(reply.quorums)
    finally:
        await channel.close()


async def test_a_primary_and_its_backup_decide_through_the_coordinator_and_outlive_one_instance(nodes, etcd):
    c1, c2 = coordinator(nodes, "coord1", etcd), coordinator(nodes, "coord2", etcd)
    primary, backup = pair_through(nodes, [c1, c2])
    await send(primary, 0, 100)
    await in_sync(primary, backup)
    node_id = primary.info["node_id"]
    (q,) = await quorums(c2)  # any instance shows every group
    assert (q.coordination_id, q.sequence) == (node_id, 1)
    assert q.holder.startswith("primary/") and q.in_sync_replica.startswith("backup/")
    assert q.live_connector == primary.endpoint

    # The first instance dies: the primary renews its lock through the second and serves on.
    await asyncio.to_thread(c1.kill9)
    await eventually(lambda: log_has(primary, f"now answered by {c2.endpoint}"), 10, "a renewal through coord2")
    await send(primary, 100, 150)  # confirmed: it still holds the lock and its backup has them
    assert primary.proc.poll() is None and not log_has(primary, "lease was not renewed")
    assert not await answers(backup)

    await asyncio.to_thread(primary.kill9)
    await eventually(lambda: answers(backup), 30, "the backup to take over through the coordinator")
    info = await node_info(backup)
    assert (info.node_id, info.epoch) == (node_id, 2)  # the epoch the coordinator granted
    assert await drain(backup, 250) == list(range(250))
    (q,) = await quorums(c2)
    assert q.sequence == 2 and q.holder.startswith("backup/") and q.in_sync_replica == ""


async def test_the_coordinator_refuses_callers_without_the_cluster_credential(nodes, etcd):
    c = coordinator(nodes, "coord", etcd, extra="cluster-password: a-secret-for-tests\n")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await quorums(c)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    from tests.fixtures.cluster_proof import member_proof

    assert await quorums(c, member_proof("a-secret-for-tests")) == []


async def test_a_bad_quorum_key_is_refused_naming_what_is_wrong(nodes, etcd):
    c = coordinator(nodes, "coord", etcd)
    channel = open_channel(c.endpoint)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await hgrpc.HaCoordinatorStub(channel).GetQuorum(
                hpb.QuorumKey(namespace=NAMESPACE, coordination_id="a/b"), timeout=5)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "coordination_id without '/'" in refused.value.details()
    finally:
        await channel.close()
