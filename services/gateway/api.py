"""The REST API under /api/v1 (OpenAPI at /api/openapi.json, docs at /api/docs).

Every route needs a logged-in identity: a bearer token from POST
/api/v1/auth/token, or the console's session cookie (then state-changing
requests must also carry the session's CSRF token in the X-CSRF-Token header).
Reads need the view role, changes the manage role; the routers check the
same credentials again for each call."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Depends, HTTPException, Query, Request, Response
from pydantic import BaseModel, Field

from meshmq.routing_names import INTERNAL_PREFIX

from .auth import CSRF_HEADER, SESSION_COOKIE, Identity, LoginRefused, client_address, same_token, session_key
from .operations import OperationView
from .paths import ADDRESS, NODE, QUEUE
from .problems import RESPONSES
from .state import GatewayState
from .views import (
    NodeDown, AddressView, BrowseView, BridgeView, ClusterView, ConsumerView, HaGroupView, NodeView, QueueView, QuorumView,
    RemoteBindingView, address_view, bridge_view, message_view, queue_view,
)

Name = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f\x7f]+$")]
Selector = Annotated[str, Field(max_length=4096)]
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Deleting the routers' own store-and-forward queues and addresses would lose what the links carry.
INTERNAL_REFUSAL = ("{name!r} is an internal {kind} ($.meshmq.*: a cluster link's store-and-forward): "
                    "it is not deleted through the gateway; its link owns it")


def refuse_internal(kind: str, name: str) -> None:
    if name.startswith(INTERNAL_PREFIX):
        raise HTTPException(409, INTERNAL_REFUSAL.format(kind=kind, name=name))


def state(request: Request) -> GatewayState:
    return request.app.state.gateway


async def identity(request: Request) -> Identity:
    """The caller: a bearer token, or a console session cookie (with its CSRF token on changes)."""
    gw = state(request)
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        who = gw.sessions.get(auth[7:].strip())
        if who is None:
            raise HTTPException(401, "invalid or expired token", headers={"WWW-Authenticate": "Bearer"})
        return who
    who = gw.sessions.get(request.cookies.get(SESSION_COOKIE))
    if who is None:
        raise HTTPException(401, "log in first: POST /api/v1/auth/token, or the console's log-in page",
                            headers={"WWW-Authenticate": "Bearer"})
    if request.method in UNSAFE and not same_token(request.headers.get(CSRF_HEADER), who.csrf):
        raise HTTPException(403, "missing or wrong CSRF token (send the session's token in X-CSRF-Token)")
    return who


async def viewer(who: Annotated[Identity, Depends(identity)]) -> Identity:
    if not who.can_view:
        raise HTTPException(403, f"user {who.username!r} may not view (needs view or manage)")
    return who


async def manager(who: Annotated[Identity, Depends(identity)]) -> Identity:
    if not who.can_manage:
        raise HTTPException(403, f"user {who.username!r} is view-only (changes need the manage permission)")
    return who


Viewer = Annotated[Identity, Depends(viewer)]
Manager = Annotated[Identity, Depends(manager)]
GW = Annotated[GatewayState, Depends(state)]

router = APIRouter(prefix="/api/v1", responses=RESPONSES)


# --- log-in ------------------------------------------------------------------

class LoginBody(BaseModel):
    username: Annotated[str, Field(max_length=255)]
    password: Annotated[str, Field(max_length=1024)]


class TokenView(BaseModel):
    token: str
    token_type: Literal["bearer"] = "bearer"
    # Seconds the token lasts after its last use.
    expires_in: int
    username: str
    can_manage: bool


class WhoAmI(BaseModel):
    username: str
    can_view: bool
    can_manage: bool


@router.post("/auth/token", response_model=TokenView, tags=["auth"])
async def create_token(body: LoginBody, request: Request, gw: GW) -> TokenView:
    """Log in for scripts: the token goes in `Authorization: Bearer <token>`."""
    try:
        who = await gw.users.log_in(body.username, body.password, gw.sessions.ttl_s, client_address(request))
    except LoginRefused as exc:
        gw.metrics.logins.labels("refused" if exc.status == 401 else "forbidden").inc()
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        raise HTTPException(exc.status, str(exc), headers=headers) from None
    gw.metrics.logins.labels("ok").inc()
    return TokenView(token=gw.sessions.open(who), expires_in=int(gw.sessions.ttl_s), username=who.username,
                     can_manage=who.can_manage)


@router.delete("/auth/token", status_code=204, tags=["auth"])
async def revoke_token(request: Request, gw: GW, who: Annotated[Identity, Depends(identity)]) -> Response:
    """Log out: the bearer token (or the console session) stops working."""
    gw.sessions.close(session_key(request))
    return Response(status_code=204)


@router.get("/whoami", response_model=WhoAmI, tags=["auth"])
async def whoami(who: Viewer) -> WhoAmI:
    return WhoAmI(username=who.username, can_view=who.can_view, can_manage=who.can_manage)


# --- the cluster ---------------------------------------------------------------

class NodeDetail(BaseModel):
    node: NodeView
    addresses: list[AddressView]
    queues: list[QueueView]
    bridges: list[BridgeView]
    remote_bindings: list[RemoteBindingView]


@router.get("/cluster", response_model=ClusterView, tags=["cluster"])
async def cluster(gw: GW, who: Viewer) -> ClusterView:
    """Every node (up or down, with the reason), the links between them (cluster bridges, network-connector
    and tree links, each with its `kind`), and the HA groups."""
    return await gw.gather.cluster(who.metadata)


@router.get("/nodes", response_model=list[NodeView], tags=["cluster"])
async def nodes(gw: GW, who: Viewer) -> list[NodeView]:
    return (await gw.gather.nodes(who.metadata))[0]


class HaView(BaseModel):
    groups: list[HaGroupView]
    quorums: list[QuorumView]
    coordinator_problem: str = ""


@router.get("/ha", response_model=HaView, tags=["cluster"])
async def ha(gw: GW, who: Viewer) -> HaView:
    """Live/backup groups (who backs up whom, in sync, the live's epoch), and the
    HA coordinator's quorums when one is configured."""
    cluster = await gw.gather.cluster(who.metadata)
    return HaView(groups=cluster.ha_groups, quorums=cluster.quorums, coordinator_problem=cluster.coordinator_problem)


@router.get(f"/nodes/{NODE}", response_model=NodeDetail, tags=["cluster"])
async def node_detail(node: str, gw: GW, who: Viewer) -> NodeDetail:
    """The node's addresses, queues and links; for a node down that answered before, what it
    last showed (`node.stale`, its queues `reachable: false`, no addresses or remote bindings)."""
    try:
        view, admin = await _on_node(gw, who, node)
    except NodeDown:
        last = await gw.gather.last_detail(who.metadata, node)
        if last is None:
            raise
        view, queues, bridges = last
        return NodeDetail(node=view, addresses=[], queues=queues, bridges=bridges, remote_bindings=[])
    addresses, queues, st = await admin.list_addresses(), await admin.list_queues(), await admin.cluster_state()
    return NodeDetail(
        node=view, addresses=[address_view(view.name, a) for a in addresses],
        queues=[queue_view(view.name, q) for q in queues],
        bridges=[bridge_view(view.name, b) for b in st.bridges],
        remote_bindings=[RemoteBindingView(node=view.name, remote_node=rb.node_name, queue=rb.queue,
                                           address=rb.address, filter=rb.filter, consumers=len(rb.consumer_filters),
                                           hops=rb.hops, via=rb.via) for rb in st.remote_bindings])


# --- addresses -------------------------------------------------------------------

class CreateAddressBody(BaseModel):
    name: Name
    routing_types: list[Literal["anycast", "multicast"]] = ["anycast"]


class Removed(BaseModel):
    messages_removed: int


@router.get("/addresses", response_model=list[AddressView], tags=["addresses"])
async def addresses(gw: GW, who: Viewer, node: str | None = None) -> list[AddressView]:
    return await gw.gather.addresses(who.metadata, node)


@router.post(f"/nodes/{NODE}/addresses", status_code=201, response_model=AddressView, tags=["addresses"])
async def create_address(node: str, body: CreateAddressBody, gw: GW, who: Manager) -> AddressView:
    view, admin = await _on_node(gw, who, node)
    return address_view(view.name, await admin.create_address(body.name, routing_types=tuple(body.routing_types)))


@router.delete(f"/nodes/{NODE}/addresses/{ADDRESS}", response_model=Removed, tags=["addresses"])
async def delete_address(node: str, address: str, gw: GW, who: Manager, force: bool = False) -> Removed:
    """Refused while the address has queues, unless `force` (its queues and their messages go too);
    always for the internal `$.meshmq.*` store-and-forward addresses (409)."""
    refuse_internal("address", address)
    _, admin = await _on_node(gw, who, node)
    return Removed(messages_removed=await admin.delete_address(address, force=force))


# --- queues ------------------------------------------------------------------------

QueueSort = Literal["node", "name", "address", "message_count", "consumers", "messages_added",
                    "messages_acknowledged", "messages_dead_lettered"]


class CreateQueueBody(BaseModel):
    name: Name
    # Defaults to the queue's name.
    address: Name | None = None
    routing_type: Literal["anycast", "multicast"] = "anycast"
    filter: Selector = ""
    durable: bool = True
    # Artemis's queue attributes (docs/broker.md); null: the address settings' default.
    last_value_key: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    non_destructive: bool | None = None
    exclusive: bool | None = None
    # Message groups (docs/broker.md); null: the address settings' default-group-*.
    group_rebalance: bool | None = None
    group_rebalance_pause_dispatch: bool | None = None
    group_buckets: Annotated[int, Field(ge=-1, le=2**31 - 1)] | None = None
    group_first_key: Annotated[str, Field(min_length=1, max_length=255)] | None = None


def search_queues(queues: list[QueueView], search: str, sort: str, order: str, internal: bool = False
                  ) -> list[QueueView]:
    """The queue table's search (a substring of the name or address) and sort; the
    routers' own store-and-forward queues ($.meshmq.) only when `internal`."""
    needle = search.lower()
    found = [q for q in queues if (internal or not q.name.startswith(INTERNAL_PREFIX))
             and (not needle or needle in q.name.lower() or needle in q.address.lower())]
    return sorted(found, key=lambda q: (getattr(q, sort), q.node, q.name), reverse=order == "desc")


@router.get("/queues", response_model=list[QueueView], tags=["queues"])
async def queues(gw: GW, who: Viewer, node: str | None = None, search: Annotated[str, Query(max_length=255)] = "",
                 sort: QueueSort = "name", order: Literal["asc", "desc"] = "asc", internal: bool = False
                 ) -> list[QueueView]:
    """Every queue on every node that answers, with its counts (the cluster bridges'
    store-and-forward queues too with `internal`)."""
    return search_queues(await gw.gather.queues(who.metadata, node), search, sort, order, internal)


async def _on_node(gw: GatewayState, who: Identity, node: str):
    """The named node (NodeNotFound / NodeDown otherwise) and a management client to it as `who`."""
    view, member = await gw.gather.member(who.metadata, node)
    return view, gw.directory.admin(member.connector, who.metadata)


@router.post(f"/nodes/{NODE}/queues", status_code=201, response_model=QueueView, tags=["queues"])
async def create_queue(node: str, body: CreateQueueBody, gw: GW, who: Manager) -> QueueView:
    view, admin = await _on_node(gw, who, node)
    q = await admin.create_queue(body.name, address=body.address or body.name, routing_type=body.routing_type,
                                 filter=body.filter, durable=body.durable, last_value_key=body.last_value_key,
                                 non_destructive=body.non_destructive, exclusive=body.exclusive,
                                 group_rebalance=body.group_rebalance,
                                 group_rebalance_pause_dispatch=body.group_rebalance_pause_dispatch,
                                 group_buckets=body.group_buckets, group_first_key=body.group_first_key)
    return queue_view(view.name, q)


@router.get(f"/nodes/{NODE}/queues/{QUEUE}", response_model=QueueView, tags=["queues"])
async def get_queue(node: str, queue: str, gw: GW, who: Viewer) -> QueueView:
    view, admin = await _on_node(gw, who, node)
    q = await admin.queue(queue)
    if q is None:
        raise HTTPException(404, f"no queue named {queue!r} on node {view.name!r}")
    return queue_view(view.name, q)


@router.delete(f"/nodes/{NODE}/queues/{QUEUE}", response_model=Removed, tags=["queues"])
async def delete_queue(node: str, queue: str, gw: GW, who: Manager, force: bool = False) -> Removed:
    """Refused while consumers are attached, unless `force` (they are closed); always for the
    internal `$.meshmq.*` store-and-forward queues (409)."""
    refuse_internal("queue", queue)
    _, admin = await _on_node(gw, who, node)
    return Removed(messages_removed=await admin.delete_queue(queue, force=force))


@router.post(f"/nodes/{NODE}/queues/{QUEUE}/purge", response_model=Removed, tags=["queues"])
async def purge_queue(node: str, queue: str, gw: GW, who: Manager) -> Removed:
    """Remove every waiting message (those being delivered stay with their consumers)."""
    _, admin = await _on_node(gw, who, node)
    return Removed(messages_removed=await admin.purge_queue(queue))


@router.post(f"/nodes/{NODE}/queues/{QUEUE}/pause", response_model=QueueView, tags=["queues"])
async def pause_queue(node: str, queue: str, gw: GW, who: Manager) -> QueueView:
    """Stop delivering (messages still arrive) until resumed."""
    view, admin = await _on_node(gw, who, node)
    return queue_view(view.name, await admin.pause_queue(queue))


@router.post(f"/nodes/{NODE}/queues/{QUEUE}/resume", response_model=QueueView, tags=["queues"])
async def resume_queue(node: str, queue: str, gw: GW, who: Manager) -> QueueView:
    view, admin = await _on_node(gw, who, node)
    return queue_view(view.name, await admin.resume_queue(queue))


class GroupsReset(BaseModel):
    groups_reset: int


@router.post(f"/nodes/{NODE}/queues/{QUEUE}/reset-groups", response_model=GroupsReset, tags=["queues"])
async def reset_all_groups(node: str, queue: str, gw: GW, who: Manager) -> GroupsReset:
    """Unpin every message group of the queue (Artemis's resetAllGroups)."""
    _, admin = await _on_node(gw, who, node)
    return GroupsReset(groups_reset=await admin.reset_all_groups(queue))


@router.get(f"/nodes/{NODE}/queues/{QUEUE}/messages", response_model=BrowseView, tags=["queues"])
async def browse(node: str, queue: str, gw: GW, who: Viewer,
                 offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
                 limit: Annotated[int, Query(ge=1, le=1000)] = 50,
                 filter: Annotated[str, Query(max_length=4096)] = "",
                 preview: Annotated[int, Query(ge=1, le=65536)] = 256) -> BrowseView:
    """A page of the queue's messages in delivery order, without consuming them."""
    view, admin = await _on_node(gw, who, node)
    page = await admin.browse(queue, offset=offset, limit=limit, filter=filter, body_preview_bytes=preview)
    return BrowseView(node=view.name, queue=queue, total=page.total, offset=offset,
                      messages=[message_view(m) for m in page.messages])


@router.get(f"/nodes/{NODE}/queues/{QUEUE}/consumers", response_model=list[ConsumerView], tags=["queues"])
async def consumers(node: str, queue: str, gw: GW, who: Viewer) -> list[ConsumerView]:
    view, admin = await _on_node(gw, who, node)
    return [ConsumerView(node=view.name, queue=c.queue, session_id=c.session_id, consumer_id=c.consumer_id,
                         filter=c.filter, client_id=c.client_id, delivering=c.delivering_count,
                         messages_acknowledged=c.messages_acknowledged, credits=c.credits)
            for c in await admin.list_consumers(queue)]


# --- long operations ----------------------------------------------------------------

class MoveBody(BaseModel):
    to_queue: Name
    filter: Selector = ""
    # 0 = every matching message.
    limit: Annotated[int, Field(ge=0, le=2**62)] = 0


class RetryBody(BaseModel):
    filter: Selector = ""
    # Only this message (its id in the queue); 0 = every message the filter selects.
    message_id: Annotated[int, Field(ge=0, le=2**63 - 1)] = 0


@router.post(f"/nodes/{NODE}/queues/{QUEUE}/move", status_code=202, response_model=OperationView, tags=["operations"])
async def move(node: str, queue: str, body: MoveBody, gw: GW, who: Manager) -> OperationView:
    """Move waiting messages to another queue of the same node; follow it at /api/v1/operations/{id}."""
    view, admin = await _on_node(gw, who, node)
    return await gw.operations.start(
        "move", view.name, queue, who.username,
        lambda on_progress: admin.move_messages(queue, body.to_queue, filter=body.filter, limit=body.limit,
                                                on_progress=on_progress))


@router.post(f"/nodes/{NODE}/queues/{QUEUE}/retry", status_code=202, response_model=OperationView, tags=["operations"])
async def retry(node: str, queue: str, gw: GW, who: Manager, body: Annotated[RetryBody, Body()] = RetryBody()
                ) -> OperationView:
    """Send dead letters (or expired messages) back to the queue they came from, or, where it is
    gone, to their original address; the operation reports each message's outcome."""
    view, admin = await _on_node(gw, who, node)
    return await gw.operations.start(
        "retry", view.name, queue, who.username,
        lambda on_progress: admin.retry_messages(queue, filter=body.filter, message_id=body.message_id,
                                                 on_progress=on_progress))


@router.get("/operations", response_model=list[OperationView], tags=["operations"])
async def operations(gw: GW, who: Viewer) -> list[OperationView]:
    return gw.operations.recent()


@router.get("/operations/{op_id}", response_model=OperationView, tags=["operations"])
async def operation(op_id: str, gw: GW, who: Viewer) -> OperationView:
    op = gw.operations.get(op_id)
    if op is None:
        raise HTTPException(404, f"no operation {op_id!r} (finished ones are kept for a while, then forgotten)")
    return op
