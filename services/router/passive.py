"""What a passive node (a backup waiting for its store) answers on its acceptors.

It serves nothing: every call, whatever the service or method, ends at once
with UNAVAILABLE, reason NOT_ACTIVE, and where the node that serves the store
listens when it is known (`meshmq-live` metadata). A client that dialled the
backup learns where to go (the SDK tries it, `NotActiveError.live`), and an
operator's `meshmq` command says why instead of "connection refused". The
acceptors are the node's own (TLS included), so the node listens on the same
endpoints before and after it activates. With security-enabled, only a
caller with a user's credentials is told where the live is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc

from meshmq.config.models import BrokerConfig
from meshmq.errors import LIVE_METADATA_KEY, NODE_NAME_METADATA_KEY, REASON_METADATA_KEY, Reason
from meshmq.security.authentication import Authenticator
from meshmq.transport import bind_listener, server_options

log = logging.getLogger("meshmq.router")


class _NotActive(grpc.GenericRpcHandler):
    def __init__(self, name: str, live: Callable[[], str], auth: Authenticator) -> None:
        self._name = name
        self._live = live
        self._auth = auth

    def service(self, handler_call_details):
        async def refuse(request_iterator, context: grpc.aio.ServicerContext) -> None:
            live = self._live()
            # scrypt, for known and unknown users alike: in a worker thread, off the event loop.
            metadata = dict(context.invocation_metadata() or ())
            if self._auth.enabled and await asyncio.to_thread(self._auth.identify, metadata) is None:
                live = ""  # with security on, only a user learns where the live is
            metadata = [(REASON_METADATA_KEY, Reason.NOT_ACTIVE.value), (NODE_NAME_METADATA_KEY, self._name)]
            if live:
                metadata.append((LIVE_METADATA_KEY, live))
            context.set_trailing_metadata(tuple(metadata))
            where = f"the node serving it listens on {live}" if live else "no node serves it now"
            await context.abort(grpc.StatusCode.UNAVAILABLE,
                                f"node {self._name} is a passive backup waiting for its store; {where}")

        # One handler shape for every method: it refuses before reading anything.
        return grpc.stream_stream_rpc_method_handler(refuse)


class PassiveServer:
    """The node's acceptors while it waits for its store."""

    def __init__(self, config: BrokerConfig, live: Callable[[], str]) -> None:
        self._config = config
        self._live = live
        self._server: grpc.aio.Server | None = None
        self.endpoints: list[str] = []

    async def start(self) -> list[str]:
        c = self._config
        auth = Authenticator(c.security_enabled, ((u.username, u.password) for u in c.users))
        self._server = grpc.aio.server(options=server_options(), handlers=[_NotActive(c.name, self._live, auth)])
        self.endpoints = [bind_listener(self._server, acc, f"acceptor {acc.name!r}") for acc in self._config.acceptors]
        await self._server.start()
        log.info("passive: answering NOT_ACTIVE on %s until this node holds its store", ", ".join(self.endpoints))
        return self.endpoints

    async def stop(self) -> None:
        """Free the acceptors for the active node (which binds the same endpoints)."""
        if self._server is not None:
            await self._server.stop(0)
            self._server = None
