"""What every meshmq service process does the same way: the event loop
policy, logging, the ready file, and running until a signal.

Services import these; the core never imports a service (see
`meshmq/service_registry.py` for how the CLI finds them).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import stat
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshmq.config.models import BrokerConfig

log = logging.getLogger("meshmq")


class ScaleDownFailed(Exception):
    """A node stopped with scale-down enabled could not hand its messages to
    another node: they stay in its store (the CLI exits with status 4)."""


class NodeHalted(RuntimeError):
    """A service stopped itself to protect its data (a router fenced by a newer
    owner of its store, or whose journal refused a write); exit code 3."""


def install_event_loop_policy() -> None:
    """uvloop where installed (DESIGN: the broker is an asyncio program on uvloop)."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def defer_collection() -> None:
    """Hold the cyclic garbage collector while a service process loads: its
    imports make some 80,000 objects the collector tracks, which live as long
    as the process, and collecting among them finds nothing (a router start ran
    ~190 collections, ~60 ms of its ~575 ms of CPU). settle_heap ends it."""
    gc.disable()


def settle_heap() -> None:
    """Once the service's code is loaded, before it runs: move what the imports
    made out of the collector's reach (`gc.freeze`, so no later full collection
    walks it again) and collect as usual from here — not only once the service
    is ready, since a node may wait long for its activation first. Only for a
    process that is one service (`meshmq serve`): frozen objects are never
    freed, which a test process starting many would feel."""
    gc.freeze()
    gc.enable()


# Files and directories a meshmq process creates are its own: 0600 and 0700.
PRIVATE_UMASK = 0o077


def keep_files_private() -> None:
    """From now on, everything this process creates (the journal and its WAL,
    paging and large-message files, replica stores, ready files) is readable by
    its owner only, whatever umask it was started with: a broker's files hold
    every message it keeps. Called first thing at a service process's start."""
    os.umask(PRIVATE_UMASK)


def tighten_modes(directory: Path, files: tuple[Path, ...] = ()) -> None:
    """Take group and other access away from a data directory (and `files`, e.g.
    a journal kept outside it) made before this process's umask applied, e.g. by
    an older meshmq, a container image or a hand-made mkdir; warns when it does."""
    for path, private in ((directory, 0o700), *((f, 0o600) for f in files)):
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            continue
        if not mode & 0o077:
            continue
        try:
            path.chmod(mode & private)
        except OSError as exc:
            log.warning("%s is open to other users (mode %o) and could not be restricted: %s", path, mode,
                        exc.strerror or exc)
            continue
        log.warning("%s was open to other users (mode %o): changed to %o", path, mode, mode & private)


def tighten_store_modes(config: BrokerConfig) -> None:
    """`tighten_modes` for what a node stores: its data directory and, with an
    SQLite journal, the journal file and its -wal and -shm (also when journal.url
    keeps them elsewhere)."""
    journal = config.sqlite_journal_file()
    files: tuple[Path, ...] = ()
    if journal is not None:
        files = (journal, journal.with_name(journal.name + "-wal"), journal.with_name(journal.name + "-shm"))
    tighten_modes(config.data_directory, files)


def setup_logging(node: str, level: str = "INFO") -> None:
    """One line per record, with the node's name on every line."""

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


def report_ready(info: dict, ready_file: str | None, on_ready: Callable[[dict], None] | None) -> None:
    """Tell whoever waits that the service listens: the ready file (written
    atomically, so a reader never sees half of it) and the callback."""
    if ready_file:
        tmp = Path(ready_file).with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        tmp.replace(ready_file)
    if on_ready:
        on_ready(info)


async def first_done(*tasks: asyncio.Task) -> None:
    """Until the first of these tasks completes (its outcome stays in the task)."""
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)


_stop_requests: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Event] = weakref.WeakKeyDictionary()


def _stop_requested() -> asyncio.Event:
    """Set by the first SIGINT or SIGTERM this process gets, and set for good: every
    wait for a signal sees it, however many servers the process runs (colocated
    backups) and whenever each starts waiting (a signal between two waits is not lost)."""
    loop = asyncio.get_running_loop()
    stop = _stop_requests.get(loop)
    if stop is None:
        stop = _stop_requests[loop] = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def until_signalled(extra: asyncio.Future | None = None) -> None:
    """Until SIGINT or SIGTERM (or `extra` completes)."""
    waiters = [asyncio.create_task(_stop_requested().wait())]
    if extra is not None:
        waiters.append(extra)
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for w in waiters:
        w.cancel()


async def serve_until_signalled(listener, service: str, add: Callable, interceptors: list, info: dict, *,
                                ready_file: str | None, on_ready: Callable[[dict], None] | None,
                                grace_s: float, detail: str, metrics=None) -> None:
    """What `meshmq serve journal|discovery|ha-coordinator` do alike once their core
    is up: a gRPC server with `interceptors`, `add(server)` puts the servicer on it,
    listening on `listener`; then the ready file (`info` plus "service" and
    "endpoints", and "metrics" when `metrics`, a meshmq.metrics.MetricsEndpoint,
    serves over HTTP), a log line, and serving until SIGINT/SIGTERM, stopping with `grace_s`."""
    import grpc

    from meshmq.metrics import ready_info
    from meshmq.transport import bind_listener, server_options

    server = grpc.aio.server(options=server_options(), interceptors=interceptors)
    add(server)
    endpoint = bind_listener(server, listener, service)
    await server.start()
    report_ready({"service": service, "endpoints": [endpoint], **info, **ready_info(metrics)}, ready_file, on_ready)
    log.info("%s service listening on %s, %s", service, endpoint, detail)
    try:
        await until_signalled()
    finally:
        await server.stop(grace_s)

