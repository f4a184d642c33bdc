"""Errors as RFC 9457 problem+json, carrying the router's reason code.

The HTTP status follows the reason: a missing queue is 404, a refused
permission 403, a router that cannot be reached 503, a router's internal
failure 502 (the gateway itself did not fail). The gateway answers 500 only
for its own bugs."""

from __future__ import annotations

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from meshmq.errors import MeshMQError, Reason

from .views import NodeDown, NodeNotFound

MEDIA_TYPE = "application/problem+json"

# By reason code (strings, so a code a newer router sends maps too).
STATUS_FOR_REASON: dict[str, int] = {
    "INVALID_SELECTOR": 400,
    "INVALID_REQUEST": 400,
    "QUEUE_NOT_FOUND": 404,
    "ADDRESS_NOT_FOUND": 404,
    "MESSAGE_NOT_FOUND": 404,
    "QUEUE_EXISTS": 409,
    "QUEUE_IN_USE": 409,
    "ADDRESS_IN_USE": 409,
    "ADDRESS_EXISTS": 409,
    "DUPLICATE_ID": 409,
    "ADDRESS_FULL": 409,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "MESSAGE_TOO_LARGE": 413,
    "NOT_ACTIVE": 503,
    "FENCED": 503,
    "STORE_UNAVAILABLE": 503,
    "UNBLOCKED": 503,
    "CONNECTION_FAILED": 503,
    "SCALED_DOWN": 503,
}


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str = ""
    # The router's (or the gateway's) machine-readable reason, e.g. QUEUE_NOT_FOUND.
    reason: str = ""
    node: str = ""


def problem(status: int, title: str, detail: str = "", reason: str = "", node: str = "") -> JSONResponse:
    body = Problem(type=f"urn:meshmq:problem:{reason}" if reason else "about:blank", title=title, status=status,
                   detail=detail, reason=reason, node=node)
    return JSONResponse(body.model_dump(), status_code=status, media_type=MEDIA_TYPE)


def for_error(exc: MeshMQError, node: str = "") -> JSONResponse:
    status = STATUS_FOR_REASON.get(exc.reason.value, 502)
    return problem(status, exc.reason.value.replace("_", " ").lower(), str(exc), exc.reason.value, node)


# The responses every API route may give besides its own, for the OpenAPI document.
_CONTENT = {"content": {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}}
RESPONSES: dict[int | str, dict] = {
    status: {"description": text, **_CONTENT}
    for status, text in ((400, "Bad request"), (401, "Not logged in"), (403, "Not allowed (permission or CSRF)"),
                         (404, "No such node, queue or address"), (409, "Conflict"), (413, "Too large"),
                         (422, "Invalid request"), (502, "The router failed"), (503, "The router is unavailable"))
}


def install(app) -> None:
    """Every error the API can meet, answered as problem+json."""

    @app.exception_handler(MeshMQError)
    async def _meshmq(request: Request, exc: MeshMQError):
        return for_error(exc, request.path_params.get("node", ""))

    @app.exception_handler(NodeNotFound)
    async def _no_node(request: Request, exc: NodeNotFound):
        return problem(404, "no such node", str(exc), "NODE_NOT_FOUND", request.path_params.get("node", ""))

    @app.exception_handler(NodeDown)
    async def _down(request: Request, exc: NodeDown):
        reason = exc.error.reason.value if exc.error is not None else Reason.CONNECTION_FAILED.value
        return problem(503, "node unavailable", str(exc), reason, request.path_params.get("node", ""))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        return problem(422, "invalid request", where, Reason.INVALID_REQUEST.value)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        reason = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  413: "BODY_TOO_LARGE"}.get(exc.status_code, "")
        response = problem(exc.status_code, str(exc.detail), str(exc.detail), reason)
        for key, value in (exc.headers or {}).items():
            response.headers[key] = value
        return response
