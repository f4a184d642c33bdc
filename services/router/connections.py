"""Client connections as management lists and closes them.

A client connection is what the client calls one: its sessions carry the
connection's id (OpenSession.connection_id, client_connections.py), and
those of one user with one id are one connection. A session without an id (a
client older than protocol 3) is grouped with the others from the same peer
address and user, which is one gRPC channel. ListConnections groups the open
sessions (BrokerServicer.sessions) when asked, off the message path. CloseConnection ends each of a connection's sessions with
CONNECTION_FAILED, which the client takes for a lost node: with failover it
reconnects (the sessions' deliveries go back to their queues, as on any
session end)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from meshmq.errors import BrokerError, Reason
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import management_pb2 as mgpb

CLOSED_BY_ADMIN = "connection closed by an administrator (CloseConnection)"


def connection_id(s) -> str:
    """A short id for session `s`'s connection, stable while it lasts (not the
    client's own id, which only its sessions need to know)."""
    conn = s.connection
    key = f"c\0{conn.connection_id}" if conn is not None and conn.connection_id else f"p\0{s.peer}"
    return hashlib.sha1(f"{key}\0{s.user}".encode()).hexdigest()[:12]


def count_connections(sessions: Iterable) -> int:
    """How many connections the open `sessions` make (as list_connections groups them)."""
    return len({connection_id(s) for s in sessions if not s.closed})


def session_summary(s) -> mgpb.ConnectionSession:
    consumers = [c for c in s.consumers.values() if not c.closed]
    return mgpb.ConnectionSession(
        session_id=s.id, client_id=s.client_id, producers=len(s.producers), consumers=len(consumers),
        credits=sum(max(0, c.credits) for c in consumers),
        in_flight=sum(len(c.delivering) for c in consumers),
        transacted=s.tx is not None, since=s.since,
    )


def list_connections(sessions: Iterable, node_id: str, node_name: str) -> list[mgpb.ConnectionInfo]:
    """The open `sessions` grouped into connections, oldest first."""
    groups: dict[str, list] = {}
    for s in sessions:
        if not s.closed:
            groups.setdefault(connection_id(s), []).append(s)
    out = []
    for cid, members in groups.items():
        members.sort(key=lambda s: s.since)
        summaries = [session_summary(s) for s in members]
        client_ids = sorted({s.client_id for s in members if s.client_id})
        out.append(mgpb.ConnectionInfo(
            connection_id=cid, client_address=members[0].peer, user=members[0].user,
            node_id=node_id, node_name=node_name, client_id=",".join(client_ids),
            session_count=len(members), producers=sum(x.producers for x in summaries),
            consumers=sum(x.consumers for x in summaries), credits=sum(x.credits for x in summaries),
            in_flight=sum(x.in_flight for x in summaries), since=members[0].since, sessions=summaries,
        ))
    out.sort(key=lambda c: (c.since, c.connection_id))
    return out


def close_connection(sessions: Iterable, cid: str, node_name: str) -> int:
    """End every open session of connection `cid`; how many. INVALID_REQUEST
    (naming the id) when this node has no such connection."""
    members = [s for s in sessions if not s.closed and connection_id(s) == cid]
    if not members:
        raise BrokerError(Reason.INVALID_REQUEST,
                          f"no connection {cid!r} on node {node_name} (ListConnections shows the open ones)")
    for s in members:
        s.ended_by = BrokerError(Reason.CONNECTION_FAILED, CLOSED_BY_ADMIN)
        s.out.put_nowait(None)  # the stream's writer stops and answers with ended_by
    return len(members)
