"""The kinds of link a node holds (management's BridgeInfo.kind) and how one
reads to a person: the CLI's `cluster bindings` and the console show the
same words."""

from __future__ import annotations

from typing import Protocol

CLUSTER, NETWORK, TREE = "cluster", "network", "tree"
# Which end opened the link (BridgeInfo.direction).
DIALED, ACCEPTED = "out", "in"
# What the peer of a tree link is to this node (BridgeInfo.role; a network link's peer is "peer").
PARENT, CHILD = "parent", "child"


class LinkRecord(Protocol):
    """What a link's description needs (BridgeInfo, the gateway's BridgeView)."""

    kind: str
    direction: str
    duplex: bool
    role: str


def describe_kind(link: LinkRecord) -> str:
    """"tree: parent" (what the peer is to this node), "network: out, duplex"
    (which end dialed), or "cluster"."""
    if link.kind == TREE:
        return f"{TREE}: {link.role}"
    if link.kind == NETWORK:
        return f"{NETWORK}: {link.direction}{', duplex' if link.duplex else ''}"
    return link.kind or CLUSTER
