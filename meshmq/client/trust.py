"""Which nodes may receive a client's credentials.

A client balances its sessions over the cluster topology: the node it first
reaches pushes it (`WatchTopology`), and a `discovery://` URI reads the first
nodes from etcd. Both come from announcements, and whoever can write an
announcement can put a node of their own in that list (issue 10: a fake node
announced in an etcd without auth got 2 of 4 sessions, with the username and
password in their metadata). So a node learned from the topology is a
stranger until something proves it is a cluster member, and the SDK sends the
password (call metadata on every RPC) only to nodes it has verified:

* **With TLS** (`sslEnabled=true`) the proof is the handshake. Every channel,
  to the URI's hosts and to topology nodes alike, uses TLS verified against
  the trusted CA (`trustStorePath`, else the system's) for the host name the
  node was announced with; nothing overrides that name. A node that cannot
  show such a certificate never gets a call, hence never the metadata; the
  session goes to the next node.
* **Without TLS** nothing proves anything, so credentials go only to the
  hosts written in the URI (the user chose them). Topology nodes that are not
  among them are not used, and the connection logs one warning saying so. A
  `discovery://` URI names no node at all: with a username and no TLS it is
  refused when parsed.
* **Without a username** there is nothing to leak: the topology is used as
  before.

The deciders here are pure; `connection.py` applies them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .options import ClientOptions, Server


def topology_is_verified(options: ClientOptions) -> bool:
    """Whether a node learned from the topology may receive this client's credentials:
    with TLS its handshake verifies it; without a username there are none to send."""
    return options.sslEnabled or not options.username


def _key(server: Server) -> tuple[str, int]:
    return server.host.lower(), server.port


def may_receive_credentials(server: Server, uri_servers: Sequence[Server], *, verified: bool) -> bool:
    """A verified topology, or one of the hosts the user wrote in the URI (compared as written:
    `localhost` in the URI is not `127.0.0.1` in an announcement)."""
    return verified or _key(server) in {_key(s) for s in uri_servers}


@dataclass(frozen=True)
class Candidates:
    """The nodes the next session may go to, and the topology nodes left out as unverified."""

    servers: tuple[Server, ...]
    withheld: tuple[Server, ...] = ()


def session_candidates(
    topology: Sequence[Server], uri_servers: Sequence[Server], *, use_topology: bool, verified: bool
) -> Candidates:
    """Where sessions may go: the pushed topology (when it is used and known),
    less the nodes that may not receive credentials; the URI's own list when
    that leaves nothing or the topology is not used."""
    if not topology or not (use_topology or not uri_servers):
        return Candidates(tuple(uri_servers))
    allowed = tuple(s for s in topology if may_receive_credentials(s, uri_servers, verified=verified))
    withheld = tuple(s for s in topology if s not in allowed)
    return Candidates(allowed or tuple(uri_servers), withheld)
