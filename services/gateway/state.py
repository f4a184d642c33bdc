"""Everything one gateway holds while it runs, in one place the API and the
console both reach (app.state.gateway)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily

from meshmq.config.models import BrokerConfig
from meshmq.security.login_throttle import LoginThrottle
from meshmq.transport import credentials_metadata

from .auth import Sessions, Users
from .directory import RouterDirectory
from .history import History, Sampler
from .operations import Operations
from .views import Gatherer
from .verify_store import VerifyRuns


@dataclass
class GatewayMetrics:
    """The gateway's own metrics, on a registry of its own (several gateways may share a process in tests)."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    # The gateway's config name: every sample gets it as its `node` label, as every service's do.
    node: str = ""

    def __post_init__(self) -> None:
        ProcessCollector(registry=self.registry)
        self.requests = Counter("meshmq_gateway_requests", "HTTP requests answered, by route and status class",
                                ["method", "route", "status"], registry=self.registry)
        self.duration = Histogram("meshmq_gateway_request_duration_seconds", "Time to answer an HTTP request",
                                  ["route"], registry=self.registry)
        self.logins = Counter("meshmq_gateway_logins", "Log-in attempts, by outcome (ok; refused: wrong "
                              "credentials; forbidden: no view or manage permission)", ["outcome"],
                              registry=self.registry)
        self.sessions = Gauge("meshmq_gateway_sessions", "Open console sessions and API tokens",
                              registry=self.registry)

    def exposition(self, names: list[str] | None = None) -> bytes:
        """The text exposition, every sample labelled `node` (and only `names`' series when given)."""
        source = self.registry.restricted_registry(names) if names else self.registry
        served = CollectorRegistry()
        served.register(_Labelled(source, self.node))
        return generate_latest(served)

    def count_logins(self, throttle: LoginThrottle) -> None:
        """Serve the log-in throttle's counts (read at scrape time, as the routers do)."""
        self.registry.register(_ThrottleCounts(throttle))


class _Labelled:
    """A registry's metrics with a `node` label put first on every sample."""

    def __init__(self, source, node: str) -> None:
        self._source = source
        self._node = node

    def collect(self):
        for family in self._source.collect():
            family.samples = [s._replace(labels={"node": self._node, **s.labels}) for s in family.samples]
            yield family


class _ThrottleCounts:
    """A Prometheus collector over a LoginThrottle's counters."""

    def __init__(self, throttle: LoginThrottle) -> None:
        self._throttle = throttle

    def collect(self):
        yield CounterMetricFamily("meshmq_gateway_login_failures", "Log-ins refused for a wrong username or password "
                                  "(checked in full).", value=self._throttle.failures)
        yield CounterMetricFamily("meshmq_gateway_logins_throttled", "Log-in attempts made to wait after repeated "
                                  "failures for their username or from their address (login-throttle).",
                                  value=self._throttle.throttled)


@dataclass
class GatewayState:
    config: BrokerConfig
    users: Users
    sessions: Sessions
    directory: RouterDirectory
    gather: Gatherer
    operations: Operations
    metrics: GatewayMetrics
    sampler: Sampler
    # The last `meshmq verify` reports posted here (verify_runs.py).
    verify_runs: VerifyRuns = field(default_factory=VerifyRuns)

    @classmethod
    def build(cls, config: BrokerConfig) -> GatewayState:
        directory = RouterDirectory(config)
        sessions = Sessions(config.gateway.session_timeout / 1000)
        gather = Gatherer(directory)
        history = History(config.gateway.history_interval / 1000, config.gateway.history_length / 1000)
        g = config.gateway
        own = credentials_metadata(g.sampler_user, g.sampler_password) if g.sampler_user else ()
        sampler = Sampler(gather, history,
                          lambda: own or (who.metadata if (who := sessions.latest_viewer()) else ()))
        return cls(config=config, users=Users(config), sessions=sessions, directory=directory, gather=gather,
                   operations=Operations(), metrics=GatewayMetrics(node=config.name), sampler=sampler)
