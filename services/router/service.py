"""Running a router node as a process: start, announce, serve until a signal
or a halt, stop in order.

The router is given its journal (`JournalAPI`); whether that journal is a
service in another process or hosted in this one is decided by
`services/embedded.py`, so the router never imports the journal service.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable

from meshmq.config.models import BrokerConfig
from meshmq.journal_client import JournalAPI
from meshmq.runtime import NodeHalted, ScaleDownFailed, first_done, report_ready, until_signalled
from meshmq.security.cluster_identity import start_warnings

from .membership import RouterMembership
from .server import RouterNode

log = logging.getLogger("meshmq")


async def run_router(
    config: BrokerConfig, journal: JournalAPI, *, ready_file: str | None = None,
    on_ready: Callable[[dict], None] | None = None,
) -> None:
    for warning in start_warnings(config, "router"):
        log.warning(warning)
    node = RouterNode(config, journal)
    await node.start()
    membership = RouterMembership(config)
    try:
        await membership.start(node)
    except BaseException:
        await membership.stop()
        await node.stop()
        await journal.close()
        raise
    # Everything allocated so far (modules, descriptors, recovered state) lives
    # for the whole run: keep it out of the collector's full passes, which
    # otherwise show up as latency spikes on the hot path.
    gc.freeze()
    info = {
        "service": "router",
        "name": config.name,
        "node_id": node.broker.node_id,
        "endpoints": node.endpoints,
        "journal": journal.description,
    }
    report_ready(info, ready_file, on_ready)
    lost = asyncio.create_task(membership.lost())
    stopped = asyncio.create_task(node.wait())
    failed_scale_down: ScaleDownFailed | None = None
    try:
        await until_signalled(asyncio.create_task(first_done(stopped, lost)))
    finally:
        log.info("stopping")
        stopped.cancel()
        await membership.stop()
        if config.scale_down is not None and not node.broker.halted.is_set():
            try:
                await node.scale_down()
            except ScaleDownFailed as exc:
                failed_scale_down = exc
                held = sum(q.message_count for q in node.broker.queues.values())
                log.error("scale-down failed: %s. Not stopping quietly: %d messages stay in this node's store "
                          "(non-durable ones are lost with it); start it again, or bring a node of its scale-down "
                          "group up and stop it again", exc, held)
        await node.stop()
        await journal.close()
    if failed_scale_down is not None:
        raise failed_scale_down
    if lost.done() and not lost.cancelled() and lost.exception() is not None:
        raise lost.exception()
    lost.cancel()
    if node.broker.halted.is_set():
        raise NodeHalted(node.broker.halt_reason)
