"""Running a router node under its ha-policy: which activation it waits on,
what it hosts on its acceptors, and when it runs again.

* **No HA policy** (live-only): one run, active from the start.
* **Shared store**: runs behind the store's lease (shared_store.py); a backup
  stopped by its live's failback waits as a backup again (restart-backup),
  with a journal of its own each time.
* **Replication**: a live's journal streams its writes to its backup
  (replication_live.py); a backup copies its live's store
  (replication_backup.py) until the quorum lets it take over — pluggable on
  etcd (pluggable_activation.py) or classic votes among the cluster's lives
  (classic.py). A backup that took over streams to a backup in turn (a
  spare, or its live failing back), and one that stepped down for its live's
  failback waits as a backup again (classic: restart-backup).
* **Colocated** (either kind): the node also hosts backups of other lives
  (colocated.py) and asks for one of its own while it serves.

Every run answers the lives' quorum votes (vote_service.py) and colocated
lives' requests for a backup (colocated.py) on its acceptors.
The HA coordinator imports no other service: the router and journal pieces it
drives come in a `NodeParts` from services/embedded.py, the one composer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meshmq.activation import FAILED_BACK
from meshmq.config.models import BrokerConfig
from meshmq.hosted import HostedService, hosting
from meshmq.journal_client import JournalAPI
from meshmq.metrics import MetricsEndpoint
from meshmq.v1 import replication_pb2 as rpb

from .backup_pairing import pairing_refusal
from .colocated import ColocatedBackups, RunBackup, hosted_backups
from .replication_backup import ReplicaRunner
from .replication_live import ReplicatingJournal
from .vote_service import hosted_votes

# One run of a router node (services/router/service.py's run_router): its outcome, FAILED_BACK or None.
RunRouter = Callable[..., Awaitable[str | None]]


@dataclass(frozen=True)
class NodeParts:
    """What the runner drives, from the router and the journal services."""

    run_router: RunRouter
    # The journal a run uses (hosted in the process, or a journal service), its metrics exported.
    journal_for: Callable[[BrokerConfig, MetricsEndpoint], JournalAPI]
    # A whole node, as `meshmq up` runs it: a colocated backup hosted beside this one.
    run_node: RunBackup
    # How this node opens calls to other nodes (the router's link identity: TLS, cluster credential).
    link_identity: Callable[[BrokerConfig], Any]
    # A replicating node's id and store epoch, read before its journal opens (made on first start).
    local_store: Callable[[BrokerConfig], tuple[str, int]]
    # The journal store a backup applies its live's writes to, on the copy it installed.
    replica_store: Callable[[Path, str], object]


async def run_with_ha_policy(config: BrokerConfig, parts: NodeParts, *, metrics: MetricsEndpoint,
                             ready_file: str | None, on_ready: Callable[[dict], None] | None) -> None:
    """Run the node until it stops for good (a signal, a halt, or a failback it does not wait after)."""
    if config.ha_policy.replication is not None:
        colocated, colocation = _colocation(config, parts)
        try:
            await _run_replicating(config, parts, ready_file=ready_file, on_ready=on_ready, colocated=colocated,
                                   colocation=colocation, metrics=metrics)
        finally:
            if colocated is not None:
                await colocated.close()
        return
    policy = config.ha_policy.shared_store
    if policy is None:
        await parts.run_router(config, parts.journal_for(config, metrics), ready_file=ready_file, on_ready=on_ready,
                               services=[hosted_votes, hosted_backups(None)], metrics=metrics)
        return
    from .shared_store import SharedStoreLease

    lease = SharedStoreLease(config)
    colocated, colocation = _colocation(config, parts)

    def keep_ports(bound: BrokerConfig) -> None:
        """Acceptor ports picked at the first run (port 0) stay the node's for the next."""
        nonlocal config
        config = bound

    try:
        while True:
            outcome = await parts.run_router(config, parts.journal_for(config, metrics), ready_file=ready_file,
                                             on_ready=on_ready, activation=lease,
                                             services=[hosted_votes, hosted_backups(colocated)],
                                             on_bound=keep_ports, metrics=metrics, **colocation)
            if outcome != FAILED_BACK or policy.slave is None or not policy.slave.restart_backup:
                return
    finally:
        if colocated is not None:
            await colocated.close()
        await lease.close()


