"""DiscoveryCore over an in-memory backend: what List and Watch answer when
the backend is away, checks on updates, and watcher bookkeeping."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.discovery import DiscoveryConfigError, DiscoveryCore, DiscoveryUnavailableError, TopologyWatcher
from meshmq.discovery.static_backend import StaticBackend
from meshmq.v1 import discovery_pb2 as dpb


class FakeRegistration:
    def __init__(self, backend: FakeBackend, node: dpb.ClusterNode) -> None:
        self.backend = backend
        self.node = node
        self.lease_ttl_ms = 2000

    async def keep_alive(self) -> None:
        pass

    async def update(self, node: dpb.ClusterNode) -> None:
        self.node = node
        self.backend.put(node)

    async def leave(self) -> None:
        self.backend.nodes.pop(self.node.node_id)
        await self.backend.events.put(dpb.WatchNodesResponse(event=dpb.NodeEvent(kind=dpb.NODE_DOWN, node=self.node)))


class FakeBackend:
    description = "fake backend"
    min_refresh_timeout_ms = 0

    def __init__(self) -> None:
        self.nodes: dict[str, dpb.ClusterNode] = {}
        self.down = False
        self.events: asyncio.Queue = asyncio.Queue()

    def put(self, node: dpb.ClusterNode) -> None:
        self.nodes[node.node_id] = node
        self.events.put_nowait(dpb.WatchNodesResponse(event=dpb.NodeEvent(kind=dpb.NODE_UP, node=node)))

    async def check(self, timeout_s: float) -> None:
        pass

    async def register(self, node, *, refresh_timeout_ms, broadcast_period_ms) -> FakeRegistration:
        self.put(node)
        return FakeRegistration(self, node)

    async def list(self, cluster_name: str) -> list[dpb.ClusterNode]:
        if self.down:
            raise DiscoveryUnavailableError("fake backend is down")
        return sorted(self.nodes.values(), key=lambda n: n.node_id)

    async def watch(self, cluster_name: str):
        if self.down:
            raise DiscoveryUnavailableError("fake backend is down")
        yield dpb.WatchNodesResponse(snapshot=dpb.ClusterSnapshot(nodes=await self.list(cluster_name), available=True))
        while True:
            event = await self.events.get()
            if event is None:
                raise DiscoveryUnavailableError("fake backend went away")
            yield event

    async def go_away(self) -> None:
        self.down = True
        await self.events.put(None)

    async def close(self) -> None:
        pass


def join(node_id: str = "n1", **fields) -> dpb.AnnounceRequest.Join:
    node = dpb.ClusterNode(node_id=node_id, cluster_name="c", connector="127.0.0.1:1", instance_id="i1", **fields)
    return dpb.AnnounceRequest.Join(node=node, broadcast_period_ms=500, refresh_timeout_ms=2000)


@pytest.fixture
async def core():
    c = DiscoveryCore(FakeBackend(), refresh_timeout_ms=2000)
    yield c
    await c.close()


async def test_list_answers_the_last_known_topology_while_the_backend_is_away(core):
    await core.announce(join("n1"))
    assert (await core.list(dpb.ListNodesRequest(cluster_name="c"))).available
    view = core._views["c"]
    await view.wait_ready(1)
    await core.backend.go_away()
    listed = await core.list(dpb.ListNodesRequest(cluster_name="c"))
    assert (listed.available, [n.node_id for n in listed.nodes]) == (False, ["n1"])
    assert listed.message == "fake backend is down"


async def test_list_without_anything_known_is_unavailable(core):
    core.backend.down = True
    with pytest.raises(DiscoveryUnavailableError, match="fake backend is down"):
        await core.list(dpb.ListNodesRequest(cluster_name="c"))


async def test_a_watch_that_waits_for_its_first_snapshot_says_why(core):
    core.backend.down = True
    stream = core.watch(dpb.WatchNodesRequest(cluster_name="c"))
    first = await asyncio.wait_for(anext(stream), 5)
    assert first.status == dpb.DiscoveryStatus(available=False, message="fake backend is down")
    core.backend.down = False
    second = await asyncio.wait_for(anext(stream), 5)
    assert second.WhichOneof("kind") == "snapshot"
    await stream.aclose()


async def test_a_bad_cluster_name_is_refused(core):
    with pytest.raises(DiscoveryConfigError, match="cluster_name 'a/b'"):
        await core.list(dpb.ListNodesRequest(cluster_name="a/b"))


async def test_an_update_keeps_the_identity_and_the_first_announcement_time(core):
    membership = await core.announce(join("n1", announced_at_ms=1000))
    changed = dpb.ClusterNode()
    changed.CopyFrom(membership.node)
    changed.node_id = "n2"
    with pytest.raises(DiscoveryConfigError, match="may not change node_id"):
        await membership.update(changed)
    changed.node_id, changed.backup_connector, changed.announced_at_ms = "n1", "127.0.0.1:2", 5000
    await membership.update(changed)
    assert (membership.node.backup_connector, membership.node.announced_at_ms) == ("127.0.0.1:2", 1000)


async def test_a_bad_announcement_names_every_problem(core):
    bad = join("n1")
    bad.node.connector = "nowhere"
    bad.node.instance_id = ""
    with pytest.raises(DiscoveryConfigError) as err:
        await core.announce(bad)
    assert "connector: expected host:port" in str(err.value) and "instance_id is required" in str(err.value)


async def test_closing_a_watcher_unsubscribes_it_from_the_core():
    core = DiscoveryCore(StaticBackend(["127.0.0.1:61616"]))
    try:
        async with TopologyWatcher(core, "c") as watcher:
            assert [n.node_id for n in await watcher.wait_ready(1)] == ["static:127.0.0.1:61616"]
            view = core._views["c"]
            assert len(view._subscribers) == 1
        assert len(view._subscribers) == 0
    finally:
        await core.close()
