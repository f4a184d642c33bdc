"""Names in URL paths: a node, address or queue name is one percent-encoded
path segment, whatever characters it holds.

Queue and address names may contain `/`, `%`, `?`, `#` or spaces (the
routers accept them). In a URL such a name is sent encoded (`a%2Fb`), but
the HTTP server decodes the path before routing, which turns `%2F` into a
separator: `/queues/a%2Fb/purge` would no longer match
`/queues/{queue}/purge`. So the gateway routes on the path as the client sent
it (`RawPathRouting`), and the `name` convertor decodes each name once, after
the route matched. Links the console renders encode names with `segment`.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from starlette.convertors import Convertor, register_url_convertor
from starlette.types import ASGIApp, Receive, Scope, Send

# What stays as it is when the raw path is re-quoted: the separators, existing escapes, and
# the characters RFC 3986 allows unescaped in a path segment.
_RAW_SAFE = "/%:@!$&'()*+,;=-._~"


def segment(name: str) -> str:
    """`name` as one path segment: every reserved character escaped, `/` included."""
    return quote(name, safe="")


class NameConvertor(Convertor[str]):
    """`{param:name}`: one encoded path segment, handed to the endpoint decoded."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        # Bytes that are not UTF-8 become U+FFFD: no such name exists, so the answer is a 404.
        return unquote(value)

    def to_string(self, value: str) -> str:
        return segment(value)


register_url_convertor("name", NameConvertor())

# The path parameters that carry names; every route with a name in its path uses these.
NODE = "{node:name}"
ADDRESS = "{address:name}"
QUEUE = "{queue:name}"


class RawPathRouting:
    """ASGI middleware: routes see the path still percent-encoded, as the client sent it
    (`raw_path`), so an encoded `/` inside a name stays inside its segment."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path")
            # Without raw_path (not uvicorn) the decoded path is all there is: re-encode it.
            path = quote(raw, safe=_RAW_SAFE) if raw is not None else quote(scope["path"], safe="/")
            scope["path"] = path
        await self.app(scope, receive, send)
