"""The network topologies of deploy/local/ started by the launcher, each
showing its routing: a message sent where the file's header says arrives
where it says. The files name each other's ports (a connector's uri names
its target), so they run here with every fixed port replaced by a free one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from meshmq.client import connect
from meshmq.launcher import LocalCluster, load_cluster_spec
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually, free_port
from tests.networks.network import send_to

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "local"


def on_free_ports(example: str, tmp_path: Path) -> Path:
    """A copy of deploy/local/`example` with each port it fixes (`port:` keys)
    replaced, wherever it appears, by a free one."""
    text = (EXAMPLES / example).read_text()
    for port in sorted(set(re.findall(r"port: (\d+)", text))):
        text = re.sub(rf"\b{port}\b", str(free_port()), text)
    copy = tmp_path / example
    copy.write_text(text)
    return copy


async def up(launched, example: str, tmp_path: Path) -> dict[str, str]:
    """Launch the example; each node's client URL by name (pinned to that
    node: the client would otherwise spread sessions over the topology)."""
    state = await LocalCluster(load_cluster_spec(on_free_ports(example, tmp_path)), launched.run_dir()).up()
    return {n.name: f"meshmq://{n.endpoint}?useTopologyForLoadBalancing=false" for n in state.nodes}


async def wait_network_consumers(url: str, queue: str, count: int) -> None:
    """Until the node at `url` holds `count` network subscriptions on `queue`
    (its peers' demand has arrived)."""
    async def held() -> list[str]:
        async with await connect(url) as conn:
            return [c.session_id for c in await conn.admin.list_consumers(queue) if c.session_id.startswith("network ")]

    async def all_held() -> bool:
        return len(await held()) == count
    try:
        await eventually(all_held, 20, f"{url} to hold {count} network subscriptions on {queue}", interval=0.1)
    except TimeoutError:
        raise AssertionError(f"{url} holds {await held()} on {queue}, not {count} network subscriptions") from None


async def test_concentrator_the_first_layer_forwards_to_the_consumers_of_the_second(launched, tmp_path):
    urls = await up(launched, "network-concentrator.yaml", tmp_path)
    async with await connect(urls["d"]) as d, await connect(urls["e"]) as e:
        on_d = await (await d.session()).create_consumer("orders")
        on_e = await (await e.session()).create_consumer("orders")
        for first in ("a", "b", "c"):
            await wait_network_consumers(urls[first], "orders", 2)
        for i, first in enumerate(("a", "b", "c")):
            await send_to(urls[first], "orders", 6, props=lambda n, i=i: {"n": 6 * i + n})
        got = await collect({"d": on_d, "e": on_e}, 18)
    assert sorted(got["d"] + got["e"]) == list(range(18))
    assert got["d"] and got["e"]  # the second layer shares the load


async def test_hub_and_spoke_a_message_goes_from_spoke_to_spoke_through_the_hub(launched, tmp_path):
    urls = await up(launched, "network-hub-and-spoke.yaml", tmp_path)
    async with await connect(urls["s3"]) as s3:
        consumer = await (await s3.session()).create_consumer("orders")
        await wait_network_consumers(urls["s1"], "orders", 1)
        await send_to(urls["s1"], "orders", 10)
        assert (await collect({"s3": consumer}, 10))["s3"] == list(range(10))
    async with await connect(urls["s2"]) as s2:  # the other spoke holds s3's demand too, but no message passed it
        assert all(q.messages_added == 0 for q in await s2.admin.list_queues() if q.name == "orders")


async def test_tree_hq_writes_down_to_a_store_and_a_store_up_to_hq(launched, tmp_path):
    urls = await up(launched, "network-tree.yaml", tmp_path)
    async with await connect(urls["l4"]) as store:
        consumer = await (await store.session()).create_consumer("store-l4.incoming")
        await wait_network_consumers(urls["hq"], "store-l4.incoming", 1)
        await send_to(urls["hq"], "store-l4.incoming", 5)
        assert (await collect({"l4": consumer}, 5))["l4"] == list(range(5))
    async with await connect(urls["hq"]) as hq:
        consumer = await (await hq.session()).create_consumer("hq.orders")
        await wait_network_consumers(urls["l1"], "hq.orders", 1)
        await send_to(urls["l1"], "hq.orders", 5)
        assert (await collect({"hq": consumer}, 5))["hq"] == list(range(5))
    for other in ("l1", "l2", "l3", "b1"):  # a store's demand went only up its own branch
        async with await connect(urls[other]) as conn:
            assert not await conn.admin.list_consumers("store-l4.incoming")


async def test_mesh_the_direct_route_wins_with_decreased_network_priority(launched, tmp_path):
    urls = await up(launched, "network-mesh.yaml", tmp_path)
    async with await connect(urls["n3"]) as n3:
        consumer = await (await n3.session()).create_consumer("orders")
        # n1 holds n3's demand twice: straight from n3 (-5) and through n2 (-6).
        await wait_network_consumers(urls["n1"], "orders", 2)
        await send_to(urls["n1"], "orders", 10)
        assert (await collect({"n3": consumer}, 10))["n3"] == list(range(10))
    async with await connect(urls["n1"]) as n1:
        forwarded = {b.target_node_name: b.forwarded for b in (await n1.admin.cluster_state()).bridges if b.forwarded}
    assert forwarded == {"n3": 10}
