"""One address on one node in the REST API: the address-settings in force for
it, with the `match` each setting came from (Management.GetAddressSettings),
and sending it a test message as the caller (Management.SendMessage, Artemis's
sendMessage on an address). The console's address page reads and posts
through these (console_addresses.py)."""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

from meshmq.properties import HEADER_PROPERTIES, header_properties, set_properties
from meshmq.v1 import messages_pb2 as mpb

from .api import GW, Manager, Viewer, _on_node
from .paths import ADDRESS, NODE
from .problems import RESPONSES

router = APIRouter(prefix="/api/v1", responses=RESPONSES)

PropertyValue = StrictBool | StrictInt | StrictFloat | StrictStr
PropertyName = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f\x7f]+$")]
ROUTING = {None: 0, "anycast": mpb.ANYCAST, "multicast": mpb.MULTICAST}
# What one test message may carry: the REST body limit applies too (body_limit.py).
MAX_PROPERTIES = 100


class EffectiveSettingView(BaseModel):
    name: str
    value: Any
    # The address-settings match that gave the value; null: none sets it, the default applies.
    match: str | None


class AddressSettingsView(BaseModel):
    node: str
    address: str
    # Every match that applies, most specific first (the first one wins for each setting it sets).
    matched: list[str]
    settings: list[EffectiveSettingView]


class SendMessageBody(BaseModel):
    """A test message, as an application would send it."""

    model_config = ConfigDict(extra="forbid")

    # UTF-8 text; or `body_base64` for bytes (not both).
    body: str = ""
    body_base64: str | None = None
    properties: dict[PropertyName, PropertyValue] = Field(default_factory=dict, max_length=MAX_PROPERTIES)
    durable: bool = True
    # 0..9, higher first; 4 is the JMS default, as the SDK's.
    priority: Annotated[int, Field(ge=0, le=9)] = 4
    # null: as the address routes (its only routing type, or both).
    routing_type: Literal["anycast", "multicast"] | None = None
    duplicate_id: Annotated[str, Field(max_length=255)] = ""
    reply_to: Annotated[str, Field(max_length=255)] = ""
    correlation_id: Annotated[str, Field(max_length=255)] = ""
    type: Annotated[str, Field(max_length=255)] = ""
    group_id: Annotated[str, Field(max_length=255)] = ""
    # Milliseconds from now; 0: never expires (unless the address settings' expiry-delay says so).
    ttl: Annotated[int, Field(ge=0)] = 0

    @model_validator(mode="after")
    def _one_body(self) -> SendMessageBody:
        if self.body and self.body_base64 is not None:
            raise ValueError("give body (text) or body_base64 (bytes), not both")
        if self.body_base64 is not None:
            try:
                base64.b64decode(self.body_base64, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("body_base64 is not valid base64") from None
        try:
            self.message("-")  # a property of the wrong type or out of range names itself
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        return self

    def message(self, address: str) -> mpb.Message:
        body = base64.b64decode(self.body_base64) if self.body_base64 is not None else self.body.encode()
        fields: dict = dict(address=address, body=body, durable=self.durable, priority=self.priority,
                            routing_type=ROUTING[self.routing_type], duplicate_id=self.duplicate_id,
                            reply_to=self.reply_to, correlation_id=self.correlation_id, type=self.type,
                            group_id=self.group_id)
        properties: dict = dict(self.properties)
        if not HEADER_PROPERTIES.keys().isdisjoint(properties):
            properties = header_properties(properties, fields)
        m = mpb.Message(**fields)
        if self.ttl:
            m.expiration = int(time.time() * 1000) + self.ttl
        set_properties(m.properties, properties)
        return m


class SentView(BaseModel):
    node: str
    address: str
    message_id: int
    # The queues that stored it: a `$.meshmq.sf.` queue holds a copy to be forwarded
    # to another node. Empty: no queue took it (nothing bound, or the address's policy dropped it).
    queues: list[str]


def settings_view(node: str, info) -> AddressSettingsView:
    return AddressSettingsView(
        node=node, address=info.address, matched=list(info.matched),
        settings=[EffectiveSettingView(name=s.name, value=json.loads(s.value_json), match=s.match or None)
                  for s in info.settings])


@router.get(f"/nodes/{NODE}/addresses/{ADDRESS}/settings", response_model=AddressSettingsView, tags=["addresses"])
async def address_settings(node: str, address: str, gw: GW, who: Viewer) -> AddressSettingsView:
    """The address-settings in force for `address` on the node (it need not exist
    yet: what an address of that name would get), and the match each came from."""
    view, admin = await _on_node(gw, who, node)
    return settings_view(view.name, await admin.address_settings(address))


@router.post(f"/nodes/{NODE}/addresses/{ADDRESS}/messages", status_code=201, response_model=SentView,
             tags=["addresses"])
async def send_message(node: str, address: str, body: SendMessageBody, gw: GW, who: Manager) -> SentView:
    """Send one message to `address` on the node, as the logged-in user (who needs
    the send permission on it): routed as a client's, answered once stored."""
    view, admin = await _on_node(gw, who, node)
    sent = await admin.send_message(body.message(address))
    return SentView(node=view.name, address=address, message_id=sent.message_id, queues=list(sent.queues))
