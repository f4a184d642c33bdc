"""Client connections in the REST API: every node's connections (a client's
channel to a router, with its sessions, producers, consumers, credit and
messages in flight) and closing one (Management.ListConnections and
CloseConnection, services/router/connections.py). Closing ends the client's
sessions with CONNECTION_FAILED: a client with failover reconnects."""

from __future__ import annotations

from datetime import datetime, timezone

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel

from .api import GW, Manager, Viewer, _on_node
from .paths import NODE
from .problems import RESPONSES

router = APIRouter(prefix="/api/v1", responses=RESPONSES)


class SessionView(BaseModel):
    session_id: str
    client_id: str = ""
    producers: int
    consumers: int
    credits: int
    # Delivered, not yet acknowledged.
    in_flight: int
    transacted: bool
    since: str


class ConnectionView(BaseModel):
    node: str
    id: str
    client_address: str
    user: str
    client_id: str = ""
    sessions: int
    producers: int
    consumers: int
    # Flow credit (bytes) its consumers hold.
    credits: int
    # Delivered, not yet acknowledged.
    in_flight: int
    # When its oldest open session opened (UTC, ISO 8601).
    since: str
    session_list: list[SessionView]


class ClosedView(BaseModel):
    node: str
    id: str
    sessions_closed: int


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="seconds")


def connection_view(node: str, c) -> ConnectionView:
    return ConnectionView(
        node=node, id=c.connection_id, client_address=c.client_address, user=c.user, client_id=c.client_id,
        sessions=c.session_count, producers=c.producers, consumers=c.consumers, credits=c.credits,
        in_flight=c.in_flight, since=iso(c.since),
        session_list=[SessionView(session_id=s.session_id, client_id=s.client_id, producers=s.producers,
                                  consumers=s.consumers, credits=s.credits, in_flight=s.in_flight,
                                  transacted=s.transacted, since=iso(s.since)) for s in c.sessions],
    )


async def gather_connections(gw, md, node: str | None = None) -> list[ConnectionView]:
    """The connections of every node that answers (of `node` only, when given)."""
    views, replies = await gw.gather.nodes(md)
    up = [(v, r.member) for v, r in zip(views, replies) if v.up and (node is None or v.name == node)]
    answers = await gw.directory.ask_all(md, lambda a: a.list_connections(), [m for _, m in up])
    return [connection_view(v.name, c) for (v, _), r in zip(up, answers) if r.ok for c in r.value]


@router.get("/connections", response_model=list[ConnectionView], tags=["connections"])
async def connections(gw: GW, who: Viewer, node: str | None = None) -> list[ConnectionView]:
    """Every client connection on every node that answers (on `node` only, when given)."""
    return await gather_connections(gw, who.metadata, node)


@router.get(f"/nodes/{NODE}/connections", response_model=list[ConnectionView], tags=["connections"])
async def node_connections(node: str, gw: GW, who: Viewer) -> list[ConnectionView]:
    view, admin = await _on_node(gw, who, node)
    return [connection_view(view.name, c) for c in await admin.list_connections()]


@router.delete(f"/nodes/{NODE}/connections/{{connection_id}}", response_model=ClosedView, tags=["connections"])
async def close_connection(node: str, connection_id: str, gw: GW, who: Manager) -> ClosedView:
    """End every session of the connection: the client sees its connection fail
    (CONNECTION_FAILED) and, with failover configured, reconnects."""
    view, admin = await _on_node(gw, who, node)
    if all(c.connection_id != connection_id for c in await admin.list_connections()):
        raise HTTPException(404, f"no connection {connection_id!r} on node {view.name!r} "
                                 f"(GET /api/v1/nodes/{view.name}/connections lists them)")
    return ClosedView(node=view.name, id=connection_id, sessions_closed=await admin.close_connection(connection_id))
