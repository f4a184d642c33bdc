"""The console's address page: the address-settings in force for an address
on a node (each setting's value and the match that gave it) and a form that
sends it a test message (address_detail.py's REST calls, through the same
management client)."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import ValidationError

from meshmq.errors import MeshMQError
from meshmq.routing_names import INTERNAL_PREFIX

from .address_detail import SendMessageBody, settings_view
from .console import _back, _gw, _operate, _page, _to_login, _who
from .paths import ADDRESS, NODE, segment
from .views import NodeDown, NodeNotFound

router = APIRouter(include_in_schema=False)

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+\.?\d*[eE][+-]?\d+)$")


def typed(text: str) -> bool | int | float | str:
    """A property value as typed in the form: true/false, a whole number, a
    decimal, or text ("quoted" keeps text that looks like one of those)."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return text


def parse_properties(text: str) -> dict[str, bool | int | float | str]:
    """The form's properties: one `name=value` per line; blank lines skipped."""
    props: dict[str, bool | int | float | str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, eq, value = line.partition("=")
        if not eq or not name.strip():
            raise ValueError(f"properties line {number}: expected name=value, got {line.strip()!r}")
        props[name.strip()] = typed(value.strip())
    return props


def message_body(form: dict[str, str]) -> SendMessageBody:
    """The send form as the REST body; ValueError naming the field that is wrong."""
    try:
        return SendMessageBody(
            body=form.get("body", ""), properties=parse_properties(form.get("properties", "")),
            durable=form.get("durable") == "true", priority=int(form.get("priority") or 4),
            routing_type=form.get("routing_type") or None)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "message"
        raise ValueError(f"{where}: {first['msg']}") from None


@router.get(f"/nodes/{NODE}/addresses/{ADDRESS}")
async def address_page(request: Request, node: str, address: str) -> Response:
    who = _who(request)
    if who is None:
        return _to_login(request)
    gw = _gw(request)
    try:
        view, member = await gw.gather.member(who.metadata, node)
        info = await gw.directory.admin(member.connector, who.metadata).address_settings(address)
    except (NodeNotFound, NodeDown, MeshMQError) as exc:
        return _page(request, "base.html", who, error=str(exc))
    return _page(request, "address.html", who, node=view.name, address=address,
                 settings=settings_view(view.name, info), internal=address.startswith(INTERNAL_PREFIX))


@router.post(f"/nodes/{NODE}/addresses/{ADDRESS}/send")
async def send_message(request: Request, node: str, address: str) -> Response:
    async def run(admin, form):
        sent = await admin.send_message(message_body(form).message(address))
        where = ", ".join(sent.queues) if sent.queues else "no queue (nothing bound took it)"
        return f"message {sent.message_id} sent to {address}: stored in {where}"

    return await _operate(request, node, f"/nodes/{segment(node)}/addresses/{segment(address)}", run)
