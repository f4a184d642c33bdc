"""Running a router node as a process: start, announce, serve until a signal
or a halt, stop in order.

The router is given its journal (`JournalAPI`); whether that journal is a
service in another process or hosted in this one is decided by
`services/embedded.py`, so the router never imports the journal service.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
from collections.abc import Awaitable, Callable, Sequence

from meshmq.activation import FAILED_BACK, LEASE_LOST, Activation, local_grant
from meshmq.config.models import BrokerConfig
from meshmq.hosted import HostedService
from meshmq.journal_client import JournalAPI
from meshmq.metrics import MetricsEndpoint, ready_info
from meshmq.runtime import NodeHalted, ScaleDownFailed, first_done, report_ready, until_signalled
from meshmq.security.cluster_identity import start_warnings

from . import metrics as router_metrics
from .membership import RouterMembership
from .passive import PassiveServer
from .server import RouterNode

log = logging.getLogger("meshmq")


async def run_router(
    config: BrokerConfig, journal: JournalAPI, *, ready_file: str | None = None,
    on_ready: Callable[[dict], None] | None = None, activation: Activation | None = None,
    services: Sequence[HostedService] = (), on_bound: Callable[[BrokerConfig], None] | None = None,
    on_active: Callable[[RouterNode], Awaitable] | None = None,
    metrics: MetricsEndpoint | None = None,
) -> str | None:
    """Serve until a signal, a halt, or (with an HA policy) until the store must
    be given up. Returns FAILED_BACK when an active backup stopped for its
    live's failback (it may wait as a backup again), None otherwise.
    `on_active` runs while the node serves (the colocated policy asking for a
    backup: services/ha-coordinator/colocated.py).
    `metrics` exports the node's metrics (services/router/metrics.py) while it runs.
    `services` are served on the acceptors beside the router's own (meshmq/hosted.py).
    The store is activated at the epoch the activation grants (without one: the
    next after the store's, meshmq/activation.py's `local_grant`)."""
    for warning in start_warnings(config, "router"):
        log.warning(warning)
    grant = local_grant
    if activation is not None:
        if metrics is not None:
            metrics.put("router", router_metrics.fill_passive)
        passive = PassiveServer(config, activation.live)
        endpoints = await passive.start()
        # The active node listens where the passive one did (a port 0 is picked once).
        config = config.model_copy(update={"acceptors": tuple(
            acc.model_copy(update={"port": int(ep.rpartition(":")[2])}) for acc, ep in zip(config.acceptors, endpoints))})
        if on_bound is not None:
            on_bound(config)  # a backup waiting again after a failback listens there too
        if activation.passive_start:
            # Started as far as a passive node goes: a backup, or a live with wait-for-activation false.
            report_ready({**_passive_info(config, activation, endpoints), **ready_info(metrics)}, ready_file, on_ready)
        activation.listening_at(endpoints[0])
        acquiring = asyncio.create_task(activation.acquire())
        try:
            await until_signalled(acquiring)
        finally:
            await passive.stop()
        if not acquiring.done() or acquiring.cancelled():
            log.info("stopped while waiting for activation")
            await journal.close()
            return None
        grant = acquiring.result()
    node = RouterNode(config, journal, services)
    try:
        await node.start(grant)
    except BaseException:
        if activation is not None:
            await activation.release(failover=True)
        raise
    if activation is not None:
        activation.listening_at(node.endpoints[0])
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
        "active": True,
        "epoch": node.broker.epoch,
        **ready_info(metrics),
    }
    if metrics is not None:
        metrics.put("router", functools.partial(router_metrics.fill, node))
    report_ready(info, ready_file, on_ready)
    lost = asyncio.create_task(membership.lost())
    stopped = asyncio.create_task(node.wait())
    held = asyncio.create_task(activation.held()) if activation is not None else asyncio.create_task(_forever())
    naming = asyncio.create_task(_name_backup(activation, node, membership)) if activation is not None else None
    alongside = asyncio.create_task(on_active(node)) if on_active is not None else None
    failed_scale_down: ScaleDownFailed | None = None
    if config.scales_down_on_activation:
        serving = asyncio.create_task(_scale_down_on_activation(node, lambda: first_done(stopped, lost, held)))
    else:
        serving = asyncio.create_task(first_done(stopped, lost, held))
    try:
        await until_signalled(serving)
    finally:
        finished = serving.done() and not serving.cancelled() and serving.exception() is None
        scaled_down = finished and serving.result() is True
        log.info("stopping")
        stopped.cancel()
        if naming is not None:
            naming.cancel()
        if alongside is not None:
            alongside.cancel()
        outcome = held.result() if held.done() and not held.cancelled() else None
        held.cancel()
        await membership.stop()
        if config.scale_down is not None and not config.scales_down_on_activation and not node.broker.halted.is_set():
            try:
                await node.scale_down()
            except ScaleDownFailed as exc:
                failed_scale_down = exc
                held_count = sum(q.message_count for q in node.broker.queues.values())
                log.error("scale-down failed: %s. Not stopping quietly: %d messages stay in this node's store "
                          "(non-durable ones are lost with it); start it again, or bring a node of its scale-down "
                          "group up and stop it again", exc, held_count)
        await node.stop()
        if metrics is not None:
            metrics.drop("router")
        await journal.close()
        if activation is not None and outcome != LEASE_LOST and not node.broker.halted.is_set():
            policy = config.ha_policy.shared_store and config.ha_policy.shared_store.own()
            # A backup that scaled down leaves the (emptied) store to its live: backups do not take it again.
            await activation.release(failover=policy is not None and policy.failover_on_shutdown and not scaled_down,
                                     failback=outcome == FAILED_BACK)
    if failed_scale_down is not None:
        raise failed_scale_down
    if lost.done() and not lost.cancelled() and lost.exception() is not None:
        raise lost.exception()
    lost.cancel()
    if outcome == LEASE_LOST:
        raise NodeHalted(f"{activation.description}: another node holds the lease; this node stopped serving")
    if node.broker.halted.is_set():
        raise NodeHalted(node.broker.halt_reason)
    return outcome


async def _scale_down_on_activation(node: RouterNode, serve: Callable[[], Awaitable]) -> bool:
    """A slave with scale-down (shared store, or classic replication) that took the store
    over (Artemis's "Scale Down and Backups"): every message goes to another live at once, clients are told to
    reconnect there, and the node stops (True). If no node can take them, it serves them
    itself rather than leave them unavailable (False once it stops serving)."""
    try:
        await node.scale_down()
    except ScaleDownFailed as exc:
        log.error("scale-down after taking over the store failed: %s. Serving the store instead", exc)
        await serve()
        return False
    log.info("scaled down after taking over the store; stopping (the store is left for its live)")
    return True


async def _name_backup(activation: Activation, node: RouterNode, membership: RouterMembership) -> None:
    """Keep the backup this node names to clients (topology, announcement) current."""
    async for connector in activation.backups():
        if connector == node.backup_connector:
            continue
        node.backup_connector = connector
        if connector:
            log.info("backup at %s waits to take over this node's store", connector)
        else:
            log.warning("no backup waits to take over this node's store any more")
        await membership.backup_changed(node)


async def _forever() -> None:
    await asyncio.Event().wait()


def _passive_info(config: BrokerConfig, activation: Activation, endpoints: list[str]) -> dict:
    """The ready file of a node waiting for its store: where it listens (answering
    NOT_ACTIVE until it holds the store, then serving there)."""
    return {
        "service": "router",
        "name": config.name,
        "node_id": "",
        "endpoints": endpoints,
        "journal": activation.description,
        "active": False,
    }
