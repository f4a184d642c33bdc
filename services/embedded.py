"""The one place that puts several services into one process.

`meshmq up` and `meshmq serve router` run a router whose journal is hosted
in the same process (the embedded default, SQLite under the data directory)
unless `journal.address` names a journal service elsewhere. The router sees
its journal only through `JournalAPI` either way, so both deployments run one
implementation; services never import each other, only this module does.
The router runs under its ha-policy as the HA coordinator's runner decides
(services/ha-coordinator/runner.py), given the router's and the journal's
pieces from here.
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
    """A router under its ha-policy, as the HA coordinator's runner drives it
    (services/ha-coordinator/runner.py), given the router's and the journal's
    pieces here. Its metrics endpoint (`metrics` in the config) serves for as
    long as this runs, across the runs an HA policy makes, with security
    enabled only to users who may view the management state."""
    from services.ha_coordinator.runner import NodeParts, run_with_ha_policy
    from services.router.cluster.link_identity import link_identity
    from services.router.service import run_router as run

    parts = NodeParts(run_router=run, journal_for=journal_for,
                      run_node=lambda backup, on_ready: run_router(backup, on_ready=on_ready),
                      link_identity=link_identity, local_store=_local_store, replica_store=_replica_store)
    async with serving(config.metrics, service="router", node=config.name, access=ScrapeAccess.from_config(config),
                       tls=metrics_tls(config)) as metrics:
        await run_with_ha_policy(config, parts, metrics=metrics, ready_file=ready_file, on_ready=on_ready)


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
