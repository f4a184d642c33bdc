"""`TopologyState`: the pure rules by which a watcher's topology changes.

No I/O and no clock of its own, so every rule (an event applies as it is, a
node missing from a resync lingers for refresh-timeout) has a unit test over
plain data (`tests/discovery/test_deciders.py`); `TopologyWatcher` does the
I/O around it.
"""

from __future__ import annotations

from collections.abc import Iterable

from meshmq.v1 import discovery_pb2 as dpb


def _event(kind: int, node: dpb.ClusterNode) -> dpb.NodeEvent:
    return dpb.NodeEvent(kind=kind, node=node)


class TopologyState:
    """One cluster's topology as a watcher knows it, and the rules that change it.

    Pure: no I/O, the caller passes the time. An event from the source is
    applied as it is (a delete in etcd means the lease lapsed or the node
    left). A snapshot after the watch was broken (a resync) is different: a
    node missing from it may only not have announced itself again yet (etcd
    restarted empty, or the discovery service restarted), so it stays for
    `grace_s` (refresh-timeout) and goes only if it does not reappear.
    """

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.nodes: dict[str, dpb.ClusterNode] = {}
        self.pending_removal: dict[str, float] = {}
        self.synced = False

    def snapshot(self) -> list[dpb.ClusterNode]:
        return [self.nodes[k] for k in sorted(self.nodes)]

    def apply(self, resp: dpb.WatchNodesResponse, now: float) -> list[dpb.NodeEvent]:
        kind = resp.WhichOneof("kind")
        if kind == "snapshot":
            return self.resync(resp.snapshot.nodes, now)
        if kind == "event":
            if resp.event.kind == dpb.NODE_DOWN:
                return self.remove(resp.event.node.node_id)
            return self.put(resp.event.node)
        return []

    def resync(self, nodes: Iterable[dpb.ClusterNode], now: float) -> list[dpb.NodeEvent]:
        events: list[dpb.NodeEvent] = []
        seen = set()
        for node in nodes:
            seen.add(node.node_id)
            events += self.put(node)
        for node_id in self.nodes.keys() - seen:
            self.pending_removal[node_id] = now + self.grace_s
        self.synced = True
        return events

    def put(self, node: dpb.ClusterNode) -> list[dpb.NodeEvent]:
        self.pending_removal.pop(node.node_id, None)
        old = self.nodes.get(node.node_id)
        if old == node:
            return []
        stored = dpb.ClusterNode()
        stored.CopyFrom(node)
        self.nodes[node.node_id] = stored
        return [_event(dpb.NODE_UP if old is None else dpb.NODE_UPDATED, stored)]

    def remove(self, node_id: str) -> list[dpb.NodeEvent]:
        self.pending_removal.pop(node_id, None)
        old = self.nodes.pop(node_id, None)
        return [] if old is None else [_event(dpb.NODE_DOWN, old)]

    def expire(self, now: float) -> list[dpb.NodeEvent]:
        due = [node_id for node_id, deadline in self.pending_removal.items() if deadline <= now]
        return [e for node_id in sorted(due) for e in self.remove(node_id)]

    def next_deadline(self) -> float | None:
        return min(self.pending_removal.values(), default=None)
