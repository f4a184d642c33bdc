"""The gateway's web application: the REST API, the console, /healthz and
/metrics on one FastAPI app, errors as problem+json."""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel
from starlette.responses import PlainTextResponse, Response

from meshmq import __version__
from meshmq.config.models import BrokerConfig
from meshmq.metrics_access import ScrapeAccess

from . import (address_detail, api, api_docs, connections, console, console_addresses, console_connections, console_links,
               link_config, problems, rates, verify_runs)
from .body_limit import BodyLimit
from .paths import RawPathRouting
from .state import GatewayState


class Health(BaseModel):
    status: str
    version: str


def create_app(config: BrokerConfig, gateway: GatewayState | None = None) -> FastAPI:
    gw = gateway or GatewayState.build(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await gw.directory.start()
        gw.sampler.start()
        try:
            yield
        finally:
            await gw.sampler.close()
            await gw.operations.close()
            await gw.directory.close()

    app = FastAPI(title="meshmq admin gateway", version=__version__, lifespan=lifespan,
                  openapi_url="/api/openapi.json", docs_url=None, redoc_url=None,
                  description="Manage a meshmq cluster: nodes, addresses, queues, messages, bridges and HA groups. "
                              "Log in with POST /api/v1/auth/token and send the token as a bearer token.")
    app.state.gateway = gw
    problems.install(app)
    # The Problem schema every error response refers to (problems.RESPONSES).
    app.openapi_schema = None
    original_openapi = app.openapi

    def openapi():
        if app.openapi_schema is None:
            schema = original_openapi()
            schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = (
                problems.Problem.model_json_schema())
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
    app.include_router(api.router)
    api_docs.install(app)
    app.include_router(rates.router)
    app.include_router(connections.router)
    app.include_router(address_detail.router)
    app.include_router(link_config.router)
    app.include_router(console.router)
    app.include_router(verify_runs.router)
    app.include_router(verify_runs.page_router)
    app.include_router(console_connections.router)
    app.include_router(console_addresses.router)
    app.include_router(console_links.router)
    app.mount("/static", StaticFiles(directory=str(Path(__file__).parent / "static")), name="static")
    gw.metrics.sessions.set_function(gw.sessions.count)
    gw.metrics.count_logins(gw.users.throttle)

    @app.get("/healthz", response_model=Health, tags=["health"])
    async def healthz() -> Health:
        """Answers while the gateway runs (no log-in; routers' health is in /api/v1/nodes)."""
        return Health(status="ok", version=__version__)

    # With security enabled, as on the routers: HTTP Basic of a user with view or manage on the management address.
    scrape_access = ScrapeAccess.from_config(config)

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        if scrape_access is not None:
            peer = request.client.host if request.client else ""
            # A password check is scrypt (tens of ms): off the event loop.
            refusal = await asyncio.to_thread(scrape_access.refusal, request.headers.get("authorization", ""), peer)
            if refusal is not None:
                return PlainTextResponse(refusal.body, refusal.status, headers=dict(refusal.headers))
        names = request.query_params.getlist("name[]")
        return Response(gw.metrics.exposition(names), media_type=CONTENT_TYPE_LATEST)

    # Routing on the path as sent (paths.py), and the body cap before anything reads a body.
    # Both inside `measure`: it counts their answers, and it reads the body through a task
    # group that would wrap the cap's exception in an ExceptionGroup FastAPI does not answer.
    app.add_middleware(RawPathRouting)
    app.add_middleware(BodyLimit, sessions=gw.sessions, max_body_size=config.gateway.max_body_size,
                       max_anonymous_body_size=config.gateway.max_anonymous_body_size)

    @app.middleware("http")
    async def measure(request: Request, call_next):
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "other")
        gw.metrics.requests.labels(request.method, path, f"{response.status_code // 100}xx").inc()
        gw.metrics.duration.labels(path).observe(time.perf_counter() - start)
        return response

    return app
