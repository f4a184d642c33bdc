"""Names of the router's internal addresses and queues.

They start with ``$.meshmq.``: links never offer them to other nodes and
management lists them apart.
"""

from __future__ import annotations

INTERNAL_PREFIX = "$.meshmq."
STORE_AND_FORWARD_PREFIX = INTERNAL_PREFIX + "sf."


def store_and_forward_queue_name(cluster_connection: str, node_id: str) -> str:
    """The queue (and address) where messages for `node_id` over a cluster connection wait."""
    return f"{STORE_AND_FORWARD_PREFIX}{cluster_connection}.{node_id}"
