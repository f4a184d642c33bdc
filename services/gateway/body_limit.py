"""A cap on request bodies, enforced before they are read.

FastAPI reads a whole body into memory before an endpoint runs, and it does
so before anyone has logged in: a 50 MB body to /api/v1/auth/token was read
in full, and a 200 MB one left the gateway 277 MB larger. This ASGI
middleware refuses a body whose Content-Length is over the limit without
reading a byte of it, and counts the chunks of a body sent without one
(chunked), stopping at the limit. The limit is `gateway.max-body-size` for a
caller with a live session (a bearer token or the console's cookie) and the
much smaller `gateway.max-anonymous-body-size` for everyone else: before
log-in the only body worth sending is a name and a password. (Starlette's own
`max_body_size` has one limit for every caller and answers in plain text.)

The refusal is a 413 problem naming the limit and the key that sets it, with
`Connection: close`, so the server drops the connection instead of reading
and discarding the rest of the body.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import Sessions, session_key
from .problems import problem

REASON = "BODY_TOO_LARGE"


class BodyTooLarge(HTTPException):
    """Raised from `receive` when a chunked body passes the limit; the app's
    HTTPException handler answers it as the 413 problem."""

    def __init__(self, detail: str) -> None:
        super().__init__(413, detail, headers={"Connection": "close"})


def _detail(limit: int, key: str, anonymous: bool) -> str:
    who = "before log-in" if anonymous else "for a logged-in caller"
    return (f"the request body is larger than {limit} bytes, the gateway's limit {who} "
            f"(gateway.{key})" + ("; log in first (POST /api/v1/auth/token)" if anonymous else ""))


class BodyLimit:
    def __init__(self, app: ASGIApp, *, sessions: Sessions, max_body_size: int,
                 max_anonymous_body_size: int) -> None:
        self.app = app
        self.sessions = sessions
        self.max_body_size = max_body_size
        self.max_anonymous_body_size = max_anonymous_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        anonymous = self.sessions.get(session_key(request)) is None
        limit = self.max_anonymous_body_size if anonymous else self.max_body_size
        detail = _detail(limit, "max-anonymous-body-size" if anonymous else "max-body-size", anonymous)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            response = problem(413, "request body too large", detail, REASON)
            response.headers["Connection"] = "close"
            await response(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(detail)
            return message

        await self.app(scope, limited, send)
