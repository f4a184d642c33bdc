"""Prometheus metrics for every meshmq service (docs/metrics.md).

Each service instance owns a `MetricsEndpoint`: a registry of its own (several
services share one process — the embedded router hosts its journal, tests
start many — so nothing goes to prometheus_client's global REGISTRY), served
over HTTP on a thread when the node config's `metrics.enabled` is true. With
security enabled, a router serves it only to a user who may view the
management state, and over HTTPS when it serves TLS (meshmq/metrics_access.py).

Why values are read at scrape time: the router moves ~45k durable messages a
second, and its queues already count what Artemis's management shows
(messages added, acknowledged, expired, killed…). A `prometheus_client`
Counter per message would add a lock and a label lookup to every send, so the
services never call metrics per message. Instead each registers a *fill*
function that reads those attributes when Prometheus asks. The fill runs on the
service's event loop (`LoopCollector`): the HTTP thread hands it over and waits,
so it sees the broker's dicts between two callbacks, never half-changed.

What is observed as it happens is per batch, never per message: `Histogram`
here is a plain bucket array updated on the event loop (a bisect and two
additions), read at scrape time by the same loop-bound fill.
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import contextlib
import logging
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from meshmq.metrics_access import MetricsTls, ScrapeAccess, guarded

if TYPE_CHECKING:
    from meshmq.config.models import MetricsSettings

log = logging.getLogger("meshmq.metrics")

# A scrape waits this long for the event loop to read the values; a loop busy
# for longer than that has bigger problems, and the scrape then fails (HTTP 500).
SCRAPE_TIMEOUT_S = 5.0

# Seconds: from 0.5 ms (a lone append on a fast disk) to 10 s (a stalled store).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Messages or records per batch: powers of 4 up to journal.max-batch-records' default and past it.
SIZE_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384)


class Histogram:
    """A histogram observed on one event loop, without locks: per batch, not per
    message. Read it on the same loop (a `LoopCollector` fill does)."""

    __slots__ = ("name", "documentation", "bounds", "counts", "sum")

    def __init__(self, name: str, documentation: str, buckets: Sequence[float]) -> None:
        self.name = name
        self.documentation = documentation
        self.bounds = tuple(sorted(buckets))
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, float]]:
        out, total = [], 0
        for bound, n in zip((*map(_float_text, self.bounds), "+Inf"), self.counts):
            total += n
            out.append((bound, total))
        return out


def _float_text(value: float) -> str:
    return repr(float(value))


class Families:
    """The metric families of one scrape, filled sample by sample:
    `fam.gauge("meshmq_queue_messages", "…", 3, address="a", queue="q")`.
    `labels` given at construction (the node) go on every sample, first."""

    def __init__(self, **labels: str) -> None:
        self._const = labels
        self._families: dict[str, Metric] = {}

    def _family(self, kind, name: str, documentation: str, labels: dict[str, str]) -> tuple[Metric, list[str]]:
        values = [*self._const.values(), *labels.values()]
        family = self._families.get(name)
        if family is None:
            family = self._families[name] = kind(name, documentation, labels=[*self._const, *labels])
        return family, values

    def gauge(self, name: str, documentation: str, value: float, **labels: str) -> None:
        family, values = self._family(GaugeMetricFamily, name, documentation, labels)
        family.add_metric(values, value)

    def counter(self, name: str, documentation: str, value: float, **labels: str) -> None:
        """`name` ends in _total (the exposition writes it so; the family is named without it)."""
        family, values = self._family(CounterMetricFamily, name, documentation, labels)
        family.add_metric(values, value)

    def histogram(self, hist: Histogram, **labels: str) -> None:
        family, values = self._family(HistogramMetricFamily, hist.name, hist.documentation, labels)
        family.add_metric(values, hist.cumulative(), hist.sum)

    def declare_gauge(self, name: str, documentation: str, *labels: str) -> None:
        """A family that shows even with no sample yet (HELP and TYPE lines)."""
        if name not in self._families:
            self._families[name] = GaugeMetricFamily(name, documentation, labels=[*self._const, *labels])

    def __iter__(self):
        return iter(self._families.values())


Fill = Callable[[Families], None]


class LoopCollector:
    """A prometheus_client collector whose fills run on `loop` at scrape time,
    all into one `Families` (so two fills may add samples to one family)."""

    def __init__(self, fills: dict[str, Fill], labels: dict[str, str], loop: asyncio.AbstractEventLoop) -> None:
        self._fills = fills
        self._labels = labels
        self._loop = loop

    def describe(self) -> list[Metric]:
        return []  # no names to check for clashes: registering must not run the fills

    def _families(self) -> list[Metric]:
        families = Families(**self._labels)
        for fill in list(self._fills.values()):
            fill(families)
        return list(families)

    def collect(self) -> Iterable[Metric]:
        loop = self._loop
        try:
            if asyncio.get_running_loop() is loop:
                return self._families()
        except RuntimeError:
            pass
        result: concurrent.futures.Future[list[Metric]] = concurrent.futures.Future()

        def run() -> None:
            if result.set_running_or_notify_cancel():
                try:
                    result.set_result(self._families())
                except BaseException as exc:  # noqa: BLE001 - reported to the scrape
                    result.set_exception(exc)

        try:
            loop.call_soon_threadsafe(run)
        except RuntimeError:  # the loop is closed: the service has stopped
            return []
        try:
            return result.result(SCRAPE_TIMEOUT_S)
        except concurrent.futures.TimeoutError:
            result.cancel()
            raise TimeoutError(f"the event loop did not read the metrics within {SCRAPE_TIMEOUT_S:g} s") from None


class MetricsEndpoint:
    """One service instance's metrics: its registry (process metrics, and the
    fills put in it), served over HTTP when `settings.enabled`.

    Make it with `serving()` on the service's event loop; `url` is "" when not served."""

    def __init__(self, settings: MetricsSettings | None, *, service: str, node: str,
                 access: ScrapeAccess | None = None, tls: MetricsTls | None = None) -> None:
        self.settings = settings
        self.service = service
        self.node = node
        # With security enabled: who may scrape, and the certificate to serve HTTPS with (metrics_access.py).
        self._access = access
        self._tls = tls
        # The fills' collector names no metric in advance (describing would run them), so a
        # filtered scrape (`?name[]=…`) must still ask it: a registry that supports such collectors.
        self.registry = CollectorRegistry(auto_describe=False, support_collectors_without_names=True)
        ProcessCollector(registry=self.registry)
        self._fills: dict[str, Fill] = {"service": self._info}
        self.registry.register(LoopCollector(self._fills, {"node": node}, asyncio.get_running_loop()))
        self._server = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def _info(self, fam: Families) -> None:
        from meshmq import __version__

        fam.gauge("meshmq_service_info", "Always 1: what this endpoint serves (service kind, meshmq version).", 1,
                  service=self.service, version=__version__)

    def put(self, key: str, fill: Fill) -> None:
        """Export what `fill` adds at each scrape (on this loop, with the node label),
        in place of an earlier fill under `key` (a router's next run, its next journal)."""
        self._fills[key] = fill

    def drop(self, key: str) -> None:
        self._fills.pop(key, None)

    def start(self) -> str:
        """Listen (blocking bind; port 0 picks one) and serve on a thread; the URL of /metrics.

        prometheus_client's exposition app, on its threading WSGI server, behind
        the scrape access check and with TLS when those are given."""
        from prometheus_client.exposition import make_wsgi_app

        host, port = self.settings.host, self.settings.port
        app = make_wsgi_app(self.registry)
        if self._access is not None:
            app = guarded(app, self._access)
        try:
            server = _server(host, port, app)
        except OSError as exc:
            raise OSError(f"metrics: cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
        if self._tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                context.load_cert_chain(self._tls.cert_path, self._tls.key_path)
            except (OSError, ssl.SSLError) as exc:
                server.server_close()
                raise OSError(f"metrics: cannot serve TLS with {self._tls.cert_path}: {exc}") from exc
            # The handshake runs in the request's thread, so a silent client holds up no one else.
            server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name=f"metrics-{self.service}", daemon=True)
        self._thread.start()
        shown = f"[{host}]" if ":" in host else host
        self.url = f"{'https' if self._tls else 'http'}://{shown}:{server.server_port}/metrics"
        return self.url

    async def close(self) -> None:
        """Stop serving; the listening socket is closed when this returns."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        await asyncio.to_thread(server.shutdown)  # serve_forever polls every 0.5 s
        server.server_close()
        await asyncio.to_thread(thread.join, 5)


def _server(host: str, port: int, app) -> WSGIServer:
    """prometheus_client's threading WSGI server on (host, port), logging nothing per request."""
    from prometheus_client.exposition import ThreadingWSGIServer

    class Server(ThreadingWSGIServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        def handle_error(self, request, client_address) -> None:
            # A client that went away, or spoke plain HTTP to HTTPS: not worth a traceback on stderr.
            log.debug("metrics: request from %s failed", client_address, exc_info=True)

    return make_server(host, port, app, Server, handler_class=_QuietHandler)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


@contextlib.asynccontextmanager
async def serving(settings: MetricsSettings | None, *, service: str, node: str, access: ScrapeAccess | None = None,
                  tls: MetricsTls | None = None) -> AsyncIterator[MetricsEndpoint]:
    """A service instance's metrics for the time it runs: served over HTTP when
    enabled (the URL goes in its ready info as "metrics"), a registry alone otherwise.
    `access` and `tls` (metrics_access.py) protect it when the node has security enabled."""
    endpoint = MetricsEndpoint(settings, service=service, node=node, access=access, tls=tls)
    if settings is not None and settings.enabled:
        endpoint.start()
        log.info("%s metrics at %s", service, endpoint.url)
    try:
        yield endpoint
    finally:
        await endpoint.close()


def ready_info(endpoint: MetricsEndpoint | None) -> dict[str, str]:
    """What a service's ready info says about its metrics: {"metrics": URL} when served."""
    return {"metrics": endpoint.url} if endpoint is not None and endpoint.url else {}
