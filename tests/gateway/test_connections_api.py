"""Client connections through the gateway's REST API on a real secured router:
listed with the counts the router's management gives, closed by a manager
(the client's session fails), refused to a viewer, 404 for an unknown one."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from meshmq.errors import ConnectionFailedError, MeshMQError
from tests.fixtures.nodes import eventually

pytestmark = pytest.mark.integration


async def test_connections_are_listed_with_their_counts_and_closed(stack):
    admin, viewer = stack.client("admin"), stack.client("viewer")
    admin.post("/api/v1/nodes/node/queues", json={"name": "gw.conn"})
    async with await connect(stack.sdk_url) as mgmt, \
            await connect(stack.sdk_url + "&reconnectAttempts=0") as client:
        s1, s2 = await client.session(), await client.session()
        p = await s1.create_producer("gw.conn")
        for i in range(4):
            await p.send(b"m%d" % i)
        c = await s2.create_consumer("gw.conn")
        assert await c.receive(5) is not None  # delivered, not acknowledged

        def ours():
            found = [x for x in viewer.get("/api/v1/connections").json() if x["consumers"] == 1]
            return found[0] if len(found) == 1 and found[0]["in_flight"] >= 1 else None

        conn = await eventually(ours, 10, "the client's connection listed")
        assert conn["node"] == "node" and conn["user"] == "admin" and conn["sessions"] == 2
        assert conn["producers"] == 1 and conn["client_address"] and conn["since"].endswith("+00:00")
        assert sorted((s["producers"], s["consumers"]) for s in conn["session_list"]) == [(0, 1), (1, 0)]
        # The same numbers as the router's management (what the CLI shows).
        [direct] = [x for x in await mgmt.admin.list_connections() if x.connection_id == conn["id"]]
        assert (direct.session_count, direct.producers, direct.consumers, direct.in_flight) == (
            conn["sessions"], conn["producers"], conn["consumers"], conn["in_flight"])
        assert [x["id"] for x in viewer.get("/api/v1/nodes/node/connections").json()] == \
            [x["id"] for x in viewer.get("/api/v1/connections", params={"node": "node"}).json()]

        r = viewer.delete(f"/api/v1/nodes/node/connections/{conn['id']}")
        assert r.status_code == 403 and "view-only" in r.text
        r = admin.delete(f"/api/v1/nodes/node/connections/{conn['id']}")
        assert r.status_code == 200, r.text
        assert r.json() == {"node": "node", "id": conn["id"], "sessions_closed": 2}

        async def failed():
            try:
                await c.receive(0.2)
            except MeshMQError as exc:
                return exc
            return None

        assert isinstance(await eventually(failed, 10, "the client's session failed"), ConnectionFailedError)
        assert all(x["id"] != conn["id"] for x in admin.get("/api/v1/connections").json())
        r = admin.delete(f"/api/v1/nodes/node/connections/{conn['id']}")
        assert r.status_code == 404 and "no connection" in r.text
        assert admin.get("/api/v1/nodes/nowhere/connections").status_code == 404
