"""The web console: server-rendered pages (Jinja2) made live with htmx.

Pages read through the same `Gatherer` and management client as the REST
API. A form posts to a console route that does the operation and redirects
back (post/redirect/get) with what happened in the page's banner; a failed
operation shows the router's reason there instead of failing the page. Parts
that change by themselves (topology, queue table, an operation's progress)
are fragments htmx reloads every few seconds."""

from __future__ import annotations

import datetime
import secrets
from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from meshmq.errors import MeshMQError
from meshmq.link_kinds import describe_kind

from meshmq.routing_names import INTERNAL_PREFIX

from .api import INTERNAL_REFUSAL, node_detail, search_queues
from .auth import (CSRF_FIELD, LOGIN_CSRF_COOKIE, SESSION_COOKIE, Identity, LoginRefused, client_address,
                   same_token)
from .paths import ADDRESS, NODE, QUEUE, segment
from .state import GatewayState
from .topology_svg import HEIGHT, WIDTH, layout
from .views import NodeDown, NodeNotFound, message_view, queue_view

templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))


def _duration(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}d {h}h" if d else f"{h}h {m}m" if h else f"{m}m {s}s"


def _when(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S") if ms else "—"


def _bytes(n: int) -> str:
    """`n` bytes in binary units: "512 B", "12.3 MiB"."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


templates.env.filters["bytes"] = _bytes
templates.env.filters["when_s"] = lambda s: _when(int(s * 1000))
templates.env.filters["duration"] = _duration
templates.env.filters["when"] = _when
# A name in a link's path: urlencode would leave its `/` as a separator.
templates.env.filters["segment"] = segment
templates.env.filters["link_kind"] = describe_kind

router = APIRouter(include_in_schema=False)
QUEUE_SORTS = {"node", "name", "address", "message_count", "consumers", "messages_added", "messages_acknowledged",
               "messages_dead_lettered"}


def _gw(request: Request) -> GatewayState:
    return request.app.state.gateway


def _who(request: Request) -> Identity | None:
    return _gw(request).sessions.get(request.cookies.get(SESSION_COOKIE))


def _to_login(request: Request) -> RedirectResponse:
    return RedirectResponse(f"/login?{urlencode({'next': request.url.path})}", status_code=303)


def _page(request: Request, name: str, who: Identity | None, **context) -> HTMLResponse:
    context.setdefault("flash", request.query_params.get("done", ""))
    context.setdefault("error", request.query_params.get("error", ""))
    return templates.TemplateResponse(request, name, {"who": who, **context})


async def _form(request: Request, who: Identity) -> dict[str, str] | None:
    """The posted form, or None when its CSRF token is not the session's."""
    form = {k: str(v) for k, v in (await request.form()).items()}
    return form if same_token(form.get(CSRF_FIELD), who.csrf) else None


def _back(path: str, **query: str) -> RedirectResponse:
    return RedirectResponse(f"{path}?{urlencode(query)}" if query else path, status_code=303)


# --- log-in -------------------------------------------------------------------

@router.get("/login")
async def login_page(request: Request, next: str = "/") -> HTMLResponse:
    gw = _gw(request)
    token = secrets.token_urlsafe(24)
    response = _page(request, "login.html", None, login_csrf=token, next=next if next.startswith("/") else "/",
                     dev_mode=gw.users.dev_mode, builtin=gw.users.builtin)
    response.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict")
    return response


@router.post("/login")
async def login(request: Request) -> Response:
    gw = _gw(request)
    form = {k: str(v) for k, v in (await request.form()).items()}
    target = form.get("next", "/")
    target = target if target.startswith("/") and not target.startswith("//") else "/"
    if not same_token(form.get(CSRF_FIELD), request.cookies.get(LOGIN_CSRF_COOKIE, "")):
        return _back("/login", error="the log-in form expired; try again", next=target)
    try:
        who = await gw.users.log_in(form.get("username", ""), form.get("password", ""), gw.sessions.ttl_s,
                                    client_address(request))
    except LoginRefused as exc:
        gw.metrics.logins.labels("refused" if exc.status == 401 else "forbidden").inc()
        return _back("/login", error=str(exc), next=target)
    gw.metrics.logins.labels("ok").inc()
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(SESSION_COOKIE, gw.sessions.open(who), httponly=True, samesite="strict",
                        secure=gw.config.gateway.listen.cert_path is not None)
    response.delete_cookie(LOGIN_CSRF_COOKIE)
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    who = _who(request)
    if who is not None and await _form(request, who) is not None:
        _gw(request).sessions.close(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


# --- the cluster ------------------------------------------------------------------

async def _topology_context(gw: GatewayState, who: Identity) -> dict:
    cluster = await gw.gather.cluster(who.metadata)
    dots, lines = layout(cluster)
    return {"cluster": cluster, "dots": dots, "lines": lines, "width": WIDTH, "height": HEIGHT}


@router.get("/")
async def overview(request: Request) -> Response:
    who = _who(request)
    if who is None:
        return _to_login(request)
    return _page(request, "overview.html", who, **await _topology_context(_gw(request), who))


@router.get("/console/fragments/topology")
async def topology_fragment(request: Request) -> Response:
    who = _who(request)
    if who is None:
        return Response(status_code=401)
    return templates.TemplateResponse(request, "topology.html", await _topology_context(_gw(request), who))


@router.get(f"/nodes/{NODE}")
async def node_page(request: Request, node: str) -> Response:
    who = _who(request)
    if who is None:
        return _to_login(request)
    try:
        detail = await node_detail(node, _gw(request), who)
    except (NodeNotFound, NodeDown, MeshMQError) as exc:
        return _page(request, "base.html", who, error=str(exc))
    return _page(request, "node.html", who, detail=detail)


@router.post(f"/nodes/{NODE}/addresses")
async def create_address(request: Request, node: str) -> Response:
    async def run(admin, form):
        types = tuple(t for t in ("anycast", "multicast") if form.get(t)) or ("anycast",)
        await admin.create_address(form.get("name", ""), routing_types=types)
        return f"address {form.get('name')} created"

    return await _operate(request, node, f"/nodes/{segment(node)}", run)


@router.post(f"/nodes/{NODE}/addresses/{ADDRESS}/delete")
async def delete_address(request: Request, node: str, address: str) -> Response:
    async def run(admin, form):
        if address.startswith(INTERNAL_PREFIX):
            raise ValueError(INTERNAL_REFUSAL.format(kind="address", name=address))
        await admin.delete_address(address, force=False)
        return f"address {address} deleted"

    return await _operate(request, node, f"/nodes/{segment(node)}", run)


# --- queues ---------------------------------------------------------------------------

async def _queue_table_context(request: Request, gw: GatewayState, who: Identity) -> dict:
    search = request.query_params.get("search", "")[:255]
    sort = request.query_params.get("sort", "name")
    sort = sort if sort in QUEUE_SORTS else "name"
    order = "desc" if request.query_params.get("order") == "desc" else "asc"
    internal = request.query_params.get("internal") == "true"
    nodes, _ = await gw.gather.nodes(who.metadata)
    queues = await gw.gather.queues(who.metadata)
    return {"queues": search_queues(queues, search, sort, order, internal), "search": search, "sort": sort,
            "order": order, "internal": internal, "nodes": nodes, "down": [n.name for n in nodes if not n.up]}


@router.get("/queues")
async def queues_page(request: Request) -> Response:
    who = _who(request)
    if who is None:
        return _to_login(request)
    return _page(request, "queues.html", who, **await _queue_table_context(request, _gw(request), who))


@router.get("/console/fragments/queues")
async def queues_fragment(request: Request) -> Response:
    who = _who(request)
    if who is None:
        return Response(status_code=401)
    return templates.TemplateResponse(request, "queue_table.html",
                                      await _queue_table_context(request, _gw(request), who))


@router.post("/queues")
async def create_queue(request: Request) -> Response:
    who = _who(request)
    if who is None:
        return _to_login(request)
    form = await _form(request, who)
    node = (form or {}).get("node", "")

    async def run(admin, form):
        name = form.get("name", "")
        await admin.create_queue(name, address=form.get("address") or name,
                                 routing_type=form.get("routing_type", "anycast"), filter=form.get("filter", ""),
                                 durable=form.get("durable") == "true")
        return f"queue {name} created on {node}"

    return await _operate(request, node, "/queues", run, form=form)


@router.get(f"/nodes/{NODE}/queues/{QUEUE}")
async def queue_page(request: Request, node: str, queue: str, offset: int = 0, filter: str = "",
                     operation: str = "") -> Response:
    who = _who(request)
    if who is None:
        return _to_login(request)
    gw = _gw(request)
    limit = 50
    try:
        view, member = await gw.gather.member(who.metadata, node)
        admin = gw.directory.admin(member.connector, who.metadata)
        q = await admin.queue(queue)
        if q is None:
            return _page(request, "base.html", who, error=f"no queue named {queue!r} on node {view.name!r}")
        consumers = await admin.list_consumers(queue)
        filter_error = ""
        try:
            page = await admin.browse(queue, offset=max(0, offset), limit=limit, filter=filter[:4096],
                                      body_preview_bytes=256)
            page_view = {"total": page.total, "messages": [message_view(m) for m in page.messages]}
        except MeshMQError as exc:
            if not filter:
                raise
            # A bad selector: said beside the filter box, the rest of the page as it is.
            filter_error, page_view = str(exc), {"total": 0, "messages": []}
    except (NodeNotFound, NodeDown, MeshMQError) as exc:
        return _page(request, "base.html", who, error=str(exc))
    return _page(request, "queue.html", who, node=view.name, queue=queue_view(view.name, q), page=page_view,
                 offset=max(0, offset), limit=limit, filter=filter, operation=gw.operations.get(operation),
                 consumers=consumers, filter_error=filter_error, internal=queue.startswith(INTERNAL_PREFIX))


@router.get("/console/fragments/operations/{op_id}")
async def operation_fragment(request: Request, op_id: str) -> Response:
    who = _who(request)
    op = _gw(request).operations.get(op_id)
    if who is None or op is None:
        return Response(status_code=404)
    return templates.TemplateResponse(request, "operation.html", {"operation": op})


@router.post(f"/nodes/{NODE}/queues/{QUEUE}/{{action}}")
async def queue_action(request: Request, node: str, queue: str, action: str) -> Response:
    page = f"/nodes/{segment(node)}/queues/{segment(queue)}"
    gw = _gw(request)

    async def run(admin, form):
        if action == "purge":
            return f"purged {await admin.purge_queue(queue)} messages"
        if action == "pause":
            await admin.pause_queue(queue)
            return "paused: messages are kept, none delivered"
        if action == "resume":
            await admin.resume_queue(queue)
            return "resumed"
        if action in ("move", "retry"):
            who = _who(request)
            limit = _move_limit(form.get("limit", ""))
            def run_op(on_progress):
                if action == "move":
                    return admin.move_messages(queue, form.get("to_queue", ""), filter=form.get("filter", ""),
                                               limit=limit, on_progress=on_progress)
                return admin.retry_messages(queue, filter=form.get("filter", ""), on_progress=on_progress)

            op = await gw.operations.start(action, node, queue, who.username, run_op)
            # (A finished one speaks for itself, green only if it moved everything: operation.html.)
            return _back(page, operation=op.id, **({} if op.finished else {"done": f"{action} started"}))
        if action == "delete":
            if queue.startswith(INTERNAL_PREFIX):
                return _back(page, error=INTERNAL_REFUSAL.format(kind="queue", name=queue))
            removed = await admin.delete_queue(queue, force=form.get("force") == "true")
            return _back("/queues", done=f"queue {queue} deleted ({removed} messages removed)")
        return _back(page, error=f"unknown operation {action!r}")

    return await _operate(request, node, page, run)


def _move_limit(text: str) -> int:
    """The move form's limit: blank or 0 for every selected message; ValueError naming it otherwise."""
    text = text.strip()
    if not text:
        return 0
    if not text.isdigit():
        raise ValueError(f"move limit must be a whole number of messages (0 or blank: all), not {text!r}")
    return int(text)


async def _operate(request: Request, node: str, page: str, run, form: dict | None = None) -> Response:
    """Check the session, the CSRF token and the manage role, run `run(admin, form)` on `node`,
    and go back to `page` with its outcome (or the reason it failed) in the banner."""
    who = _who(request)
    if who is None:
        return _to_login(request)
    form = form if form is not None else await _form(request, who)
    if form is None:
        return _back(page, error="the form expired (CSRF token mismatch); reload the page and try again")
    if not who.can_manage:
        return _back(page, error=f"user {who.username!r} is view-only")
    gw = _gw(request)
    try:
        _, member = await gw.gather.member(who.metadata, node)
        outcome = await run(gw.directory.admin(member.connector, who.metadata), form)
    except (NodeNotFound, NodeDown, MeshMQError, ValueError) as exc:
        return _back(page, error=str(exc))
    return outcome if isinstance(outcome, Response) else _back(page, done=outcome)
