"""What the discovery service takes from a node's configuration.

The keys themselves (discovery-groups, broadcast-groups, discovery) are in
meshmq/config/models.py; docs/discovery.md describes them.
"""

from __future__ import annotations

from meshmq.config.models import DiscoveryGroup, DiscoveryService
from meshmq.discovery import DiscoveryConfigError


def served_group(discovery_groups: dict[str, DiscoveryGroup], discovery: DiscoveryService) -> tuple[str, DiscoveryGroup]:
    """The discovery group `meshmq serve discovery` serves."""
    ref = discovery.discovery_group_ref
    if ref is None:
        if len(discovery_groups) != 1:
            have = ", ".join(discovery_groups) or "none"
            raise DiscoveryConfigError(f"discovery.discovery-group-ref: name the discovery group to serve (have: {have})")
        ref = next(iter(discovery_groups))
    group = discovery_groups.get(ref)
    if group is None:
        raise DiscoveryConfigError(f"discovery.discovery-group-ref: no discovery group named {ref!r}")
    if group.discovery_service is not None:
        raise DiscoveryConfigError(
            f"discovery group {ref!r} points at a discovery service; "
            "`meshmq serve discovery` needs etcd or static-connectors"
        )
    return ref, group
