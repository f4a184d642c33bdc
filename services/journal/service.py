"""The journal as a process of its own (`meshmq serve journal`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import grpc

from meshmq.config.models import BrokerConfig
from meshmq.runtime import report_ready, until_signalled
from meshmq.security import cluster_identity
from meshmq.service_registry import Service
from meshmq.transport import bind_listener, server_options

log = logging.getLogger("meshmq")


def open_core(config: BrokerConfig):
    """The journal core for a node's config (the store, its writer process)."""
    from .core import JournalCore

    j = config.journal
    return JournalCore(config.journal_url(), sync=j.sync, max_batch_records=j.max_batch_records)


async def run_journal(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    from .server import add_journal_service

    problem = cluster_identity.service_problem(config, "journal")
    if problem is not None:
        raise cluster_identity.ClusterIdentityError(problem)
    for warning in cluster_identity.start_warnings(config, "journal"):
        log.warning(warning)
    core = open_core(config)
    server = grpc.aio.server(options=server_options(),
                             interceptors=cluster_identity.server_interceptors(config, "journal"))
    add_journal_service(server, core)
    endpoint = bind_listener(server, config.journal.listen, "journal")
    await server.start()
    info = {"service": "journal", "endpoints": [endpoint], "store": core.description}
    report_ready(info, ready_file, on_ready)
    log.info("journal service listening on %s, store %s", endpoint, core.description)
    try:
        await until_signalled()
    finally:
        await server.stop(2)
        await core.close()


JOURNAL = Service(
    name="journal",
    summary="The journal service alone, listening on journal.listen.",
    run=run_journal,
    ready_line=lambda info: f"meshmq journal listening on {', '.join(info['endpoints'])} (store {info['store']})",
)
