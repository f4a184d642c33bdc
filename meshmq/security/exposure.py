"""What a process leaves open with security off, and whether it may start so.

With ``security-enabled: false`` (the default) a router takes client sessions
and management calls from anyone who reaches its acceptors, and without a
``cluster-password`` its cluster links, quorum votes and store replication
too; a journal, discovery or HA-coordinator service without a cluster password
answers any caller. That is what a trial on one machine wants and what nobody
wants on a network, so:

* every process started with security off logs one banner (`open_banner`)
  naming each of its listeners and what anyone who reaches it may do there,
  and how to close it;
* a process whose listeners reach beyond loopback (0.0.0.0, ::, a LAN
  address, a host name that resolves off loopback) refuses to start with
  security off unless the config writes ``security-enabled: false`` itself
  (`start_problems`): the default must not be what opens a broker to a network;
* with security on and a cluster password, a gRPC listener beyond loopback
  without TLS carries every message, and the proofs of cluster membership,
  readable on the wire; a relaying stranger could ride a member's proof
  (meshmq/security/cluster_proof.py). So that, too, is refused unless the
  config writes ``insecure-cluster: true``, which is then logged at every
  start (`start_warnings`).

`start_problems` is the one place that says why a config may not start a
process; checks of the same kind belong beside it. The CLI asks both for
every service it runs (`_serve` in meshmq/cli/main.py).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshmq.config.models import BrokerConfig

_SEE = 'docs/security.md, "Security off"'
_SEE_TLS = 'docs/security.md, "Cluster identity"'


@dataclass(frozen=True)
class ListenerUse:
    """One listener of a process: its config key, where it binds, and what a caller may do there with security off."""

    key: str
    host: str
    port: int
    open_to_anyone: str
    # TLS on it; whether it carries the cluster's own traffic (gRPC: links, votes, journal, discovery).
    tls: bool = False
    cluster: bool = False

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port or '<any free port>'}"


def _cluster_part(config: BrokerConfig, what: str) -> str:
    if config.cluster_password is None:
        return f"{what} from any caller (no cluster-password)"
    return f"{what} only with the cluster-password"


def _tls(ssl_enabled: bool) -> str:
    return "" if ssl_enabled else "; plain text (no TLS)"


def _router_acceptor(config: BrokerConfig, ssl_enabled: bool) -> str:
    ha = "cluster links (messages into any queue) and quorum votes"
    if config.ha_policy.replication is not None:
        ha += ", a copy of the whole store (replication)"
    return ("client sessions (send, receive) and management (create, delete, purge, move) without login; "
            + _cluster_part(config, ha) + _tls(ssl_enabled))


def _gateway(config: BrokerConfig) -> str:
    login = "log-in with the users of this config"
    if config.gateway.dev_mode:
        login = "dev-mode: built-in admin/admin" if not config.users else "dev-mode: default passwords accepted"
    tls = "" if config.gateway.listen.cert_path is not None else "; plain HTTP"
    return f"console and REST API ({login}); every logged-in user may manage every queue{tls}"


def listener_uses(config: BrokerConfig, service: str) -> list[ListenerUse]:
    """The listeners the `service` process ("router", "journal", "discovery",
    "ha-coordinator", "gateway") binds with this config, each with what anyone
    reaching it may do when security is off."""
    uses: list[ListenerUse] = []
    if service == "router":
        uses += [ListenerUse(f"acceptors[{i}]", a.host, a.port, _router_acceptor(config, a.ssl_enabled),
                             a.ssl_enabled, cluster=True)
                 for i, a in enumerate(config.acceptors)]
    elif service == "journal":
        listen = config.journal.listen
        uses.append(ListenerUse("journal.listen", listen.host, listen.port,
                                _cluster_part(config, "the journal service (read, write and fence every stored "
                                                      "message)") + _tls(listen.ssl_enabled),
                                listen.ssl_enabled, cluster=True))
    elif service == "discovery":
        listen = config.discovery.listen
        uses.append(ListenerUse("discovery.listen", listen.host, listen.port,
                                _cluster_part(config, "announcing a node (clients then connect to it) and listing "
                                                      "the nodes") + _tls(listen.ssl_enabled),
                                listen.ssl_enabled, cluster=True))
    elif service == "ha-coordinator":
        listen = config.ha_coordinator.listen
        uses.append(ListenerUse("ha-coordinator.listen", listen.host, listen.port,
                                _cluster_part(config, "activations and leases (which node serves a store)")
                                + _tls(listen.ssl_enabled), listen.ssl_enabled, cluster=True))
    if service == "gateway" or (service == "router" and config.gateway.enabled):
        listen = config.gateway.listen
        uses.append(ListenerUse("gateway.listen", listen.host, listen.port, _gateway(config)))
    if service != "gateway" and config.metrics.enabled:
        uses.append(ListenerUse("metrics", config.metrics.host, config.metrics.port,
                                "Prometheus metrics over HTTP (queue and address names, counts) without login"))
    return uses


def is_loopback(host: str) -> bool:
    """True when `host` (an address or a name) only ever means this machine:
    every address it resolves to is a loopback one. 0.0.0.0 and :: (every
    interface), other addresses and names that do not resolve are not."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    addresses = {info[4][0].split("%")[0] for info in found}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def start_problems(config: BrokerConfig, service: str) -> list[str]:
    """Why this config may not start the `service` process (empty: it may)."""
    problems: list[str] = []
    if not config.security_enabled and "security_enabled" not in config.model_fields_set:
        beyond = [u for u in listener_uses(config, service) if not is_loopback(u.host)]
        if beyond:
            where = ", ".join(f"{u.key} ({u.address})" for u in beyond)
            problems.append(
                f"security-enabled: not set, and the {service} would listen beyond this machine on {where} with "
                f"security off (the default): anyone who reaches it could use it without logging in. Write "
                f"`security-enabled: true` with users to secure it, or `security-enabled: false` to run it open on "
                f"purpose ({_SEE})")
    plain = _plain_cluster_listeners(config, service)
    if plain and not config.insecure_cluster:
        where = ", ".join(f"{u.key} ({u.address})" for u in plain)
        problems.append(
            f"insecure-cluster: not set, and the {service} would serve the cluster's traffic in plain text beyond "
            f"this machine on {where}: with security-enabled and a cluster-password, every message and every proof "
            f"of cluster membership would be readable on the wire. Give it TLS (ssl-enabled, cert-path, key-path, "
            f"trust-path: the cluster's CA), or write `insecure-cluster: true` to run it so on purpose ({_SEE_TLS})")
    return problems


