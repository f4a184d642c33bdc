"""Everything one gateway holds while it runs, in one place the API and the
console both reach (app.state.gateway)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from meshmq.config.models import BrokerConfig

from .auth import Sessions, Users
from .directory import RouterDirectory
from .operations import Operations
from .views import Gatherer


@dataclass
class GatewayMetrics:
    """The gateway's own metrics, on a registry of its own (several gateways may share a process in tests)."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        ProcessCollector(registry=self.registry)
        self.requests = Counter("meshmq_gateway_requests", "HTTP requests answered, by route and status class",
                                ["method", "route", "status"], registry=self.registry)
        self.duration = Histogram("meshmq_gateway_request_duration_seconds", "Time to answer an HTTP request",
                                  ["route"], registry=self.registry)
        self.logins = Counter("meshmq_gateway_logins", "Log-in attempts, by outcome", ["outcome"],
                              registry=self.registry)
        self.sessions = Gauge("meshmq_gateway_sessions", "Open console sessions and API tokens",
                              registry=self.registry)


@dataclass
class GatewayState:
    config: BrokerConfig
    users: Users
    sessions: Sessions
    directory: RouterDirectory
    gather: Gatherer
    operations: Operations
    metrics: GatewayMetrics

    @classmethod
    def build(cls, config: BrokerConfig) -> GatewayState:
        directory = RouterDirectory(config)
        return cls(config=config, users=Users(config), sessions=Sessions(config.gateway.session_timeout / 1000),
                   directory=directory, gather=Gatherer(directory), operations=Operations(),
                   metrics=GatewayMetrics())
