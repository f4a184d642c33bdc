"""The journal as a process of its own (`meshmq serve journal`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from meshmq.config.models import BrokerConfig
from meshmq.metrics import serving
from meshmq.runtime import serve_until_signalled, tighten_store_modes
from meshmq.security import cluster_identity
from meshmq.service_registry import Service

log = logging.getLogger("meshmq")


def open_core(config: BrokerConfig):
    """The journal core for a node's config (the store, its writer process)."""
    from .core import JournalCore

    j = config.journal
    return JournalCore(config.journal_url(), sync=j.sync, max_batch_records=j.max_batch_records,
                       stuck_transaction_ms=j.stuck_transaction_timeout)


async def run_journal(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    from .server import add_journal_service

    cluster_identity.check_service_start(config, "journal", log)
    tighten_store_modes(config)
    core = open_core(config)
    try:
        async with serving(config.metrics, service="journal", node=config.name) as metrics:
            metrics.put("journal", core.fill_metrics)
            await serve_until_signalled(
                config.journal.listen, "journal", lambda server: add_journal_service(server, core),
                cluster_identity.server_interceptors(config, "journal"), {"store": core.description},
                ready_file=ready_file, on_ready=on_ready, grace_s=2, detail=f"store {core.description}",
                metrics=metrics)
    finally:
        await core.close()


JOURNAL = Service(
    name="journal",
    summary="The journal service alone, listening on journal.listen.",
    run=run_journal,
    ready_line=lambda info: f"meshmq journal listening on {', '.join(info['endpoints'])} (store {info['store']})",
)
