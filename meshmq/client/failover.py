"""The decisions of client failover, kept apart from the streams they steer.

A session whose node fails moves, when reconnectAttempts allows, to the node
that serves that node's store: the backup that took over (the topology names a
live's waiting backup, and after the takeover announces the same node id at the
backup's connector), else the same node again (a transient break). A
`failover:` URI (ActiveMQ's failover transport) may also move it to any other
listed node. Attempts come in rounds over those candidates with Artemis's
backoff: the first round at once, then retryInterval growing by
retryIntervalMultiplier up to maxRetryInterval.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from meshmq.errors import ConnectionFailedError, FencedError, MeshMQError, StoreUnavailableError

from .options import ClientOptions, Server

log = logging.getLogger("meshmq.client")


class FailoverEventType(enum.Enum):
    """What a connection's failover listeners are told (Artemis FailoverEventType)."""

    FAILURE_DETECTED = "FAILURE_DETECTED"
    FAILOVER_COMPLETED = "FAILOVER_COMPLETED"
    FAILOVER_FAILED = "FAILOVER_FAILED"


FailoverListener = Callable[[FailoverEventType, MeshMQError], None]


def warrants_failover(err: MeshMQError) -> bool:
    """Whether a session that ended with `err` lost its node (worth moving), rather
    than being refused for something a move would not fix (a bad request, a login)."""
    return isinstance(err, (ConnectionFailedError, StoreUnavailableError, FencedError))


def reconnect_delays(options: ClientOptions, attempts: int) -> Iterator[float]:
    """Seconds to wait before each round of attempts: 0 for the first, then the
    backoff; `attempts` rounds in all (-1: without end)."""
    delay = options.retryInterval / 1000
    cap = options.maxRetryInterval / 1000
    done = 0
    while attempts < 0 or done < attempts:
        yield 0.0 if done == 0 else delay
        if done:
            delay = min(delay * options.retryIntervalMultiplier, cap)
        done += 1


def failover_candidates(
    failed: Server,
    node_id: str,
    *,
    members: Mapping[str, Server],
    backups: Mapping[str, Server],
    others: Sequence[Server],
    any_node: bool,
) -> list[Server]:
    """Where a session lost on `failed` (serving node id `node_id`) tries next, in order.

    `members` maps each node id of the current topology to its connector,
    `backups` each node id to the backup last named for it, and `others` are the
    remaining nodes a `failover:` URI may move to (`any_node`).
    """
    out: list[Server] = []

    def add(server: Server | None) -> None:
        if server is not None and server not in out:
            out.append(server)

    if node_id:
        current = members.get(node_id)
        if current is not None and current != failed:
            add(current)  # the backup took over and announces the node id
        add(backups.get(node_id))
    add(failed)
    if any_node:
        for server in others:
            add(server)
    return out


def keepalive_options(options: ClientOptions) -> list[tuple[str, int]]:
    """gRPC channel keep-alive for clientFailureCheckPeriod and connectionTTL: a ping
    after clientFailureCheckPeriod of silence, the connection failed when it is not
    answered within the rest of connectionTTL (at most another check period, at
    least a second). Routers accept a ping every half second (transport.server_options)."""
    period, ttl = options.clientFailureCheckPeriod, options.connectionTTL
    if period == -1:
        return [("grpc.keepalive_time_ms", 2**31 - 1)]
    period = max(1000, period)
    answer = period if ttl == -1 else max(1000, min(period, ttl - period))
    return [
        ("grpc.keepalive_time_ms", period),
        ("grpc.keepalive_timeout_ms", answer),
        # Every ping's deadline (gRPC's default is 60 s): while a flow-control (BDP) ping
        # is unanswered no keep-alive ping goes out, so without this a frozen node that
        # stopped mid-ping is noticed only after a minute.
        ("grpc.http2.ping_timeout_ms", answer),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


@dataclass
class Incident:
    """One node's failure as the connection's listeners see it: detected once,
    then completed when every session it took has moved, or failed when one could not."""

    server: Server
    sessions: int = 0
    failed: MeshMQError | None = None
    first_error: MeshMQError | None = None
    moved_to: set[str] = field(default_factory=set)


class Incidents:
    """Groups the sessions failing over from one node into one incident, so
    listeners hear FAILURE_DETECTED and FAILOVER_COMPLETED/FAILED once per node."""

    def __init__(self) -> None:
        self._open: dict[Server, Incident] = {}
        self.listeners: list[FailoverListener] = []

    def _tell(self, event: FailoverEventType, err: MeshMQError) -> None:
        for listener in list(self.listeners):
            try:
                listener(event, err)
            except Exception:  # a listener's bug must not stop a failover
                log.exception("failover listener %r failed on %s", listener, event.name)

    def begin(self, server: Server, err: MeshMQError) -> Incident:
        incident = self._open.get(server)
        if incident is None:
            incident = self._open[server] = Incident(server, first_error=err)
            log.warning("connection to %s failed (%s): failing over", server.target, err)
            self._tell(FailoverEventType.FAILURE_DETECTED, err)
        incident.sessions += 1
        return incident

    def end(self, incident: Incident, *, moved_to: Server | None, err: MeshMQError | None) -> None:
        if moved_to is not None:
            incident.moved_to.add(moved_to.target)
        elif err is not None and incident.failed is None:
            incident.failed = err
        incident.sessions -= 1
        if incident.sessions > 0:
            return
        if self._open.get(incident.server) is incident:
            del self._open[incident.server]
        if incident.failed is None:
            log.warning("failover from %s completed: sessions now on %s", incident.server.target,
                        ", ".join(sorted(incident.moved_to)))
            self._tell(FailoverEventType.FAILOVER_COMPLETED, incident.first_error)
        else:
            log.error("failover from %s failed: %s", incident.server.target, incident.failed)
            self._tell(FailoverEventType.FAILOVER_FAILED, incident.failed)
