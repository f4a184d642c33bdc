"""The console's Connections page: every node's client connections (address,
user, node, sessions, producers, consumers, credit, messages in flight, since)
and a close action, confirmed first (the client's connection fails; with
failover it reconnects). Reads and closes through the REST module's calls."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .connections import gather_connections
from .console import _back, _gw, _operate, _page, _to_login, _who
from .paths import NODE

router = APIRouter(include_in_schema=False)


@router.get("/connections")
async def connections_page(request: Request) -> Response:
    who = _who(request)
    if who is None:
        return _to_login(request)
    gw = _gw(request)
    nodes, _ = await gw.gather.nodes(who.metadata)
    return _page(request, "connections.html", who, connections=await gather_connections(gw, who.metadata),
                 down=[n.name for n in nodes if not n.up])


@router.post(f"/nodes/{NODE}/connections/{{connection_id}}/close")
async def close_connection(request: Request, node: str, connection_id: str) -> Response:
    async def run(admin, form):
        closed = await admin.close_connection(connection_id)
        return _back("/connections", done=f"connection {connection_id} on {node} closed ({closed} sessions)")

    return await _operate(request, node, "/connections", run)
