"""A fault-tolerant network on real router processes: a network connector
to a live/backup pair (`static:(failover:(live,backup))`) follows the pair's
failover, and the bridge's duplicate ids keep every message to exactly once
across it."""

from __future__ import annotations

import asyncio

import pytest

from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually, free_port
from tests.ha.test_client_failover import failover_client
from tests.ha.test_replication import in_sync, pair
from tests.ha.test_shared_store import QUEUE, answers

from .network import link_states, network_yaml, queue_count, send, wait_linked, wait_network_consumers

pytestmark = pytest.mark.integration

N = 200


async def test_a_link_to_a_live_backup_pair_follows_a_kill_9_without_loss_or_duplicate(nodes, etcd):
    live, backup = pair(nodes, etcd)
    await in_sync(live, backup)
    port = free_port()
    uri = f"static:(failover:(meshmq://{live.endpoint},meshmq://{backup.endpoint}))"
    a = nodes.router("A", extra=network_yaml(port, {"to-pair": {"uri": uri}}))
    await wait_linked(a, 1)
    conn = await failover_client(live.url)
    try:
        consumer = await (await conn.session()).create_consumer(QUEUE)
        await wait_network_consumers(a, QUEUE, 1)
        await send(a, QUEUE, N // 2)
        await asyncio.to_thread(live.kill9)  # midway: some of the first half may be in flight
        await send(a, QUEUE, N // 2, offset=N // 2)
        await eventually(lambda: answers(backup), 30, "the backup to take over")
        got = await collect({"pair": consumer}, N, deadline=60)
    finally:
        await conn.close()
    assert sorted(got["pair"]) == list(range(N))  # each once: none lost, none twice
    # The one link now leads to the backup, which serves the live's node id (so the same store-and-forward
    # queue carried on); each message confirmed once (a batch the live took and never confirmed is sent
    # again, so `forwarded` may count more, and the backup's duplicate ids drop what it already had).
    [link] = await link_states(a)
    assert (link.state, link.endpoint, link.target_node_name) == ("connected", backup.endpoint, "backup")
    assert link.target_node_id == live.info["node_id"]
    assert (link.pending, link.confirmed) == (0, N)
    assert await queue_count(a, QUEUE) == 0
