"""Service-to-service identity: the cluster credential (Artemis's
``cluster-user`` / ``cluster-password``).

Every process of a cluster reads a node config holding the same two keys. A
journal or discovery service with a ``cluster-password`` refuses, before the
method runs, any call that does not carry it (``transport.ClusterIdentityCheck``);
the router proves it on every call to its journal service and its discovery
service, and so does anything else that announces. The discovery service
also lets a configured user (username and password, as on the router) list
and watch the nodes, which is what clients do, but never announce.

The rules a config must follow:

* With ``security-enabled: true``, a node that uses a separate journal or
  discovery service needs a ``cluster-password`` (checked at load,
  ``BrokerConfig._check_cluster_identity``), and so does a journal or
  discovery service itself (checked at its start, ``service_problem``): an
  authenticated router in front of a journal anyone can call secures nothing.
  The embedded journal (in the router's process, the default) needs none.
* Without security and without a cluster password, nothing is checked, as
  before; the journal and discovery services say so in a warning at start.
* A password printed in the docs (``defaults.EXAMPLE_CLUSTER_PASSWORDS``) is
  warned about at every start, as Artemis does for its "CHANGE ME!!".

The password is plain text in the config (unlike users' passwords, which may
be hashes): both ends derive the key they prove membership with from it, and
it never travels (meshmq/security/cluster_proof.py).
"""

from __future__ import annotations

import logging

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING

from meshmq.config import defaults
from meshmq.security.cluster_proof import ClusterProver
from meshmq.transport import ClusterIdentityCheck, channel_credentials

if TYPE_CHECKING:
    import grpc

    from meshmq.config.models import Acceptor, BrokerConfig

_SEE = 'docs/security.md, "Cluster identity"'


class ClusterIdentityError(RuntimeError):
    """A journal or discovery service that would accept any caller refuses to start."""


def cluster_prover(config: BrokerConfig) -> ClusterProver:
    """How a process of this cluster proves membership on its calls to the
    others (journal, discovery, HA coordinator, other routers): a proof after
    the peer proved itself, never the password (meshmq/security/cluster_proof.py).
    Without a cluster password it proves nothing and adds no metadata."""
    return ClusterProver(config.cluster_user, config.cluster_password)


def connector_acceptor(config: BrokerConfig) -> Acceptor:
    """The acceptor other nodes reach this one at: the one at a cluster
    connection's connector-ref host:port, else the first (the default connector)."""
    refs = [cc.connector_ref for cc in config.cluster_connections.values() if cc.connector_ref]
    if refs:
        host, _, port = config.connectors[refs[0]].rpartition(":")
        for acceptor in config.acceptors:
            if acceptor.host == host and str(acceptor.port) == port:
                return acceptor
    return config.acceptors[0]


def node_channel_credentials(config: BrokerConfig) -> grpc.ChannelCredentials | None:
    """The TLS a node's calls to the rest of its cluster use (other routers,
    the HA coordinator, a discovery service): that of the acceptor others
    reach it at. With `ssl-enabled` there, the node trusts its `trust-path`
    (the cluster's CA; without one, the system's CAs) and presents its own
    certificate, so a listener with `need-client-auth` admits it. None: plain,
    as the acceptor is. (The journal service has keys of its own, `journal.ssl-enabled`.)"""
    acceptor = connector_acceptor(config)
    if not acceptor.ssl_enabled:
        return None
    return channel_credentials(acceptor.trust_path, acceptor.cert_path, acceptor.key_path)


def service_problem(config: BrokerConfig, service: str) -> str | None:
    """Why the `service` service ("journal", "discovery") must not start with this config, or None."""
    if config.security_enabled and config.cluster_password is None:
        return (f"cluster-password: required when security-enabled is true: without it the {service} service "
                f"accepts any caller; give every process of the cluster the same cluster-user and "
                f"cluster-password ({_SEE})")
    return None


def check_service_start(config: BrokerConfig, service: str, log: logging.Logger) -> None:
    """Refuse to start the `service` service when its config needs a cluster password it
    lacks (ClusterIdentityError); log what it warns about at every start."""
    problem = service_problem(config, service)
    if problem is not None:
        raise ClusterIdentityError(problem)
    for warning in start_warnings(config, service):
        log.warning(warning)


def start_warnings(config: BrokerConfig, service: str) -> list[str]:
    """What the `service` service logs as warnings at every start."""
    if config.cluster_password in defaults.EXAMPLE_CLUSTER_PASSWORDS:
        return [f"cluster-password is an example password from the documentation ({config.cluster_password!r}): "
                f"anyone who has read it can call this cluster's journal and discovery services; "
                f"set a secret of your own ({_SEE})"]
    if config.cluster_password is None and service in ("journal", "discovery"):
        return [f"no cluster-password: the {service} service accepts any caller; set cluster-password "
                f"to refuse callers that do not prove they belong to the cluster ({_SEE})"]
    return []


def server_interceptors(
    config: BrokerConfig, service: str, *, readers: Callable[[Mapping[str, str]], bool] | None = None,
    read_methods: Collection[str] = (),
) -> list[ClusterIdentityCheck]:
    """The interceptors for the `service` service's gRPC server: the cluster
    credential check when a cluster password is configured, none otherwise."""
    if config.cluster_password is None:
        return []
    return [ClusterIdentityCheck(config.cluster_user, config.cluster_password, service=f"the {service} service",
                                 readers=readers, read_methods=read_methods)]