def _plain_cluster_listeners(config: BrokerConfig, service: str) -> list[ListenerUse]:
    """The listeners beyond loopback, without TLS, that carry a secured cluster's traffic."""
    if not (config.security_enabled and config.cluster_password is not None):
        return []
    return [u for u in listener_uses(config, service) if u.cluster and not u.tls and not is_loopback(u.host)]


def start_warnings(config: BrokerConfig, service: str) -> list[str]:
    """What the `service` process logs as warnings at every start about what it leaves exposed."""
    plain = _plain_cluster_listeners(config, service)
    if not (plain and config.insecure_cluster):
        return []
    where = ", ".join(f"{u.key} ({u.address})" for u in plain)
    return [f"insecure-cluster: true: the cluster's traffic goes in plain text beyond this machine on {where}; "
            f"anyone on the network path reads every message and may replay a proof of membership for an hour "
            f"({_SEE_TLS})"]


def open_banner(config: BrokerConfig, service: str) -> str | None:
    """The warning a `service` process logs at start with security off: each of
    its listeners, what is open there, and how to close it (None with security on)."""
    if config.security_enabled:
        return None
    lines = [f"SECURITY IS OFF (security-enabled: false): this {service} lets anyone who can reach it use it:"]
    lines += [f"  {u.key} {u.address}: {u.open_to_anyone}" for u in listener_uses(config, service)]
    lines.append(f"  To close it: security-enabled: true with users (meshmq user hash) and security-settings, one "
                 f"cluster-password for every process of the cluster, and TLS on listeners other machines reach "
                 f"({_SEE}).")
    return "\n".join(lines)
