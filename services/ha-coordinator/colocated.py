"""Colocated backups (Artemis's colocated HA policy), on a shared store or by replication.

Every node is the live of its own store and hosts, in its own process,
backups of other lives' stores: a live with `request-backup` asks
the other nodes it knows (its topology and its cluster connections' static
connectors) in turn, until one accepts (`backup-request-retries` rounds,
`backup-request-retry-interval` apart); a node accepts while it hosts fewer
than `max-backups` and none of that live already.

A hosted backup is an ordinary slave run beside the host's own router
(runner.py starts it, as services/embedded.py runs a node): the host's configuration with the name
`colocated_backup_<n>`, a data directory of its own, its acceptor, metrics and
connector ports moved by n x `backup-port-offset` (the connectors named in
`excludes`, those of other nodes, keep theirs) and the colocated `slave`
policy. On a shared store it waits for the requester's lease (the request
names the store) and takes the store over when the lease lapses; by
replication it copies the requester's store into its own directory (the
request names the requester's endpoint, the one live it replicates) and
takes over by a classic vote when the requester goes. With the slave's
`scale-down`, it then moves every message to another live at once and stops;
a scale-down that names no node goes to the host itself (Artemis: its in-VM
connector), so the host ends up with the dead live's messages.

`backup_config` and `hosting_refusal` are the policy, pure; `ColocatedBackups`
runs it, and `BackupHostingServicer` answers the requests on every router's
acceptors (a node without the policy refuses them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

import grpc

from meshmq.aio import wait_for
from meshmq.config.models import (
    BrokerConfig, ClusterConnection, Colocated, HaPolicy, Replication, SharedStore, parse_host_port,
)
from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.hosted import HostedService
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc

log = logging.getLogger("meshmq.ha")

HOST_CONNECTOR = "colocated-host"  # the connector a hosted backup scales down to when its slave names none
LIVE_CONNECTOR = "colocated-live"  # a hosted replicating backup's live: the one it replicates and votes on
SHARED_STORE, REPLICATION = "shared-store", "replication"
START_TIMEOUT_S = 30.0  # a hosted backup reports its passive start within this, or the request is refused


def _moved(endpoint: str, by: int) -> str:
    host, port = parse_host_port(endpoint)
    return f"{host}:{port + by}" if port else endpoint


def kind_of(config: BrokerConfig) -> str:
    return SHARED_STORE if config.ha_policy.shared_store is not None else REPLICATION


def backup_config(host: BrokerConfig, colocated: Colocated, n: int, request: cpb.BackupRequest,
                  host_endpoint: str) -> BrokerConfig:
    """The configuration of the `n`-th (1-based) backup this host runs for `request`'s live."""
    offset = n * colocated.backup_port_offset
    name = f"colocated_backup_{n}"
    connectors = {ref: endpoint if ref in colocated.excludes else _moved(endpoint, offset)
                  for ref, endpoint in host.connectors.items()}
    slave = colocated.slave
    sd = slave.scale_down
    if sd is not None and not sd.connectors and sd.discovery_group_ref is None:
        connectors[HOST_CONNECTOR] = host_endpoint
        slave = slave.model_copy(update={"scale_down": sd.model_copy(update={"connectors": (HOST_CONNECTOR,)})})
    update = {
        "name": name,
        "data_directory": host.data_directory / name,
        "acceptors": tuple(a.model_copy(update={"port": a.port + offset if a.port else 0}) for a in host.acceptors),
        "connectors": connectors,
        "metrics": host.metrics.model_copy(update={"port": host.metrics.port + offset if host.metrics.port else 0}),
    }
    if kind_of(host) == SHARED_STORE:
        update["journal"] = host.journal.model_copy(update={"url": request.journal_url, "address": None})
        update["ha_policy"] = HaPolicy(shared_store=SharedStore(slave=slave))
    else:  # its own SQLite copy under its data directory, of the one live that asked
        connectors[LIVE_CONNECTOR] = request.connector
        update["journal"] = host.journal.model_copy(update={"url": None, "address": None})
        update["cluster_connections"] = {**host.cluster_connections,
                                         LIVE_CONNECTOR: ClusterConnection(static_connectors=(LIVE_CONNECTOR,))}
        update["ha_policy"] = HaPolicy(replication=Replication(
            slave=slave.model_copy(update={"cluster_name": LIVE_CONNECTOR})))
    return host.model_copy(update=update)


