"""Cluster connections, network connectors and the tree connector in the REST
API: each node's links as configured (every parameter with its value, the
ones that differ from their defaults marked; Management.ListLinkConfigurations)
beside the links it holds now (GetClusterState's bridges). Secrets arrive
from the routers already hidden."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from .api import GW, Viewer, _on_node
from .paths import NODE
from .problems import RESPONSES
from .views import BridgeView, bridge_view

router = APIRouter(prefix="/api/v1", responses=RESPONSES)


class LinkConfigurationView(BaseModel):
    node: str
    # "cluster" (cluster-connections), "network" (network-connectors) or "tree" (tree-connector).
    kind: str
    name: str
    # Every parameter by its config key, with the value in force.
    parameters: dict[str, Any]
    # The keys whose value is not the default.
    changed_keys: list[str]
    # static-connectors' names resolved to the endpoints they stand for.
    connectors: dict[str, str]
    # The links this configuration holds now (a cluster connection's bridges, a connector's links).
    links: list[BridgeView]


class NodeLinksView(BaseModel):
    node: str
    up: bool
    # Why the node's links are not listed (it does not answer).
    problem: str = ""
    configurations: list[LinkConfigurationView]


def configuration_views(node: str, configs, bridges: list[BridgeView]) -> list[LinkConfigurationView]:
    return [LinkConfigurationView(node=node, kind=c.kind, name=c.name, parameters=json.loads(c.parameters_json),
                                  changed_keys=list(c.changed_keys), connectors=dict(c.connectors),
                                  links=[b for b in bridges if (b.cluster_connection, b.kind) == (c.name, c.kind)])
            for c in configs]


async def _configured_and_held(admin) -> tuple[list, list]:
    return await admin.link_configurations(), list((await admin.cluster_state()).bridges)


def _node_links(node: str, configs: list, bridges: list) -> list[LinkConfigurationView]:
    return configuration_views(node, configs, [bridge_view(node, b) for b in bridges])


async def node_links(gw, who, node: str) -> list[LinkConfigurationView]:
    view, admin = await _on_node(gw, who, node)
    return _node_links(view.name, *await _configured_and_held(admin))


async def cluster_links(gw, who) -> list[NodeLinksView]:
    """Every node's link configurations; a node that does not answer is listed with why."""
    views, replies = await gw.gather.nodes(who.metadata)
    up = [(v, r.member) for v, r in zip(views, replies) if v.up]
    answers = iter(await gw.directory.ask_all(who.metadata, _configured_and_held, [m for _, m in up]))
    result = []
    for v in views:
        answer = next(answers) if v.up else None
        if answer is None or not answer.ok:
            why = v.problem if answer is None else str(answer.error)
            result.append(NodeLinksView(node=v.name, up=False, problem=why or "not answering", configurations=[]))
        else:
            result.append(NodeLinksView(node=v.name, up=True, configurations=_node_links(v.name, *answer.value)))
    return result


@router.get("/cluster-connections", response_model=list[NodeLinksView], tags=["cluster"])
async def cluster_connections(gw: GW, who: Viewer) -> list[NodeLinksView]:
    """Every node's cluster connections, network connectors and tree connector:
    their configuration and the links each holds now."""
    return await cluster_links(gw, who)


@router.get(f"/nodes/{NODE}/cluster-connections", response_model=list[LinkConfigurationView], tags=["cluster"])
async def node_cluster_connections(node: str, gw: GW, who: Viewer) -> list[LinkConfigurationView]:
    return await node_links(gw, who, node)
