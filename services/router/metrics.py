"""The router's Prometheus metrics (docs/metrics.md), read at scrape time.

Nothing here runs per message: queues, addresses and bridges already keep the
counts Artemis's management reports (management.py shows the same numbers),
and the journal batcher observes its histograms once per append. `fill`
reads them all when Prometheus asks, on the router's event loop
(meshmq.metrics.LoopCollector), so one scrape costs one pass over the queues,
addresses and bridges.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from meshmq.link_kinds import ACCEPTED, CLUSTER, DIALED
from meshmq.metrics import Families

from .cluster.bridge import CONNECTED
from .connections import count_connections

if TYPE_CHECKING:
    from .server import RouterNode

# (metric, help, how to read it from a Queue)
_QUEUE_GAUGES = (
    ("meshmq_queue_messages", "Messages the queue holds: waiting (in memory or paged), delivering, and "
     "scheduled (Artemis's MessageCount).", lambda q: q.message_count),
    ("meshmq_queue_scheduled_messages", "Of the queue's messages, those not yet due: scheduled for a later "
     "delivery or in a redelivery delay (Artemis's ScheduledCount).", lambda q: q.scheduled_count),
    ("meshmq_queue_delivering_messages", "Messages handed to consumers and not yet acknowledged.",
     lambda q: q.delivering),
    ("meshmq_queue_paged_messages", "Messages of the queue in the store only (paged), read back as it drains.",
     lambda q: q.paged_messages),
    ("meshmq_queue_paged_bytes", "Bytes of the queue's paged messages.", lambda q: q.paged_bytes),
    ("meshmq_queue_consumers", "Consumers attached to the queue on this node.", lambda q: len(q.consumers)),
)
_QUEUE_COUNTERS = (
    ("meshmq_queue_messages_added_total", "Messages routed into the queue since the node started.",
     lambda q: q.messages_added),
    ("meshmq_queue_messages_acknowledged_total", "Messages consumers acknowledged from the queue.",
     lambda q: q.messages_acknowledged),
    ("meshmq_queue_messages_delivered_total", "Deliveries to the queue's consumers (a bridge included), "
     "redeliveries counted again.", lambda q: q.messages_delivered),
    ("meshmq_queue_messages_expired_total", "Messages that expired in the queue.", lambda q: q.messages_expired),
    ("meshmq_queue_messages_killed_total", "Messages removed from the queue after max-delivery-attempts "
     "(dead-lettered, or dropped without a dead-letter address).", lambda q: q.messages_killed),
    ("meshmq_queue_slow_consumers_total", "Times a consumer of the queue acknowledged below its "
     "slow-consumer-threshold (closed with slow-consumer-policy KILL, logged with NOTIFY).",
     lambda q: q.slow_consumers),
)

_QUEUE_COUNTERS += (
    ("meshmq_queue_messages_redelivered_total", "Deliveries that came back unacknowledged (nack, consumer "
     "closed, rollback) to be delivered again.", lambda q: q.messages_redelivered),
)
# The node's totals: sums over its queues at scrape time (Artemis's TotalMessagesAdded,
# TotalMessageCount…; a deleted queue's counts leave the sum with it).
_NODE_TOTALS = (
    ("meshmq_router_messages", "Messages the node's queues hold (Artemis's TotalMessageCount).",
     lambda q: q.message_count),
    ("meshmq_router_scheduled_messages", "Of those, not yet due: scheduled or in a redelivery delay.",
     lambda q: q.scheduled_count),
    ("meshmq_router_messages_received_total", "Messages routed into the node's queues (Artemis's "
     "TotalMessagesAdded).", lambda q: q.messages_added),
    ("meshmq_router_messages_delivered_total", "Deliveries to consumers on the node (redeliveries included).",
     lambda q: q.messages_delivered),
    ("meshmq_router_messages_redelivered_total", "Deliveries that came back unacknowledged to be delivered "
     "again.", lambda q: q.messages_redelivered),
    ("meshmq_router_messages_acknowledged_total", "Messages consumers acknowledged (Artemis's "
     "TotalMessagesAcknowledged).", lambda q: q.messages_acknowledged),
)


def fill(node: RouterNode, fam: Families) -> None:
    b = node.broker
    fam.gauge("meshmq_router_active", "1 while this router serves its store (0: a backup waiting for it).", 1)
    fam.gauge("meshmq_router_epoch", "The activation epoch the router writes its journal at (fencing).", b.epoch)
    fam.gauge("meshmq_router_start_timestamp_seconds", "Unix time the router started serving its store "
              "(activated; a backup's is when it took over).", b.started_at / 1000)
    sessions = node.sessions.sessions.values()
    fam.gauge("meshmq_router_sessions", "Client sessions open on the router.", len(sessions))
    fam.gauge("meshmq_router_connections", "Client connections open on the router (its sessions grouped by "
              "client address and user, as ListConnections lists them).", count_connections(sessions))
    fam.gauge("meshmq_router_producers", "Producers open on the router's sessions.",
              sum(len(s.producers) for s in sessions))
    fam.gauge("meshmq_router_consumers", "Consumers open on the router's sessions.",
              sum(len(s.consumers) for s in sessions))
    fam.gauge("meshmq_router_memory_bytes", "Bytes of messages the router holds in memory (all addresses).",
              b.memory.bytes)
    fam.gauge("meshmq_router_memory_limit_bytes", "global-max-size in bytes: past it every address applies its "
              "address-full-policy.", b.memory.global_max_size)
    for name, doc, read in _QUEUE_GAUGES + _QUEUE_COUNTERS:
        kind = fam.counter if name.endswith("_total") else fam.gauge
        for q in b.queues.values():
            kind(name, doc, read(q), address=q.address, queue=q.name)
    for name, doc, read in _NODE_TOTALS:
        kind = fam.counter if name.endswith("_total") else fam.gauge
        kind(name, doc, sum(read(q) for q in b.queues.values()))
    for a in b.addresses.values():
        fam.gauge("meshmq_address_memory_bytes", "Bytes of messages the address's queues hold in memory "
                  "(what max-size-bytes limits).", max(0, a.memory_bytes), address=a.name)
        fam.gauge("meshmq_address_memory_messages", "Messages the address's queues hold in memory "
                  "(what max-size-messages limits).", max(0, a.memory_messages), address=a.name)
        fam.counter("meshmq_address_messages_dropped_total", "Messages dropped because the address was full "
                    "(address-full-policy DROP).", a.messages_dropped, address=a.name)
        fam.counter("meshmq_address_messages_routed_total", "Messages sent to the address that reached at "
                    "least one queue (Artemis's RoutedMessageCount).", a.messages_routed, address=a.name)
        fam.counter("meshmq_address_messages_unrouted_total", "Messages sent to the address that reached no "
                    "queue (Artemis's UnRoutedMessageCount; DROP's drops included).", a.messages_unrouted,
                    address=a.name)
    _logins(node, fam)
    _bridges(node, fam)
    link_metrics([*node.cluster.links(), *node.network.links.values()], fam)
    batcher = b.batcher
    if batcher is not None:
        fam.counter("meshmq_journal_appends_total", "Group-commit appends the router's journal answered.",
                    batcher.appends)
        fam.counter("meshmq_journal_append_failures_total", "Appends the journal refused or failed to store "
                    "(each one halts the router).", batcher.failures)
        for hist in (batcher.batch_messages, batcher.commit_seconds, batcher.confirm_latency):
            fam.histogram(hist)
    ev = node.event_log
    fam.counter("meshmq_journal_events_pruned_total", "Events the event retention deleted from the journal's event "
                "log since the router started (journal.event-retention).", ev.pruned)
    fam.gauge("meshmq_journal_events_kept_from_timestamp_seconds", "Every event from this Unix time on is still "
              "in the journal's event log (0: none was ever deleted).", ev.kept_from / 1000)
    _alarms(node, fam)


def _alarms(node: RouterNode, fam: Families) -> None:
    """The memory and disk alarms (disk_usage.py) and the last disk reading."""
    memory = node.broker.memory
    fam.gauge("meshmq_router_memory_alarm", "1 while the node holds global-max-size of messages in memory (every "
              "address applies its address-full-policy).", int(memory.memory_alarm))
    fam.gauge("meshmq_router_disk_alarm", "1 while the journal's disk is used above max-disk-usage (producers "
              "blocked; FAIL addresses refuse, DROP addresses drop).", int(memory.disk_full))
    disk = memory.disk
    if disk is None:
        return
    r = disk.reading
    fam.gauge("meshmq_router_disk_max_usage_percent", "max-disk-usage: percent of the disk in use past which the "
              "node is in disk alarm (-1: no check).", disk.max_disk_usage)
    fam.gauge("meshmq_router_disk_used_percent", "Percent of the journal's disk in use at the last disk scan.",
              round(r.used_percent, 3))
    fam.gauge("meshmq_router_disk_free_bytes", "Bytes free on the journal's disk at the last disk scan.",
              r.free_bytes)
    fam.gauge("meshmq_router_disk_total_bytes", "Size of the journal's disk in bytes.", r.total_bytes)
    fam.gauge("meshmq_journal_disk_bytes", "Bytes of the journal's files on disk at the last disk scan (SQLite: "
              "the database, WAL and shared memory; 0 for PostgreSQL).", r.journal_bytes)
    fam.gauge("meshmq_router_disk_scan_timestamp_seconds", "Unix time of the last disk scan.", r.at)


def _logins(node: RouterNode, fam: Families) -> None:
    """Failed log-ins and the throttle that slows them (meshmq/security/login_throttle.py)."""
    if node.auth is None:
        return
    throttle = node.auth.throttle
    fam.counter("meshmq_router_login_failures_total", "Log-ins refused for a wrong username or password "
                "(checked in full: a password that succeeded before is not checked again).", throttle.failures)
    fam.counter("meshmq_router_logins_throttled_total", "Log-in attempts made to wait after repeated failures "
                "for their username or from their address (login-throttle).", throttle.throttled)


def _bridges(node: RouterNode, fam: Families) -> None:
    """Cluster bridges (cluster connections), by cluster connection and the
    endpoint they link to; kept as they were for the dashboards that read
    them (meshmq_link_* is the general family, every kind of link). A bridge
    to a node that left the discovery group stays, connected 0, until it
    comes back (cluster/manager.py)."""
    for bridge in node.cluster.links():
        labels = {"cluster_connection": bridge.cc_name, "endpoint": bridge.endpoint}
        fam.gauge("meshmq_bridge_connected", "1 while the bridge's link to the other node is up.",
                  int(bridge.state == CONNECTED), **labels)
        fam.counter("meshmq_bridge_messages_routed_total", "Messages routed into the bridge's "
                    "store-and-forward queue.", bridge.routed, **labels)
        fam.counter("meshmq_bridge_messages_forwarded_total", "Messages the bridge sent to the other node.",
                    bridge.forwarded, **labels)
        fam.counter("meshmq_bridge_batches_total", "ForwardBatch frames the bridge sent (messages forwarded per "
                    "batch: forwarded / batches).", bridge.batches, **labels)
        fam.counter("meshmq_bridge_messages_confirmed_total", "Forwarded messages the other node confirmed "
                    "(stored there).", bridge.confirmed, **labels)
        fam.gauge("meshmq_bridge_pending_messages", "Messages waiting in the bridge's store-and-forward "
                  "queue, or forwarded and not yet confirmed.", bridge.pending,
                  **labels)
        fam.counter("meshmq_bridge_retries_total", "Times the bridge tried to reconnect.", bridge.retries, **labels)


# (metric, help, how to read it from any link of the bridge engine)
_LINK_SERIES = (
    ("meshmq_link_connected", "1 while the link to the other node is up.",
     lambda link: int(link.state == CONNECTED)),
    ("meshmq_link_messages_routed_total", "Messages routed (or, on a network or tree link, moved by its "
     "network subscriptions) into the link's store-and-forward queue.", lambda link: link.routed),
    ("meshmq_link_messages_forwarded_total", "Messages the link sent to the other node.",
     lambda link: link.forwarded),
    ("meshmq_link_batches_total", "ForwardBatch frames the link sent (messages forwarded per batch: "
     "forwarded / batches).", lambda link: link.batches),
    ("meshmq_link_messages_confirmed_total", "Forwarded messages the other node confirmed (stored there).",
     lambda link: link.confirmed),
    ("meshmq_link_pending_messages", "Messages waiting in the link's store-and-forward queue, or forwarded "
     "and not yet confirmed.", lambda link: link.pending),
    ("meshmq_link_retries_total", "Times the link was dialed again after it failed or broke.",
     lambda link: link.retries),
)
# Network and tree links only: the demand they carry.
_DEMAND_SERIES = (
    ("meshmq_link_demand_sent_total", "Demand updates sent to the other node (what this side's consumers, and "
     "the demand it passes on, want).", lambda link: link.demand_sent),
    ("meshmq_link_demand_received_total", "Demand updates received from the other node.",
     lambda link: link.demand_received),
    ("meshmq_link_subscriptions", "Network subscriptions held for the other node's demand.",
     lambda link: len(link.subscriptions)),
)


def link_metrics(links: Iterable, fam: Families) -> None:
    """Every link of the bridge engine — cluster bridges, network-connector and
    tree links — by `kind` (cluster, network, tree), the cluster connection or
    connector it belongs to, which end dialed it and its name on this node
    (stable across reconnects). The general family: meshmq_bridge_* stays
    as it was, for cluster bridges (dashboards read it)."""
    for link in links:
        labels = {"kind": link.kind, "connection": link.cc_name,
                  "direction": DIALED if link.dialer else ACCEPTED, "link": link.name}
        for name, doc, read in _LINK_SERIES + (() if link.kind == CLUSTER else _DEMAND_SERIES):
            kind = fam.counter if name.endswith("_total") else fam.gauge
            kind(name, doc, read(link), **labels)


def fill_passive(fam: Families) -> None:
    """A router waiting for its store (a backup, or a live not yet activated)."""
    fam.gauge("meshmq_router_active", "1 while this router serves its store (0: a backup waiting for it).", 0)
