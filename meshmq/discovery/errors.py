"""The errors of discovery, one type per thing a caller does about it.

They are shared by every transport — a `DiscoveryCore` hosted in the
caller's process and the `GrpcDiscoveryClient` — so a caller handles the same
type whichever way it reaches discovery: `DiscoveryUnavailableError` means
retry later, `NodeIdInUseError` means stop (a copied data directory),
`DiscoveryConfigError` means fix the announcement or the setting it names.
"""

from __future__ import annotations

from meshmq.errors import MeshMQError, Reason


class DiscoveryError(MeshMQError):
    """Base of every discovery failure."""


class NodeIdInUseError(DiscoveryError):
    """Another, live node announces the same node id (a copied data directory)."""

    reason = Reason.DUPLICATE_ID


class DiscoveryUnavailableError(DiscoveryError):
    """etcd or the discovery service cannot be reached (now, or within the deadline)."""

    reason = Reason.STORE_UNAVAILABLE


class DiscoveryConfigError(DiscoveryError, ValueError):
    """An announcement or a discovery setting that cannot work; the message says which."""

    reason = Reason.INVALID_REQUEST
