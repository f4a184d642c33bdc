"""Network links' wire forms: demand items and a connector's policy as the
Link stream carries them (proto/meshmq/v1/cluster.proto), and the policy as
the demand decider reads it.

The connector's policy travels in the hello because it governs both ends:
the acceptor offers demand by it, and on a duplex link forwards by it too.
"""

from __future__ import annotations

from meshmq.config.destination_wildcards import DestinationFilter
from meshmq.config.network import NetworkConnector, TreeConnector
from meshmq.v1 import cluster_pb2 as cpb

from .demand import Demand, Destination, LinkPolicy


def demand_to_proto(d: Demand) -> cpb.NetworkDemand:
    return cpb.NetworkDemand(key=d.key, kind=d.destination.kind, destination=d.destination.name,
                             selector=d.selector, path=d.path, hops=d.hops, origins=sorted(d.origins),
                             attached=dict(d.attached))


def demand_from_proto(p: cpb.NetworkDemand) -> Demand:
    return Demand(key=p.key, destination=Destination(p.kind, p.destination), selector=p.selector,
                  path=tuple(p.path), hops=p.hops, origins=frozenset(p.origins),
                  attached=frozenset(p.attached.items()))


def connector_policy(nc: NetworkConnector) -> cpb.NetworkPolicy:
    """A network connector's options, as its links' hello carries them."""
    return cpb.NetworkPolicy(
        consumer_ttl=nc.consumer_ttl, message_ttl=nc.message_ttl,
        conduit_subscriptions=nc.conduit_subscriptions, dynamic_only=nc.dynamic_only,
        decrease_network_consumer_priority=nc.decrease_network_consumer_priority,
        suppress_duplicate_queue_subscriptions=nc.suppress_duplicate_queue_subscriptions,
        suppress_duplicate_topic_subscriptions=nc.suppress_duplicate_topic_subscriptions,
        bridge_temp_destinations=nc.bridge_temp_destinations, prefetch_size=nc.prefetch_size,
        replay_when_no_consumers=nc.replay_when_no_consumers,
        included_queues=nc.dynamically_included_destinations.queues,
        included_topics=nc.dynamically_included_destinations.topics,
        excluded_queues=nc.excluded_destinations.queues, excluded_topics=nc.excluded_destinations.topics,
        static_queues=nc.statically_included_destinations.queues,
        static_topics=nc.statically_included_destinations.topics,
    )


def tree_policy(tc: TreeConnector) -> cpb.NetworkPolicy:
    """A tree link's: conduit subscriptions, no TTL, every destination."""
    return cpb.NetworkPolicy(conduit_subscriptions=True, suppress_duplicate_topic_subscriptions=True,
                             bridge_temp_destinations=True, prefetch_size=tc.prefetch_size)


def link_policy(p: cpb.NetworkPolicy, *, tree: bool) -> LinkPolicy:
    """What the demand decider follows on a link with policy `p`."""
    return LinkPolicy(
        consumer_ttl=p.consumer_ttl or 1,
        conduit_subscriptions=p.conduit_subscriptions,
        dynamic_only=p.dynamic_only,
        decrease_network_consumer_priority=p.decrease_network_consumer_priority,
        suppress_duplicate_queue_subscriptions=p.suppress_duplicate_queue_subscriptions,
        suppress_duplicate_topic_subscriptions=p.suppress_duplicate_topic_subscriptions,
        bridge_temp_destinations=p.bridge_temp_destinations,
        queues=DestinationFilter(p.included_queues, p.excluded_queues),
        topics=DestinationFilter(p.included_topics, p.excluded_topics),
        static_queues=tuple(p.static_queues),
        static_topics=tuple(p.static_topics),
        tree=tree,
    )
