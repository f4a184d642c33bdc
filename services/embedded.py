"""The one place that puts several services into one process.

`meshmq up` and `meshmq serve router` run a router whose journal is hosted
in the same process (the embedded default, SQLite under the data directory)
unless `journal.address` names a journal service elsewhere. The router sees
its journal only through `JournalAPI` either way, so both deployments run one
implementation; services never import each other, only this module does.
"""

from __future__ import annotations

from collections.abc import Callable

from meshmq.config.models import BrokerConfig
from meshmq.journal_client import GrpcJournalClient, JournalAPI
from meshmq.security.cluster_identity import cluster_metadata
from meshmq.service_registry import Service
from meshmq.transport import channel_credentials


def journal_for(config: BrokerConfig) -> JournalAPI:
    """The journal a router uses: a remote journal service, or one hosted here."""
    j = config.journal
    if j.address:
        creds = channel_credentials(j.trust_path, j.cert_path, j.key_path) if j.ssl_enabled else None
        return GrpcJournalClient(j.address, credentials=creds, metadata=cluster_metadata(config))
    from services.journal.service import open_core

    return open_core(config)


async def run_router(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    """A router, behind its HA policy's lease when it has one (shared-store):
    a backup stopped by its live's failback waits as a backup again
    (restart-backup), with a journal of its own each time."""
    from meshmq.activation import FAILED_BACK
    from services.router.service import run_router as run

    policy = config.ha_policy.shared_store
    if policy is None:
        await run(config, journal_for(config), ready_file=ready_file, on_ready=on_ready)
        return
    from services.ha_coordinator.shared_store import SharedStoreLease

    lease = SharedStoreLease(config)
    try:
        while True:
            outcome = await run(config, journal_for(config), ready_file=ready_file, on_ready=on_ready,
                                activation=lease)
            if outcome != FAILED_BACK or policy.slave is None or not policy.slave.restart_backup:
                return
    finally:
        await lease.close()


ROUTER = Service(
    name="router",
    summary="The broker node (journal in-process unless journal.address is set).",
    run=run_router,
    ready_line=lambda info: (
        f"meshmq router {info['name']} listening on {', '.join(info['endpoints'])} "
        f"(node {info['node_id']}, journal {info['journal']})"
    ),
)
