"""The console's Cluster connections page: every node's cluster connections,
network connectors and tree connector with their configuration (set values
told apart from defaults) and the links each holds now (link_config.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .console import _gw, _page, _to_login, _who
from .link_config import cluster_links

router = APIRouter(include_in_schema=False)


@router.get("/cluster-connections")
async def cluster_connections_page(request: Request) -> Response:
    who = _who(request)
    if who is None:
        return _to_login(request)
    return _page(request, "cluster_connections.html", who, nodes=await cluster_links(_gw(request), who))
