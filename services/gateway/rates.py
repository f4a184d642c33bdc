"""Rates over time: the REST routes (/api/v1/rates...) and the console's chart
fragments, both read from the sampler's history (history.py) — never from
the routers on a request.

Every series is in msg/s, one value per sampling interval ending at
`times[i]` (seconds since the epoch); null is a gap (the node did not answer
then), 0 is an interval where nothing moved. `total` is the messages the
series counted over the window, `current` its last interval's rate.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response
from pydantic import BaseModel

from . import charts
from .api import GW, Viewer
from .auth import SESSION_COOKIE
from .console import templates
from .history import History, Series
from .paths import NODE, QUEUE, segment
from .problems import RESPONSES
from .state import GatewayState

router = APIRouter(responses=RESPONSES)
templates.env.filters["rate"] = charts.number


class RateSeriesView(BaseModel):
    # "in" (messages added to queues), "out" (delivered to consumers, redeliveries too),
    # "acked" (acknowledged), or for a link "forwarded".
    name: str
    unit: Literal["msg/s"] = "msg/s"
    # msg/s over each interval ending at the matching `times` entry; null = a gap (the node did not answer).
    rates: list[float | None]
    # The last interval's rate (null: a gap, or fewer than two samples yet).
    current: float | None
    # Messages counted over the whole window.
    total: int


class RatesView(BaseModel):
    kind: Literal["cluster", "node", "queue", "link"]
    node: str = ""
    queue: str = ""
    # A link: "<connection> -> <node>" (this node dialed it) or "<connection> <- <node>" (it accepted it).
    link: str = ""
    interval_ms: int
    length_ms: int
    # The end of each interval, seconds since the epoch (oldest first).
    times: list[float]
    series: list[RateSeriesView]


class SamplerView(BaseModel):
    # When the last sample was taken (seconds since the epoch; 0 = none yet) and how many were.
    last_sample_at: float
    samples: int
    # Why the last sample has gaps: nodes that did not answer, and why ("" = all answered).
    problem: str


class RatesOverview(BaseModel):
    sampler: SamplerView
    cluster: RatesView
    nodes: list[RatesView]
    links: list[RatesView]


def rates_view(series: Series, history: History, kind: str, node: str = "", queue: str = "",
               link: str = "") -> RatesView:
    return RatesView(
        kind=kind, node=node, queue=queue, link=link, interval_ms=round(history.interval_s * 1000),
        length_ms=round(history.length_s * 1000), times=series.times,
        series=[RateSeriesView(name=name, rates=series.rates(i), current=series.current(i), total=series.total(i))
                for i, name in enumerate(series.names)])


def overview(gw: GatewayState) -> RatesOverview:
    h = gw.sampler.history
    st = gw.sampler.status
    nodes = {n: h.node_series(n) for n in h.nodes()}
    return RatesOverview(
        sampler=SamplerView(last_sample_at=st.last_sample_at, samples=st.samples, problem=st.problem),
        cluster=rates_view(h.cluster_series(list(nodes.values())), h, "cluster"),
        nodes=[rates_view(s, h, "node", node=n) for n, s in nodes.items()],
        links=[rates_view(h.series(k), h, "link", node=k[1], link=k[2]) for k in h.keys("link")])


def _node_known(h: History, node: str) -> None:
    if node not in h.nodes():
        raise HTTPException(404, f"no rates for node {node!r}: the sampler has not seen it answer "
                                 f"(known: {', '.join(h.nodes()) or 'none yet'})")


def node_rates(gw: GatewayState, node: str) -> RatesView:
    h = gw.sampler.history
    _node_known(h, node)
    return rates_view(h.node_series(node), h, "node", node=node)


def queue_rates(gw: GatewayState, node: str, queue: str) -> RatesView:
    h = gw.sampler.history
    _node_known(h, node)
    if ("queue", node, queue) not in h.keys("queue", node):
        raise HTTPException(404, f"no rates for queue {queue!r} on node {node!r}: not listed by that node in "
                                 f"the last {round(h.length_s)} s")
    return rates_view(h.series(("queue", node, queue)), h, "queue", node=node, queue=queue)


def link_rates(gw: GatewayState, node: str) -> list[RatesView]:
    h = gw.sampler.history
    _node_known(h, node)
    return [rates_view(h.series(k), h, "link", node=node, link=k[2]) for k in h.keys("link", node)]


# --- REST ----------------------------------------------------------------------------

@router.get("/api/v1/rates", response_model=RatesOverview, tags=["rates"])
async def get_rates(gw: GW, who: Viewer) -> RatesOverview:
    """The cluster's, every node's and every link's rates over the history window (msg/s)."""
    return overview(gw)


