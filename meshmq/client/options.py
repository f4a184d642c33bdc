"""A client's options and the servers it names: the plain data a URI parses into
(uri.py) and the SDK's deciders read (trust.py, failover.py)."""

from __future__ import annotations

from dataclasses import dataclass

from meshmq.config import defaults


@dataclass(frozen=True)
class ClientOptions:
    """Every client option with its default (the Artemis default where there is one).
    What each option does is written beside its default in meshmq/config/defaults.py."""

    consumerWindowSize: int = defaults.CLIENT_CONSUMER_WINDOW_SIZE
    confirmationWindowSize: int = defaults.CLIENT_CONFIRMATION_WINDOW_SIZE
    producerWindowSize: int = defaults.CLIENT_PRODUCER_WINDOW_SIZE
    minLargeMessageSize: int = defaults.CLIENT_MIN_LARGE_MESSAGE_SIZE
    producerMaxBatch: int = defaults.CLIENT_PRODUCER_MAX_BATCH
    callTimeout: int = defaults.CLIENT_CALL_TIMEOUT
    clientID: str = ""
    username: str = ""
    password: str = ""
    sslEnabled: bool = False
    # PEM CA bundle to trust (default: the system's), and optional client certificate/key.
    trustStorePath: str = ""
    keyStorePath: str = ""
    keyPath: str = ""
    connectionLoadBalancingPolicyClassName: str = defaults.CLIENT_LOAD_BALANCING_POLICY
    useTopologyForLoadBalancing: bool = defaults.CLIENT_USE_TOPOLOGY_FOR_LOAD_BALANCING
    initialConnectAttempts: int = defaults.CLIENT_INITIAL_CONNECT_ATTEMPTS
    retryInterval: int = defaults.CLIENT_RETRY_INTERVAL
    retryIntervalMultiplier: float = defaults.CLIENT_RETRY_INTERVAL_MULTIPLIER
    maxRetryInterval: int = defaults.CLIENT_MAX_RETRY_INTERVAL
    reconnectAttempts: int = defaults.CLIENT_RECONNECT_ATTEMPTS
    failoverOnInitialConnection: bool = defaults.CLIENT_FAILOVER_ON_INITIAL_CONNECTION
    clientFailureCheckPeriod: int = defaults.CLIENT_FAILURE_CHECK_PERIOD
    connectionTTL: int = defaults.CLIENT_CONNECTION_TTL
    callFailoverTimeout: int = defaults.CLIENT_CALL_FAILOVER_TIMEOUT


@dataclass(frozen=True)
class Server:
    host: str
    port: int

    @property
    def target(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"
