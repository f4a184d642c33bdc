"""The gateway as a process of its own (`meshmq serve gateway`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from meshmq.config.models import BrokerConfig
from meshmq.runtime import report_ready, until_signalled
from meshmq.service_registry import Service

from .auth import DEV_USER
from .server import GatewayServer

log = logging.getLogger("meshmq")


def warn_dev_mode(config: BrokerConfig, log: logging.Logger) -> None:
    if config.gateway.dev_mode:
        extra = f" (built-in user {DEV_USER[0]}/{DEV_USER[1]})" if not config.users else ""
        log.warning("gateway in dev mode: default credentials are accepted%s; never expose it beyond this machine",
                    extra)


async def run_gateway(config: BrokerConfig, *, ready_file: str | None = None,
                      on_ready: Callable[[dict], None] | None = None) -> None:
    """The REST API and console on gateway.listen until SIGINT/SIGTERM."""
    server = GatewayServer(config)
    warn_dev_mode(config, log)
    url = await server.start()
    try:
        report_ready({"service": "gateway", "endpoints": [url], "console": f"{url}/", "metrics": f"{url}/metrics",
                      "routers": server.state.directory.description}, ready_file, on_ready)
        log.info("gateway listening on %s (%s)", url, server.state.directory.description)
        await until_signalled()
    finally:
        await server.stop()


GATEWAY = Service(
    name="gateway",
    summary="The admin gateway alone: REST API, web console and /metrics on gateway.listen.",
    run=run_gateway,
    ready_line=lambda info: f"meshmq gateway listening on {info['endpoints'][0]} (console {info['console']})",
)