@router.get(f"/api/v1/nodes/{NODE}/rates", response_model=RatesView, tags=["rates"])
async def get_node_rates(node: str, gw: GW, who: Viewer) -> RatesView:
    """One node's rates: the sums of its queues' (msg/s)."""
    return node_rates(gw, node)


@router.get(f"/api/v1/nodes/{NODE}/queues/{QUEUE}/rates", response_model=RatesView, tags=["rates"])
async def get_queue_rates(node: str, queue: str, gw: GW, who: Viewer) -> RatesView:
    """One queue's rates: messages added, delivered and acknowledged (msg/s)."""
    return queue_rates(gw, node, queue)


@router.get(f"/api/v1/nodes/{NODE}/links/rates", response_model=list[RatesView], tags=["rates"])
async def get_link_rates(node: str, gw: GW, who: Viewer) -> list[RatesView]:
    """The rates of the links (cluster bridges, network and tree links) a node holds: messages forwarded (msg/s)."""
    return link_rates(gw, node)


# --- the console's charts ------------------------------------------------------------

def _chart(view: RatesView, series: Series, title: str) -> dict:
    return {"view": view, "title": title, "svg": charts.svg(series, title)}


def _fragment(request: Request, charts_: list[dict], url: str) -> Response:
    gw: GatewayState = request.app.state.gateway
    refresh = max(1.0, gw.sampler.history.interval_s)
    return templates.TemplateResponse(request, "rates.html", {"charts": charts_, "url": url, "refresh": refresh,
                                                              "status": gw.sampler.status})


def _viewer_or_401(request: Request) -> GatewayState | None:
    gw: GatewayState = request.app.state.gateway
    return gw if gw.sessions.get(request.cookies.get(SESSION_COOKIE)) is not None else None


@router.get("/console/fragments/rates", include_in_schema=False)
async def overview_charts(request: Request) -> Response:
    gw = _viewer_or_401(request)
    if gw is None:
        return Response(status_code=401)
    h = gw.sampler.history
    nodes = {n: h.node_series(n) for n in h.nodes()}
    cluster = h.cluster_series(list(nodes.values()))
    items = [_chart(rates_view(cluster, h, "cluster"), cluster, "Cluster")]
    for n, s in nodes.items():
        items.append(_chart(rates_view(s, h, "node", node=n), s, f"Node {n}"))
    for k in h.keys("link"):
        s = h.series(k)
        items.append(_chart(rates_view(s, h, "link", node=k[1], link=k[2]), s, f"Link {k[2]} on {k[1]}"))
    return _fragment(request, items, "/console/fragments/rates")


@router.get(f"/console/fragments/nodes/{NODE}/rates", include_in_schema=False)
async def node_charts(request: Request, node: str) -> Response:
    gw = _viewer_or_401(request)
    if gw is None:
        return Response(status_code=401)
    h = gw.sampler.history
    items = []
    if node in h.nodes():
        s = h.node_series(node)
        items.append(_chart(rates_view(s, h, "node", node=node), s, f"Node {node}"))
        for k in h.keys("link", node):
            s = h.series(k)
            items.append(_chart(rates_view(s, h, "link", node=node, link=k[2]), s, f"Link {k[2]}"))
    return _fragment(request, items, f"/console/fragments/nodes/{segment(node)}/rates")


@router.get(f"/console/fragments/nodes/{NODE}/queues/{QUEUE}/rates", include_in_schema=False)
async def queue_charts(request: Request, node: str, queue: str) -> Response:
    gw = _viewer_or_401(request)
    if gw is None:
        return Response(status_code=401)
    h = gw.sampler.history
    key = ("queue", node, queue)
    items = []
    if node in h.nodes() and key in h.keys("queue", node):
        s = h.series(key)
        items.append(_chart(rates_view(s, h, "queue", node=node, queue=queue), s, f"Queue {queue}"))
    return _fragment(request, items, f"/console/fragments/nodes/{segment(node)}/queues/{segment(queue)}/rates")

