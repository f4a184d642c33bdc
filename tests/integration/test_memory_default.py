"""Memory bounded by default (issue #25): a router whose configuration sets no
memory limit still has one (a share of the memory the process may use:
MESHMQ_MEMORY_LIMIT stands in here for a small cgroup), pages a queue filled
past it, recovers it after a kill -9 without loading it, and delivers every
message in order."""

from __future__ import annotations

import pytest

from meshmq.client import connect

from .test_paging import drain, expected, fill

pytestmark = pytest.mark.integration

# 16 MiB of memory for the process: the default global-max-size is an eighth of it.
LIMIT = 16 * 1024 * 1024


async def test_with_no_memory_configuration_a_deep_queue_pages_and_comes_back_in_order(nodes, monkeypatch):
    monkeypatch.setenv("MESHMQ_MEMORY_LIMIT", "16M")
    node = nodes.router("memory-default")  # no global-max-size, no max-size-bytes
    async with await connect(node.url) as conn:
        info = await conn.admin.node_info()
        assert info.global_max_size == LIMIT // 8
        await conn.admin.create_queue("deep", address="deep", routing_type="anycast")
        await fill(conn, "deep", 3000)  # ~6 MB as the router counts 1 KB messages: three times the bound
        q = await conn.admin.queue("deep")
        assert q.message_count == 3000 and q.paged_count >= 1800, q
        info = await conn.admin.node_info()
        assert 0 < info.memory_bytes <= info.global_max_size + 2100  # at most one message past it
    node.kill9()
    node.start()
    async with await connect(node.url) as conn:
        q = await conn.admin.queue("deep")
        assert q.message_count == 3000 and q.paged_count >= 1800  # recovery left the page in the store
        assert (await conn.admin.node_info()).memory_bytes <= LIMIT // 8 + 2100
        assert await drain(conn, "deep", 3000) == expected(3000)
        assert (await conn.admin.queue("deep")).message_count == 0