def hosting_refusal(colocated: Colocated | None, kind: str, hosted: Iterable[str], request: cpb.BackupRequest,
                    own_node_id: str) -> str | None:
    """Why this node (whose colocated policy is of `kind`) does not host a backup of
    `request`'s live, or None: it may."""
    hosted = set(hosted)
    requester = request.node_id
    if colocated is None:
        return "this node has no colocated ha-policy: it hosts no backups"
    if requester == own_node_id:
        return "a node does not back itself up"
    if request.kind != kind:
        return f"this node hosts {kind} backups; the request is for a {request.kind or 'unnamed'} policy"
    if kind == SHARED_STORE and not request.journal_url.startswith("postgresql"):
        return "a colocated backup shares the live's PostgreSQL store; the request names none"
    if kind == REPLICATION and not request.connector:
        return "a replicating backup copies the live that asked; the request names no endpoint"
    if requester in hosted:
        return "this node already hosts a backup of that live"
    if len(hosted) >= colocated.max_backups:
        return f"this node hosts max-backups={colocated.max_backups} already"
    return None


def free_slot(used: Iterable[int], max_backups: int) -> int:
    """The lowest backup number (1..max_backups) not in use: a backup's name and ports stay the same
    from one hosted backup to the next."""
    used = set(used)
    return next(n for n in range(1, max_backups + 1) if n not in used)


RunBackup = Callable[[BrokerConfig, Callable[[dict], None]], Awaitable[None]]


