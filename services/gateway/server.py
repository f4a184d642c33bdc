"""Serving the gateway's app with uvicorn inside the caller's event loop, so
it can run alone (`meshmq serve gateway`) or beside a router in one process
(the embedded default) and stop with the process's own signal handling."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import uvicorn

from meshmq.config.models import BrokerConfig

from .app import create_app


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):
        # The process's runtime owns SIGINT/SIGTERM (meshmq.runtime.until_signalled).
        yield


class GatewayServer:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.app = create_app(config)
        self.url = ""
        self._server: _Server | None = None
        self._task: asyncio.Task | None = None

    @property
    def state(self):
        return self.app.state.gateway

    async def start(self) -> str:
        """Listen on gateway.listen (port 0 picks one) and serve; the base URL once it answers."""
        listen = self.config.gateway.listen
        family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((listen.host, listen.port))
        except OSError as exc:
            sock.close()
            raise OSError(f"gateway cannot listen on {listen.host}:{listen.port}: {exc.strerror}") from None
        sock.listen(128)
        port = sock.getsockname()[1]
        tls = listen.cert_path is not None
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", access_log=False,
                                timeout_keep_alive=max(1, round(self.config.gateway.keep_alive_timeout / 1000)),
                                ssl_certfile=str(listen.cert_path) if tls else None,
                                ssl_keyfile=str(listen.key_path) if tls else None)
        self._server = _Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                sock.close()
                await self._task  # its exception says why the start failed
                raise RuntimeError("the gateway stopped while starting")
            await asyncio.sleep(0.01)
        host = "127.0.0.1" if listen.host in ("0.0.0.0", "") else ("[::1]" if listen.host == "::" else listen.host)
        self.url = f"{'https' if tls else 'http'}://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
