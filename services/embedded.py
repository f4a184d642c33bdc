"""The one place that puts several services into one process.

`meshmq up` and `meshmq serve router` run a router whose journal is hosted
in the same process (the embedded default, SQLite under the data directory)
unless `journal.address` names a journal service elsewhere. The router sees
its journal only through `JournalAPI` either way, so both deployments run one
implementation; services never import each other, only this module does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from meshmq.config.models import BrokerConfig
from meshmq.journal_client import GrpcJournalClient, JournalAPI
from meshmq.metrics import MetricsEndpoint, serving
from meshmq.metrics_access import ScrapeAccess, metrics_tls
from meshmq.security.cluster_identity import cluster_prover
from meshmq.service_registry import Service
from meshmq.transport import channel_credentials

log = logging.getLogger("meshmq")


def journal_for(config: BrokerConfig, metrics: MetricsEndpoint | None = None) -> JournalAPI:
    """The journal a router uses: a remote journal service, or one hosted here
    (whose metrics then go out with the router's)."""
    j = config.journal
    if j.address:
        creds = channel_credentials(j.trust_path, j.cert_path, j.key_path) if j.ssl_enabled else None
        return GrpcJournalClient(j.address, credentials=creds, prover=cluster_prover(config))
    from services.journal.service import open_core

    core = open_core(config)
    if metrics is not None:
        metrics.put("journal", core.fill_metrics)
    return core


async def run_router(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    """A router, with the admin gateway in the same process when gateway.enabled
    (the embedded default, `meshmq up`): the ready file and line then name the console."""
    from meshmq.runtime import tighten_store_modes

    tighten_store_modes(config)
    if not config.gateway.enabled:
        await _run_node(config, ready_file=ready_file, on_ready=on_ready)
        return
    from meshmq.runtime import report_ready
    from services.gateway.server import GatewayServer
    from services.gateway.service import warn_dev_mode

    gateway = GatewayServer(config)
    warn_dev_mode(config, log)
    url = await gateway.start()

    def ready(info: dict) -> None:
        if info.get("endpoints"):
            gateway.state.directory.set_own_connector(info["endpoints"][0])
        report_ready({**info, "console": f"{url}/"}, ready_file, on_ready)

    try:
        await _run_node(config, ready_file=None, on_ready=ready)
    finally:
        await gateway.stop()


async def _run_node(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    """A router, behind its HA policy's lease when it has one (shared-store):
    a backup stopped by its live's failback waits as a backup again
    (restart-backup), with a journal of its own each time. Its metrics endpoint
    (`metrics` in the config) serves for as long as this runs, across those runs,
    with security enabled only to users who may view the management state."""
    async with serving(config.metrics, service="router", node=config.name, access=ScrapeAccess.from_config(config),
                       tls=metrics_tls(config)) as metrics:
        await _run_router(config, metrics, ready_file=ready_file, on_ready=on_ready)


async def _run_router(config: BrokerConfig, metrics: MetricsEndpoint, *, ready_file: str | None,
                      on_ready: Callable[[dict], None] | None) -> None:
    from meshmq.activation import FAILED_BACK
    from services.router.service import run_router as run

    if config.ha_policy.replication is not None:
        hosting, colocation = _colocation(config)
        try:
            await _run_replicating(config, ready_file=ready_file, on_ready=on_ready, colocation=colocation,
                                   metrics=metrics)
        finally:
            if hosting is not None:
                await hosting.close()
        return
    policy = config.ha_policy.shared_store
    if policy is None:
        await run(config, journal_for(config, metrics), ready_file=ready_file, on_ready=on_ready, metrics=metrics)
        return
    from services.ha_coordinator.shared_store import SharedStoreLease

    lease = SharedStoreLease(config)
    hosting, colocation = _colocation(config)

    def keep_ports(bound: BrokerConfig) -> None:
        """Acceptor ports picked at the first run (port 0) stay the node's for the next."""
        nonlocal config
        config = bound

    try:
        while True:
            outcome = await run(config, journal_for(config, metrics), ready_file=ready_file, on_ready=on_ready,
                                activation=lease, on_bound=keep_ports, metrics=metrics, **colocation)
            if outcome != FAILED_BACK or policy.slave is None or not policy.slave.restart_backup:
                return
    finally:
        if hosting is not None:
            await hosting.close()
        await lease.close()


def _colocation(config: BrokerConfig) -> tuple:
    """ha-policy shared-store or replication colocated: the backups this node hosts for
    other lives (each a slave run by run_router beside it), and its own request for
    one; (ColocatedBackups or None, run_router's keyword arguments)."""
    if config.colocated is None:
        return None, {}
    from services.ha_coordinator.colocated import ColocatedBackups
    from services.router.cluster.link_identity import link_identity

    hosting = ColocatedBackups(config, run_backup=lambda backup, on_ready: run_router(backup, on_ready=on_ready))

    async def on_active(node) -> None:
        hosting.node_id, hosting.endpoint = node.broker.node_id, node.endpoints[0]
        if not hosting.colocated.request_backup:
            return
        static = [config.connectors[ref] for cc in config.cluster_connections.values()
                  for ref in cc.static_connectors or ()]

        def candidates() -> list[str]:
            members = [m.connector for m in node.topology.snapshot().members if m.node_id != node.broker.node_id]
            return list(dict.fromkeys(members + static))

        await hosting.request_backup(candidates, link_identity(config))

    return hosting, {"backup_requests": hosting.handle, "on_active": on_active}


async def _run_replicating(config: BrokerConfig, *, ready_file: str | None,
                           on_ready: Callable[[dict], None] | None, colocation: dict | None = None,
                           metrics: MetricsEndpoint) -> None:
    """ha-policy replication: a live's journal streams its writes to its
    backup (services/router/replication.py); a backup copies its live's store
    (services/router/replica.py) until the quorum lets it take over —
    pluggable on etcd (services/ha-coordinator/replication.py) or classic
    votes among the cluster's lives (services/ha-coordinator/classic.py). A
    backup that took over streams to a backup in turn (a spare, or its live
    failing back), and one that stepped down for its live's failback waits as
    a backup again (classic: restart-backup)."""
    from meshmq.activation import FAILED_BACK

    rep = config.ha_policy.replication
    # After stepping down for its live's failback, a backup waits as a backup again
    # (classic: unless restart-backup is false).
    restart = rep.backup is not None or (rep.slave is not None and rep.slave.restart_backup)

    def keep_ports(bound: BrokerConfig) -> None:
        """Acceptor ports picked at the first run (port 0) stay the node's for the next."""
        nonlocal config
        config = bound

    while True:
        outcome = await _replicating_run(config, ready_file=ready_file, on_ready=on_ready, on_bound=keep_ports,
                                         colocation=colocation or {}, metrics=metrics)
        if outcome != FAILED_BACK or not restart:
            return


async def _replicating_run(config: BrokerConfig, *, ready_file: str | None, on_ready: Callable[[dict], None] | None,
                           on_bound: Callable[[BrokerConfig], None], colocation: dict,
                           metrics: MetricsEndpoint) -> str | None:
    """One run of a replicating node, from waiting (a backup) to stopping."""
    from services.ha_coordinator.pairing import pairing_refusal
    from services.router.cluster.link_identity import link_identity
    from services.router.replica import ReplicaRunner
    from services.router.replication import ReplicatingJournal
    from services.router.service import run_router as run
    from meshmq.v1 import replication_pb2 as rpb

    rep = config.ha_policy.replication
    if rep.classic:
        from services.ha_coordinator.classic import ClassicActivation

        activation = ClassicActivation(config, link_identity(config), local_store=lambda: _local_store(config))
    else:
        from services.ha_coordinator.replication import ReplicationActivation

        activation = ReplicationActivation(config, local_store=lambda: _local_store(config))

    def runner(**kwargs) -> ReplicaRunner:
        return ReplicaRunner(config, instance_id=activation.instance, connector=lambda: activation.connector,
                             ack_timeout_s=activation.ack_timeout_s, try_activate=activation.try_take_over,
                             open_store=_replica_store, **kwargs)

    try:
        role = rep.live_role or rep.backup_role
        # A live streams to its backup; so does a backup once it serves (to a spare
        # backup, or — classic — to its master failing back).
        journal = ReplicatingJournal(
            journal_for(config, metrics), config.journal_file(), node_name=config.name,
            group_name=role.group_name,
            sync_timeout_ms=role.initial_replication_sync_timeout,
            ack_timeout_s=activation.ack_timeout_s, mark_in_sync=activation.mark_in_sync,
            forget_replica=activation.forget_copy,
            coordination_id=(lambda: journal.node_id) if rep.classic else lambda: activation.quorum.coordination_id,
            on_fenced=lambda why: None,  # its refused writes halt the router
            pairing_refusal=pairing_refusal,
            on_failback=activation.step_down if rep.backup_role is not None and rep.backup_role.allow_failback
            else None)
        activation.node_id = lambda: journal.node_id
        activation.backup_connector = lambda: journal.backup_connector
        activation.backup_changed = journal.backup_changed
        services = [(journal, rpb.DESCRIPTOR.services_by_name["Replication"])]
        if rep.backup_role is not None:
            replica = runner()
            activation.replicate = replica.run
            activation.live_endpoint = lambda: replica.live
        else:  # a live whose store is served elsewhere copies it back from there
            activation.failback = lambda at: runner(lives=[at], failback=True).run()
        return await run(config, journal, ready_file=ready_file, on_ready=on_ready, activation=activation,
                         services=services, on_bound=on_bound, metrics=metrics, **colocation)
    finally:
        await activation.close()


def _local_store(config: BrokerConfig) -> tuple[str, int]:
    """A replicating primary's node id and store epoch, read before its journal opens
    (the store and the id are made on first start)."""
    from services.journal.store import JournalStore

    store = JournalStore(config.journal_url(), sync=True)
    try:
        opened = store.open(config.name)
        return opened.node_id, opened.epoch
    finally:
        store.close()


def _replica_store(path, node_id: str):
    """The journal store a backup applies its live's writes to: the copy it installed."""
    from services.journal.store import JournalStore

    store = JournalStore(f"sqlite:///{path}", sync=True)
    store.node_id = node_id  # the live's: the events it writes are the live's
    store.start_checkpointer()  # as the journal writer does: the WAL restarts under a steady stream
    return store


ROUTER = Service(
    name="router",
    summary="The broker node (journal in-process unless journal.address is set).",
    run=run_router,
    ready_line=lambda info: (
        f"meshmq router {info['name']} listening on {', '.join(info['endpoints'])} "
        f"(node {info['node_id']}, journal {info['journal']})"
        + (f"; console {info['console']}" if info.get("console") else "")
    ),
)