class ColocatedBackups:
    """One node's colocated policy at work: the backups it hosts, and its request for one of its own."""

    def __init__(self, config: BrokerConfig, run_backup: RunBackup) -> None:
        assert config.colocated is not None
        self.config = config
        self.colocated = config.colocated
        self.kind = kind_of(config)
        self._run_backup = run_backup
        self._hosted: dict[str, tuple[int, asyncio.Task]] = {}  # requester node id -> (slot, its run)
        self._lock = asyncio.Lock()
        self.node_id = ""
        self.endpoint = ""
        self.backed_up_by = ""  # the node that accepted this node's request (its name), once one has

    # ------------------------------------------------------------ hosting (BackupHosting.RequestBackup)

    async def handle(self, request: cpb.BackupRequest) -> cpb.BackupReply:
        async with self._lock:  # two requests at once must not both take the last slot
            why = hosting_refusal(self.colocated, self.kind, self._hosted, request, self.node_id)
            if why is not None or not self.endpoint:
                why = why or "this node is not serving yet"
                log.info("colocated: not hosting a backup of %s (%s): %s", request.node_name, request.node_id, why)
                return cpb.BackupReply(accepted=False, reason=why, node_name=self.config.name)
            n = free_slot((slot for slot, _ in self._hosted.values()), self.colocated.max_backups)
            config = backup_config(self.config, self.colocated, n, request, self.endpoint)
            started: asyncio.Future[dict] = asyncio.get_running_loop().create_future()
            task = asyncio.create_task(self._host(request, config, started))
            self._hosted[request.node_id] = (n, task)
        try:
            info = await wait_for(asyncio.shield(started), START_TIMEOUT_S)
        except Exception as exc:  # it failed to start, or took too long: not a backup anyone may count on
            task.cancel()
            why = f"the backup did not start: {exc or type(exc).__name__}"
            return cpb.BackupReply(accepted=False, reason=why, node_name=self.config.name)
        log.info("colocated: hosting %s, a backup of %s (%s), listening on %s", config.name, request.node_name,
                 request.node_id, info["endpoints"][0])
        return cpb.BackupReply(accepted=True, backup_connector=info["endpoints"][0], node_name=self.config.name)

    async def _host(self, request: cpb.BackupRequest, config: BrokerConfig, started: asyncio.Future) -> None:
        def on_ready(info: dict) -> None:
            if not started.done():
                started.set_result(info)

        try:
            await self._run_backup(config, on_ready)
            log.info("colocated: %s (backup of %s) stopped", config.name, request.node_name)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("colocated: %s (backup of %s) failed: %s", config.name, request.node_name, exc)
            if not started.done():
                started.set_exception(exc)
        finally:
            if not started.done():
                started.set_exception(RuntimeError("it stopped before it was ready"))
            started.exception()  # retrieved: handle() reports it, or has already given up waiting
            self._hosted.pop(request.node_id, None)

    @property
    def hosted(self) -> list[str]:
        """The node ids whose backups this node runs."""
        return list(self._hosted)

    # ------------------------------------------------------------ requesting (a live with request-backup)

    async def request_backup(self, candidates: Callable[[], list[str]], identity) -> bool:
        """Ask the nodes `candidates()` names, in turn, to host a backup of this node's store,
        for backup-request-retries rounds (-1: until one does); True once one accepted."""
        request = cpb.BackupRequest(node_id=self.node_id, node_name=self.config.name, kind=self.kind,
                                    journal_url=(self.config.journal.url or "") if self.kind == SHARED_STORE else "",
                                    connector=self.endpoint)
        rounds = 0
        while True:
            for endpoint in candidates():
                if endpoint == self.endpoint:
                    continue
                channel = identity.open(endpoint)
                try:
                    metadata = await identity.metadata(channel, endpoint)
                    reply = await cgrpc.BackupHostingStub(channel).RequestBackup(
                        request, metadata=metadata, timeout=START_TIMEOUT_S + 5)
                except grpc.aio.AioRpcError as exc:
                    log.info("colocated: %s did not take the backup request: %s", endpoint, exc.details())
                    continue
                finally:
                    await channel.close()
                if reply.accepted:
                    self.backed_up_by = reply.node_name
                    log.info("colocated: %s hosts a backup of this node, listening on %s", reply.node_name,
                             reply.backup_connector)
                    return True
                log.info("colocated: %s will not host a backup of this node: %s", reply.node_name or endpoint,
                         reply.reason)
            rounds += 1
            retries = self.colocated.backup_request_retries
            if retries != -1 and rounds > retries:
                log.warning("colocated: no node would host a backup of this node after %d rounds "
                            "(backup-request-retries=%d): it runs without one", rounds, retries)
                return False
            await asyncio.sleep(self.colocated.backup_request_retry_interval / 1000)

    async def close(self, timeout: float = 15.0) -> None:
        """Wait for the hosted backups to stop (a signal stops them with the host), then cancel the rest."""
        tasks = [task for _, task in self._hosted.values()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for task in pending:
                task.cancel()


BACKUP_HOSTING = cpb.DESCRIPTOR.services_by_name["BackupHosting"]


class BackupHostingServicer(cgrpc.BackupHostingServicer):
    """`BackupHosting.RequestBackup` on a router's acceptors: its colocated
    policy's answer, or a refusal when it has none."""

    def __init__(self, node_name: str, colocated: ColocatedBackups | None) -> None:
        self._node_name = node_name
        self._colocated = colocated

    async def RequestBackup(self, request: cpb.BackupRequest, context: grpc.aio.ServicerContext) -> cpb.BackupReply:
        if not request.node_id or not request.kind:
            await abort_with(context, BrokerError(Reason.INVALID_REQUEST, "a backup request needs node_id and kind"))
        if self._colocated is None:
            return cpb.BackupReply(accepted=False, node_name=self._node_name,
                                   reason="this node has no colocated ha-policy: it hosts no backups")
        return await self._colocated.handle(request)


def hosted_backups(colocated: ColocatedBackups | None) -> HostedService:
    """The `HostedService` every router carries: it answers colocated lives' requests for a backup."""
    return lambda node: (BackupHostingServicer(node.node_name, colocated), BACKUP_HOSTING)
