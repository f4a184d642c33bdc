"""Running services in a process: the embedded default (router with its
journal in-process) and each service on its own.

This is the one place that puts services together; services themselves only
see each other through the protobuf interfaces.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import signal
from collections.abc import Callable
from pathlib import Path

import grpc

from meshmq.config.models import BrokerConfig
from meshmq.journal_client import GrpcJournalClient, JournalAPI, channel_options
from meshmq.tls import channel_credentials, server_credentials

log = logging.getLogger("meshmq")


class NodeHalted(RuntimeError):
    """The router stopped itself: fenced, or its journal refused a write."""


def install_event_loop_policy() -> None:
    """uvloop where installed (DESIGN: the broker is an asyncio program on uvloop)."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def setup_logging(node: str, level: str = "INFO") -> None:
    class NodeFilter(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.node = node
            return True

    handler = logging.StreamHandler()
    handler.addFilter(NodeFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s node=%(node)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("sqlalchemy").setLevel(logging.WARNING)


def journal_for(config: BrokerConfig) -> JournalAPI:
    """The journal a router uses: a remote journal service, or one hosted here."""
    j = config.journal
    if j.address:
        creds = channel_credentials(j.trust_path, j.cert_path, j.key_path) if j.ssl_enabled else None
        return GrpcJournalClient(j.address, credentials=creds)
    from services.journal.core import JournalCore

    return JournalCore(config.journal_url(), sync=j.sync, max_batch_records=j.max_batch_records)


def _write_ready(path: str | None, info: dict) -> None:
    if path:
        tmp = Path(path).with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        tmp.replace(path)


async def _until_signalled(extra: asyncio.Future | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    waiters = [asyncio.create_task(stop.wait())]
    if extra is not None:
        waiters.append(extra)
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for w in waiters:
        w.cancel()


async def run_router(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    from services.router.server import RouterNode

    journal = journal_for(config)
    node = RouterNode(config, journal)
    await node.start()
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
    _write_ready(ready_file, info)
    if on_ready:
        on_ready(info)
    try:
        await _until_signalled(asyncio.create_task(node.wait()))
    finally:
        log.info("stopping")
        await node.stop()
        await journal.close()
    if node.broker.halted.is_set():
        raise NodeHalted(node.broker.halt_reason)


async def run_journal(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    from services.journal.core import JournalCore
    from services.journal.server import add_journal_service

    j = config.journal
    core = JournalCore(config.journal_url(), sync=j.sync, max_batch_records=j.max_batch_records)
    server = grpc.aio.server(options=channel_options())
    add_journal_service(server, core)
    listen = j.listen
    target = f"{listen.host}:{listen.port}"
    if listen.ssl_enabled:
        port = server.add_secure_port(
            target, server_credentials(listen.cert_path, listen.key_path, listen.trust_path, listen.need_client_auth)
        )
    else:
        port = server.add_insecure_port(target)
    if port == 0:
        raise RuntimeError(f"journal cannot listen on {target}")
    await server.start()
    info = {"service": "journal", "endpoints": [f"{listen.host}:{port}"], "store": core.description}
    _write_ready(ready_file, info)
    if on_ready:
        on_ready(info)
    log.info("journal service listening on %s:%d, store %s", listen.host, port, core.description)
    try:
        await _until_signalled()
    finally:
        await server.stop(2)
        await core.close()