def _colocation(config: BrokerConfig, parts: NodeParts) -> tuple[ColocatedBackups | None, dict]:
    """ha-policy shared-store or replication colocated: the backups this node hosts for
    other lives (each a slave run as a node of its own beside it), and its own request for
    one while it serves; (ColocatedBackups or None, run_router's keyword arguments)."""
    if config.colocated is None:
        return None, {}
    colocated = ColocatedBackups(config, run_backup=parts.run_node)

    async def on_active(node) -> None:
        """While the node serves (`node`: the router's RouterNode), ask for a backup of it."""
        colocated.node_id, colocated.endpoint = node.broker.node_id, node.endpoints[0]
        if not colocated.colocated.request_backup:
            return
        static = [config.connectors[ref] for cc in config.cluster_connections.values()
                  for ref in cc.static_connectors or ()]

        def candidates() -> list[str]:
            members = [m.connector for m in node.topology.snapshot().members if m.node_id != node.broker.node_id]
            return list(dict.fromkeys(members + static))

        await colocated.request_backup(candidates, parts.link_identity(config))

    return colocated, {"on_active": on_active}


async def _run_replicating(config: BrokerConfig, parts: NodeParts, *, ready_file: str | None,
                           on_ready: Callable[[dict], None] | None, colocated: ColocatedBackups | None,
                           colocation: dict, metrics: MetricsEndpoint) -> None:
    """ha-policy replication: run after run, while a backup that stepped down for
    its live's failback waits as a backup again."""
    rep = config.ha_policy.replication
    # After stepping down for its live's failback, a backup waits as a backup again
    # (classic: unless restart-backup is false).
    restart = rep.backup is not None or (rep.slave is not None and rep.slave.restart_backup)

    def keep_ports(bound: BrokerConfig) -> None:
        """Acceptor ports picked at the first run (port 0) stay the node's for the next."""
        nonlocal config
        config = bound

    while True:
        outcome = await _replicating_run(config, parts, ready_file=ready_file, on_ready=on_ready,
                                         on_bound=keep_ports, colocated=colocated, colocation=colocation,
                                         metrics=metrics)
        if outcome != FAILED_BACK or not restart:
            return


async def _replicating_run(config: BrokerConfig, parts: NodeParts, *, ready_file: str | None,
                           on_ready: Callable[[dict], None] | None, on_bound: Callable[[BrokerConfig], None],
                           colocated: ColocatedBackups | None, colocation: dict,
                           metrics: MetricsEndpoint) -> str | None:
    """One run of a replicating node, from waiting (a backup) to stopping."""
    rep = config.ha_policy.replication
    identity = parts.link_identity(config)
    if rep.classic:
        from .classic import ClassicActivation

        activation = ClassicActivation(config, identity, local_store=lambda: parts.local_store(config))
    else:
        from .pluggable_activation import PluggableActivation

        activation = PluggableActivation(config, local_store=lambda: parts.local_store(config))

    def runner(**kwargs) -> ReplicaRunner:
        return ReplicaRunner(config, identity=identity, instance_id=activation.instance,
                             connector=lambda: activation.connector, ack_timeout_s=activation.ack_timeout_s,
                             try_activate=activation.try_take_over, open_store=parts.replica_store, **kwargs)

    try:
        role = rep.live_role or rep.backup_role
        # A live streams to its backup; so does a backup once it serves (to a spare
        # backup, or — classic — to its master failing back).
        journal = ReplicatingJournal(
            parts.journal_for(config, metrics), config.journal_file(), node_name=config.name,
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
        services: list[HostedService] = [hosted_votes, hosted_backups(colocated),
                                         hosting(journal, rpb.DESCRIPTOR.services_by_name["Replication"])]
        if rep.backup_role is not None:
            replica = runner()
            activation.replicate = replica.run
            activation.live_endpoint = lambda: replica.live
        else:  # a live whose store is served elsewhere copies it back from there
            activation.failback = lambda at: runner(lives=[at], failback=True).run()
        return await parts.run_router(config, journal, ready_file=ready_file, on_ready=on_ready,
                                      activation=activation, services=services, on_bound=on_bound, metrics=metrics,
                                      **colocation)
    finally:
        await activation.close()
