"""Every configuration default, in one place, named after its broker.xml key.

The reference is Artemis's ``ActiveMQDefaultConfiguration`` (broker-wide keys)
and ``AddressSettings`` (per-match keys). Where meshmq departs from Artemis, or
has a key Artemis does not, the comment says so. Times are milliseconds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

# --- broker-wide -----------------------------------------------------------

# name: the node name used in logs and topology (meshmq; Artemis has no fixed default).
NAME: Final = "meshmq"
# persistence-enabled: durable messages go to the journal; false = everything in memory.
PERSISTENCE_ENABLED: Final = True
# data-directory: where the SQLite journal and large files live (Artemis: "data").
DATA_DIRECTORY: Final = "./data"
# id-cache-size: entries in each address's duplicate-id cache.
ID_CACHE_SIZE: Final = 20000
# persist-id-cache: duplicate ids are journaled so detection survives a restart.
PERSIST_ID_CACHE: Final = True
# id-cache-max-bytes (meshmq's own): what one address's duplicate-id cache may hold, in bytes (an
# estimate: each id's characters plus 120). Past it, the cache forgets its oldest ids, so its window
# is shorter than id-cache-size; -1 = no limit. 4 MiB holds 20,000 UUID-sized ids.
ID_CACHE_MAX_BYTES: Final = 4 * 1024 * 1024
# message-expiry-scan-period: how often queues are scanned for expired messages; -1 = never.
MESSAGE_EXPIRY_SCAN_PERIOD: Final = 30000
# max-disk-usage: percent of the disk holding the journal (or data-directory) in use above which the node is in
# disk alarm: producers are blocked (FAIL addresses refuse, DROP addresses drop) until it is at or below; -1 = no
# check (Artemis's default 90).
MAX_DISK_USAGE: Final = 90
# disk-scan-period: ms between two readings of that disk (Artemis's 5000).
DISK_SCAN_PERIOD: Final = 5000
# security-enabled: require username/password (meshmq: off by default; Artemis: on).
SECURITY_ENABLED: Final = False
# cluster-user: the name a node's services present to each other (Artemis: ACTIVEMQ.CLUSTER.ADMIN.USER).
CLUSTER_USER: Final = "meshmq.cluster"
# cluster-password: None = the journal and discovery services accept any caller; required with
# security-enabled when a node uses or runs a separate journal or discovery service (Artemis ships
# "CHANGE ME!!" and warns about it; meshmq ships none).
CLUSTER_PASSWORD: Final = None
# Cluster passwords printed in examples (Artemis's default, meshmq's docs): a service configured with one
# logs a warning at every start. tests/unit/test_cluster_identity.py checks the docs against this list.
EXAMPLE_CLUSTER_PASSWORDS: Final = frozenset({"CHANGE ME!!", "change-me-cluster-secret"})
# insecure-cluster: let a process with security-enabled and a cluster-password serve its gRPC listeners
# without TLS beyond loopback (messages and membership proofs readable on the wire); logged at every start.
INSECURE_CLUSTER: Final = False

# login-throttle (meshmq's own; meshmq/security/login_throttle.py): failed log-ins per username and per
# source address. free-attempts failures cost nothing; then each attempt waits initial-delay, doubling per
# failure up to max-delay (ms). A key with no failure for forget-after (ms) starts over. max-entries bounds
# each table (usernames, addresses); the least recently failed is dropped first.
LOGIN_THROTTLE_FREE_ATTEMPTS: Final = 5
LOGIN_THROTTLE_INITIAL_DELAY: Final = 250
LOGIN_THROTTLE_MAX_DELAY: Final = 4_000
LOGIN_THROTTLE_FORGET_AFTER: Final = 300_000
LOGIN_THROTTLE_MAX_ENTRIES: Final = 10_000

# rebalance-cluster-clients: when a node joins, ask connected clients to spread their sessions over the
# cluster again (ActiveMQ's transportConnector rebalanceClusterClients; one setting per node here, since
# every acceptor pushes the same topology). Off: sessions stay where they are; new ones balance.
REBALANCE_CLUSTER_CLIENTS: Final = False

# --- acceptors (the router's gRPC server) ----------------------------------

# acceptors[].name: the name of the default acceptor.
ACCEPTOR_NAME: Final = "grpc"
# acceptors[].host: interface the acceptor binds (loopback unless asked otherwise).
ACCEPTOR_HOST: Final = "127.0.0.1"
# acceptors[].port: the Artemis default port; 0 = pick a free port.
ACCEPTOR_PORT: Final = 61616
# The node a client or the CLI reaches when no URI is given, and the port a meshmq:// URI without one means.
CLIENT_URL: Final = f"meshmq://{ACCEPTOR_HOST}:{ACCEPTOR_PORT}"
# acceptors[].ssl-enabled: serve TLS (needs cert-path and key-path).
SSL_ENABLED: Final = False
# acceptors[].need-client-auth: require a client certificate signed by trust-path.
NEED_CLIENT_AUTH: Final = False

# --- clients (the SDK's URI options, meshmq/client/options.py; Artemis connector names) --
# consumerWindowSize: bytes of messages the router may push ahead of consumption (per consumer);
# -1 = unbounded; 0 = no buffering: the router sends a message when receive() asks for one.
CLIENT_CONSUMER_WINDOW_SIZE: Final = 1024 * 1024
# confirmationWindowSize: bytes of sent-but-unconfirmed messages a producer keeps in flight before
# send waits; -1 = no limit. 512 KiB covers the commit pipeline (throughput x commit time); a larger
# window only queues more behind it: on the reference machine 1 MiB gave the same durable msg/s at
# twice the confirm latency (docs/performance.md).
CLIENT_CONFIRMATION_WINDOW_SIZE: Final = 512 * 1024
# producerWindowSize: bytes a producer may send before the router grants more (Artemis's producer
# credits): what an address with address-full-policy BLOCK holds back while it is full; -1 = no limit.
# A producer waits while unconfirmed bytes reach the smaller of this and confirmationWindowSize.
CLIENT_PRODUCER_WINDOW_SIZE: Final = 1024 * 1024
# minLargeMessageSize: bodies larger than this travel as a large message, in chunks of this size.
CLIENT_MIN_LARGE_MESSAGE_SIZE: Final = 100 * 1024
# producerMaxBatch (meshmq's own): most messages a producer puts in one SendBatch frame.
CLIENT_PRODUCER_MAX_BATCH: Final = 1000
# callTimeout: ms a blocking call (connect, create, commit) waits for its answer.
CLIENT_CALL_TIMEOUT: Final = 30000
# connectionLoadBalancingPolicyClassName: which node each new session goes to (meshmq/client/loadbalance.py).
CLIENT_LOAD_BALANCING_POLICY: Final = "RoundRobin"
# useTopologyForLoadBalancing: balance over the cluster topology the connected node reports (only its
# verified part gets the password: meshmq/client/trust.py); false = over the URI's list only.
CLIENT_USE_TOPOLOGY_FOR_LOAD_BALANCING: Final = True
# initialConnectAttempts: rounds of attempts to reach a server at first contact; -1 = forever.
CLIENT_INITIAL_CONNECT_ATTEMPTS: Final = 1
# retryInterval, retryIntervalMultiplier, maxRetryInterval: the backoff between attempts (ms), at first
# contact and in failover.
CLIENT_RETRY_INTERVAL: Final = 2000
CLIENT_RETRY_INTERVAL_MULTIPLIER: Final = 1.0
CLIENT_MAX_RETRY_INTERVAL: Final = 2000
# reconnectAttempts: rounds of attempts to move a failed session to the node serving its store
# (docs/client-failover.md); 0 = none (the application gets the failure), -1 = forever.
CLIENT_RECONNECT_ATTEMPTS: Final = 0
# failoverOnInitialConnection: accepted for Artemis compatibility (the first contact always tries every
# listed server in turn and follows a passive backup's pointer to the node it backs up).
CLIENT_FAILOVER_ON_INITIAL_CONNECTION: Final = False
# clientFailureCheckPeriod, connectionTTL: a connection that hears nothing is pinged after
# clientFailureCheckPeriod ms and declared failed within min(connectionTTL, 2 x clientFailureCheckPeriod)
# of silence (a killed process is noticed at once, from the closed socket); -1 = never pinged.
CLIENT_FAILURE_CHECK_PERIOD: Final = 30000
CLIENT_CONNECTION_TTL: Final = 60000
# callFailoverTimeout: longest a call made while its session fails over waits for the failover to
# finish before raising UnblockedError; -1 = as long as the failover takes.
CLIENT_CALL_FAILOVER_TIMEOUT: Final = 30000
# A discovery URI's initialWaitTimeout and refreshTimeout default to INITIAL_WAIT_TIMEOUT and
# REFRESH_TIMEOUT (discovery-groups, below), as in Artemis.
# ActiveMQ's failover: transport options with ActiveMQ's defaults, as the URI spells them
# (meshmq/client/uri.py maps them onto the options above).
FAILOVER_TRANSPORT_DEFAULTS: Final = {
    "randomize": "true",
    "maxReconnectAttempts": "-1",
    "startupMaxReconnectAttempts": "-1",
    "initialReconnectDelay": "10",
    "maxReconnectDelay": "30000",
    "useExponentialBackOff": "true",
    "reconnectDelayExponent": "2.0",
    "timeout": "-1",
    "backup": "false",
    "updateClusterClients": "false",
}

# --- journal (meshmq's journal service) ------------------------------------

# journal.url: SQLAlchemy URL; None = sqlite file JOURNAL_SQLITE_FILE under data-directory.
JOURNAL_URL: Final = None
# journal.url default file name inside data-directory.
JOURNAL_SQLITE_FILE: Final = "journal.db"
# journal.address: host:port of a remote journal; None = hosted in the router process.
JOURNAL_ADDRESS: Final = None
# journal.sync: a commit reaches disk (fsync, SQLite synchronous=FULL) before it is confirmed.
JOURNAL_SYNC: Final = True
# journal.max-batch-records: upper bound of records in one group-commit SQL transaction.
JOURNAL_MAX_BATCH_RECORDS: Final = 5000
# journal.listen.host: interface `meshmq serve journal` binds.
JOURNAL_LISTEN_HOST: Final = "127.0.0.1"
# journal.listen.port: the journal service's port.
JOURNAL_LISTEN_PORT: Final = 61626
# journal.ssl-enabled: the router talks TLS to a remote journal.
JOURNAL_SSL_ENABLED: Final = False
# journal.event-log-enabled: write the event log analytics reads (ENQUEUED, ACKNOWLEDGED, ...).
JOURNAL_EVENT_LOG_ENABLED: Final = True
# journal.event-retention: ms the event log (analytics) keeps an event; -1 = for ever.
# A week: a weekly report's worth, while the log stays bounded (2 rows per message).
JOURNAL_EVENT_RETENTION: Final = 7 * 24 * 3600 * 1000
# journal.event-retention-scan-period: ms between two looks for events past retention.
JOURNAL_EVENT_RETENTION_SCAN_PERIOD: Final = 60_000
# journal.jdbc-lock-renew-period: how often the live renews its lease on a shared store (ms; Artemis).
JDBC_LOCK_RENEW_PERIOD: Final = 2000
# journal.jdbc-lock-expiration: how long a lease lasts unrenewed before a backup may take the store (ms; Artemis).
JDBC_LOCK_EXPIRATION: Final = 20000

# --- grouping-handler (Artemis GroupingHandlerConfiguration, clustered grouping) ---

# grouping-handler.timeout: ms a REMOTE handler waits for the LOCAL one's decision before the send fails.
GROUPING_HANDLER_TIMEOUT: Final = 5000
# grouping-handler.group-timeout: ms a group may go unused before it is forgotten (-1: never).
GROUPING_HANDLER_GROUP_TIMEOUT: Final = -1
# grouping-handler.reaper-period: ms between the LOCAL handler's scans for unused groups.
GROUPING_HANDLER_REAPER_PERIOD: Final = 30000

# --- discovery (broadcast-groups, discovery-groups, the discovery service) ---

# broadcast-groups.*.broadcast-period: ms between keep-alives of the node's etcd lease (Artemis default).
BROADCAST_PERIOD: Final = 2000
# discovery-groups.*.refresh-timeout: the lease TTL, ms after the last keep-alive a node vanishes (Artemis default).
REFRESH_TIMEOUT: Final = 10000
# discovery-groups.*.initial-wait-timeout: ms to wait for the first topology, or for etcd at start (Artemis initialWaitTimeout).
INITIAL_WAIT_TIMEOUT: Final = 10000
# discovery-groups.*.cluster-name: nodes see each other when they share it (meshmq; the etcd key namespace).
CLUSTER_NAME: Final = "meshmq"
# discovery-groups.*.etcd.endpoints: etcd's own default client URL.
ETCD_ENDPOINT: Final = "127.0.0.1:2379"
# discovery-groups.*.etcd.key-prefix: announcements live under <key-prefix>/<cluster-name>/nodes/.
ETCD_KEY_PREFIX: Final = "/meshmq"
# etcd's smallest lease TTL with its default --election-timeout; a smaller refresh-timeout is refused.
ETCD_MIN_REFRESH_TIMEOUT: Final = 2000
# discovery.listen.host: interface `meshmq serve discovery` binds.
DISCOVERY_LISTEN_HOST: Final = "127.0.0.1"
# discovery.listen.port: the discovery service's port.
DISCOVERY_LISTEN_PORT: Final = 61636

# --- the HA coordinator (`meshmq serve ha-coordinator`) ----------------------

# ha-coordinator.listen: where the HA coordinator service listens (61646).
HA_COORDINATOR_LISTEN_HOST: Final = "127.0.0.1"
HA_COORDINATOR_LISTEN_PORT: Final = 61646

# --- the admin gateway (`meshmq serve gateway`) -----------------------------

# gateway.enabled: host the gateway inside the router's process (the starter config of `meshmq up` sets it).
GATEWAY_ENABLED: Final = False
# gateway.listen: where the REST API and web console answer (8161, Artemis's console port).
GATEWAY_LISTEN_HOST: Final = "127.0.0.1"
GATEWAY_LISTEN_PORT: Final = 8161
# gateway.session-timeout: a console log-in or API token lasts this long after its last use (ms).
GATEWAY_SESSION_TIMEOUT: Final = 1_800_000
# gateway.call-timeout: how long the gateway waits for one router's management call (ms); a router
# slower than this is shown as down for that page, it does not hold the page.
GATEWAY_CALL_TIMEOUT: Final = 5_000
# gateway.keep-alive-timeout: how long an idle HTTP connection stays open (ms). Longer than the
# idle expiry of common client pools (httpx 5 s, Node's default agent 5 s, aiohttp 15 s, Go's
# net/http 90 s), so the client closes an idle connection first: a server closing it as the client
# reuses it fails the client's request with "disconnected without a response" (uvicorn's own
# default is 5 s).
GATEWAY_KEEP_ALIVE_TIMEOUT: Final = 75_000
# gateway.max-body-size: the largest request body a logged-in caller may send (bytes); a bigger one is
# refused with 413 before it is read. The API's bodies are small (a queue to create, a selector of at
# most 4 KiB), so 1 MiB leaves room and still bounds what one request can make the gateway hold.
GATEWAY_MAX_BODY_SIZE: Final = 1024 * 1024
# gateway.max-anonymous-body-size: the same before log-in; the log-in itself is a name and a password.
GATEWAY_MAX_ANONYMOUS_BODY_SIZE: Final = 16 * 1024
# gateway.dev-mode: accept well-known default credentials (and, with no users configured, the built-in
# admin/admin); never on a machine others can reach.
GATEWAY_DEV_MODE: Final = False
# gateway.history-interval: how often the gateway samples the routers' counters for the rates and charts (ms).
GATEWAY_HISTORY_INTERVAL: Final = 5_000
# gateway.history-length: how far back the rates' history goes (ms): the last hour, 720 samples at 5 s.
GATEWAY_HISTORY_LENGTH: Final = 3_600_000

# --- metrics (every service's Prometheus endpoint, docs/metrics.md) --------

# metrics.enabled: serve GET /metrics over HTTP (meshmq's own; off: nothing listens).
METRICS_ENABLED: Final = False
# metrics.host: interface the metrics endpoint binds (loopback unless asked otherwise).
METRICS_HOST: Final = "127.0.0.1"
# metrics.port: 0 = pick a free port at start (shown in the log line and the ready file); set a
# fixed one for a Prometheus scrape config. One port per process: each service has its own config.
METRICS_PORT: Final = 0

# --- addresses -------------------------------------------------------------

# addresses.<name>.<routing-type>[].durable: queues survive a restart.
QUEUE_DURABLE: Final = True
# addresses.<name>.<routing-type>[].last-value-key, last-value, non-destructive, exclusive: None = the address
# settings' default-last-value-key, default-last-value-queue, default-non-destructive, default-exclusive-queue.
# addresses.<name>.<routing-type>[].group-rebalance, group-rebalance-pause-dispatch, group-buckets,
# group-first-key: None = the address settings' default-group-*.

# --- wildcard-addresses (Artemis WildcardConfiguration) ---------------------

# routing-enabled: a queue on an address with wildcards (news.#) gets what is sent to every
# matching address; false: such a name is a literal address.
WILDCARD_ROUTING_ENABLED: Final = True
# delimiter: separates the words of an address.
WILDCARD_DELIMITER: Final = "."
# any-words: a word matching zero or more words.
WILDCARD_ANY_WORDS: Final = "#"
# single-word: a word matching exactly one word.
WILDCARD_SINGLE_WORD: Final = "*"

# --- address-settings (per match; Artemis AddressSettings defaults) --------

# dead-letter-address: where messages go after max-delivery-attempts; None = dropped.
DEAD_LETTER_ADDRESS: Final = None
# expiry-address: where expired messages go; None = dropped.
EXPIRY_ADDRESS: Final = None
# expiry-delay: expiration given to messages sent without one; -1 = leave them without.
EXPIRY_DELAY: Final = -1
# max-delivery-attempts: deliveries before a message goes to the dead-letter address; -1 = infinite.
MAX_DELIVERY_ATTEMPTS: Final = 10
# redelivery-delay: wait before redelivering a rolled-back message.
REDELIVERY_DELAY: Final = 0
# redelivery-delay-multiplier: each further redelivery waits this many times longer than the one before.
REDELIVERY_DELAY_MULTIPLIER: Final = 1.0
# max-redelivery-delay: the longest a redelivery waits, however often it failed; None = redelivery-delay x 10.
MAX_REDELIVERY_DELAY: Final = None
MAX_REDELIVERY_DELAY_FACTOR: Final = 10
# redelivery-collision-avoidance-factor: spread each redelivery delay at random by up to this fraction (0..1) either
# way, so that messages rolled back together are not redelivered together.
REDELIVERY_COLLISION_AVOIDANCE_FACTOR: Final = 0.0
# redistribution-delay: wait after a queue's messages are left without a local taker (its last consumer left,
# a consumer appeared elsewhere) before redistributing; -1 = never.
REDISTRIBUTION_DELAY: Final = -1
# auto-create-queues: a queue is created when a client sends or subscribes to it.
AUTO_CREATE_QUEUES: Final = True
# auto-create-addresses: an address is created when a client sends or subscribes to it.
AUTO_CREATE_ADDRESSES: Final = True
# auto-delete-queues: an auto-created queue is deleted once it has no consumers and no messages.
AUTO_DELETE_QUEUES: Final = True
# auto-delete-queues-delay: ms an auto-created queue must have been without consumers before it is deleted.
AUTO_DELETE_QUEUES_DELAY: Final = 0
# auto-delete-queues-message-count: an auto-created queue is deleted only if it holds at most this many messages
# (they go with it); -1 = whatever it holds.
AUTO_DELETE_QUEUES_MESSAGE_COUNT: Final = 0
# auto-delete-addresses: an auto-created address is deleted once it has no queues.
AUTO_DELETE_ADDRESSES: Final = True
# auto-delete-addresses-delay: ms an auto-created address must have been without queues before it is deleted.
AUTO_DELETE_ADDRESSES_DELAY: Final = 0
# address-queue-scan-period: ms; an auto-created address a message found without queues (it was
# routed nowhere) is deleted after at most this long unless a queue comes (Artemis's reaper period);
# -1 = such addresses are kept.
ADDRESS_QUEUE_SCAN_PERIOD: Final = 30_000
# default-address-routing-type: routing type of auto-created addresses.
DEFAULT_ADDRESS_ROUTING_TYPE: Final = "MULTICAST"
# default-queue-routing-type: routing type of auto-created queues.
DEFAULT_QUEUE_ROUTING_TYPE: Final = "MULTICAST"
# send-to-dla-on-no-route: a message that matches no queue goes to the dead-letter address.
SEND_TO_DLA_ON_NO_ROUTE: Final = False
# default-last-value-key: the last-value-key of queues created without one (auto-created ones too); None = not
# last-value queues.
DEFAULT_LAST_VALUE_KEY: Final = None
# default-last-value-queue: Artemis's legacy flag: true = default-last-value-key _AMQ_LVQ_NAME.
DEFAULT_LAST_VALUE_QUEUE: Final = False
# default-non-destructive: queues created without saying are non-destructive (consumers read without removing).
DEFAULT_NON_DESTRUCTIVE: Final = False
# default-exclusive-queue: queues created without saying are exclusive (one consumer at a time receives).
DEFAULT_EXCLUSIVE_QUEUE: Final = False
# default-group-rebalance: a consumer joining a queue resets its message groups, so they spread again.
DEFAULT_GROUP_REBALANCE: Final = False
# default-group-rebalance-pause-dispatch: while rebalancing, dispatch nothing until the in-flight messages are settled.
DEFAULT_GROUP_REBALANCE_PAUSE_DISPATCH: Final = False
# default-group-buckets: -1 = every group id tracked; 0 = no grouping; N = ids hashed into N buckets.
DEFAULT_GROUP_BUCKETS: Final = -1
# default-group-first-key: the property set true on the first message of a group a consumer is given; None = none.
DEFAULT_GROUP_FIRST_KEY: Final = None
# id-cache-size (per match): None = the broker-wide id-cache-size.
ADDRESS_ID_CACHE_SIZE: Final = None
# max-size-bytes: bytes of messages an address holds in memory before address-full-policy applies; -1 = no limit
# of its own (global-max-size still applies).
MAX_SIZE_BYTES: Final = -1
# max-size-messages: the same in messages; -1 = no limit.
MAX_SIZE_MESSAGES: Final = -1
# page-size-bytes: how much of a queue's paged messages is read back at a time.
PAGE_SIZE_BYTES: Final = 10 * 1024 * 1024
# address-full-policy: PAGE (store, read back in order as the queue drains), BLOCK (hold producers' sends
# until the address has room), FAIL (refuse the send with ADDRESS_FULL) or DROP (drop and count).
ADDRESS_FULL_POLICY: Final = "PAGE"
# slow-consumer-threshold: messages per second a consumer acknowledges below which it is slow (while its queue
# has messages for it); -1 = no check.
SLOW_CONSUMER_THRESHOLD: Final = -1
# slow-consumer-policy: KILL (close the consumer, its session told why) or NOTIFY (log and count it).
SLOW_CONSUMER_POLICY: Final = "NOTIFY"
# slow-consumer-check-period: seconds between two measures of each consumer's rate.
SLOW_CONSUMER_CHECK_PERIOD: Final = 5

# global-max-size: bytes of messages the whole node holds in memory before every address pages (or applies
# its address-full-policy), counted as the router counts them (each message's encoded size plus what holding
# it costs, services/router/paging.py). -1 = half of the machine's memory (Artemis's -1 is half the JVM heap).
# None (the key left out) = default_global_max_size(): the smaller of GLOBAL_MAX_SIZE_CAP and
# 1/GLOBAL_MAX_SIZE_SHARE of the memory the process may use (below), so a node pages before a deep queue
# exhausts its memory. Why these two numbers: docs/broker.md, "Memory bounded by default".
GLOBAL_MAX_SIZE: Final = None
# Artemis: a JVM's default heap is a quarter of the (container's) memory and global-max-size half of that.
GLOBAL_MAX_SIZE_SHARE: Final = 8
# At ~2 KB a 1 KB message, 100 MiB holds ~50,000 messages (about a second of durable sends) in a process
# that starts at ~100 MB: a router under 300 MB RSS however deep its queues (bench/memory.py).
GLOBAL_MAX_SIZE_CAP: Final = 100 * 1024 * 1024
# Environment variable naming the memory (bytes, or with K, M, G) the process may use, in place of its cgroup's
# limit or the machine's memory (as the JVM's -XX:MaxRAM): what the default global-max-size is a share of.
MEMORY_LIMIT_ENV: Final = "MESHMQ_MEMORY_LIMIT"
# producerWindowSize (Artemis's default): bytes a producer may send before the router grants more.
PRODUCER_WINDOW_SIZE: Final = 1024 * 1024
# The largest consumerWindowSize or producerWindowSize a client may ask for (Artemis's are Java ints);
# -1 (no limit) and 0 have their own meanings, anything else below is refused.
MAX_WINDOW_SIZE: Final = 2**31 - 1

# --- development template (`meshmq up`, like `artemis create`) -------------

# Dead-letter address and queue of the dev template.
DEV_DEAD_LETTER_ADDRESS: Final = "DLQ"
# Expiry address and queue of the dev template.
DEV_EXPIRY_ADDRESS: Final = "ExpiryQueue"


# --- ha-policy (Artemis HAPolicy defaults) ------------------------------------

# shared-store master/slave failover-on-shutdown: a normal stop of the active node lets a backup take over.
HA_FAILOVER_ON_SHUTDOWN: Final = False
# shared-store master wait-for-activation: start-up (the ready file) waits until the node is active.
HA_WAIT_FOR_ACTIVATION: Final = True
# shared-store slave allow-failback: an active backup stops when its live asks for the store back.
HA_ALLOW_FAILBACK: Final = True
# slave restart-backup: a backup stopped by failback goes back to waiting as a backup.
HA_RESTART_BACKUP: Final = True
# ha-policy.shared-store.colocated (Artemis's colocated policy): whether this live asks another live to
# host a backup of it, how many times (-1 = without end) and how often (ms); how many backups this node
# hosts for others; how far each hosted backup's acceptor and connector ports sit from this node's
# (the n-th backup: n * offset).
HA_COLOCATED_REQUEST_BACKUP: Final = False
HA_COLOCATED_BACKUP_REQUEST_RETRIES: Final = -1
HA_COLOCATED_BACKUP_REQUEST_RETRY_INTERVAL: Final = 5000
HA_COLOCATED_MAX_BACKUPS: Final = 1
HA_COLOCATED_BACKUP_PORT_OFFSET: Final = 100
# replication initial-replication-sync-timeout: the longest the live holds its writes while a backup's copy is made (ms).
HA_INITIAL_REPLICATION_SYNC_TIMEOUT: Final = 30000
# replication backup max-saved-replicated-journals-size: former replicas kept (oldreplica.N) when a backup syncs again.
HA_MAX_SAVED_REPLICATED_JOURNALS_SIZE: Final = 2
# replication backup allow-failback (pluggable quorum, Artemis's default false): step down for the primary's failback.
HA_REPLICATION_ALLOW_FAILBACK: Final = False
# Classic replication (master/slave) quorum votes, Artemis's defaults:
# check-for-live-server: a restarting master first looks for a backup serving its node id (failback).
HA_CHECK_FOR_LIVE_SERVER: Final = False
# vote-on-replication-failure: a master that loses its backup asks the cluster's lives whether to stay live.
HA_VOTE_ON_REPLICATION_FAILURE: Final = False
# quorum-size: the lives a vote counts (-1: the cluster's lives as the topology knows them, backups never counted).
HA_QUORUM_SIZE: Final = -1
# vote-retries / vote-retry-wait: vote rounds after the live is lost, and the wait between them (ms).
HA_VOTE_RETRIES: Final = 12
HA_VOTE_RETRY_WAIT: Final = 5000
# quorum-vote-wait: how long a round waits for the lives' answers (seconds, as in Artemis).
HA_QUORUM_VOTE_WAIT: Final = 30
# slave allow-failback for classic replication (stop when the original live asks for its place back).
HA_CLASSIC_ALLOW_FAILBACK: Final = True
# manager properties (Artemis's Curator names; the provider here is etcd):
# session-ms: the live's etcd lease (ms): how long after the live goes silent its backup may take over.
HA_MANAGER_SESSION_MS: Final = 18000
# session-percent: the lease is renewed every session-ms * session-percent / 100.
HA_MANAGER_SESSION_PERCENT: Final = 33
# connection-ms: how long a call to etcd may take (ms).
HA_MANAGER_CONNECTION_MS: Final = 8000
# retries / retries-ms: attempts of a failed etcd call, and the wait between them (ms).
HA_MANAGER_RETRIES: Final = 1
HA_MANAGER_RETRIES_MS: Final = 1000
# namespace: the etcd key prefix of the coordination keys.
HA_MANAGER_NAMESPACE: Final = "meshmq-ha"

# --- cluster-connections (Artemis ClusterConnectionConfiguration defaults) ---

# address: the addresses a cluster connection balances (prefix match; "" = all).
CC_ADDRESS: Final = ""
# check-period: how often a link checks that the other node still answers (ms).
CC_CHECK_PERIOD: Final = 30000
# connection-ttl: how long a link lives with nothing heard from the other node (ms).
CC_CONNECTION_TTL: Final = 60000
# min-large-message-size: bigger messages cross a link in chunks (bytes).
CC_MIN_LARGE_MESSAGE_SIZE: Final = 102400
# call-timeout: how long a link waits for an answer (hello, confirm) before it resets (ms).
CC_CALL_TIMEOUT: Final = 30000
# retry-interval: wait before reconnecting a link (ms).
CC_RETRY_INTERVAL: Final = 500
# retry-interval-multiplier: each further retry waits this many times longer.
CC_RETRY_INTERVAL_MULTIPLIER: Final = 1.0
# max-retry-interval: the longest wait between retries (ms).
CC_MAX_RETRY_INTERVAL: Final = 2000
# initial-connect-attempts: tries before a node never reached is considered down; -1 = forever.
CC_INITIAL_CONNECT_ATTEMPTS: Final = -1
# reconnect-attempts: tries after a link broke before its node is considered down; -1 = forever.
CC_RECONNECT_ATTEMPTS: Final = -1
# use-duplicate-detection: each forwarded message carries a duplicate id the target checks.
CC_USE_DUPLICATE_DETECTION: Final = True
# message-load-balancing: OFF, STRICT, ON_DEMAND or OFF_WITH_REDISTRIBUTION.
CC_MESSAGE_LOAD_BALANCING: Final = "ON_DEMAND"
# max-hops: how far away (in links) a queue may be for messages to be balanced to it.
CC_MAX_HOPS: Final = 1
# confirmation-window-size: bytes forwarded and not yet confirmed, per link; -1 = no window.
CC_CONFIRMATION_WINDOW_SIZE: Final = 1048576
# producer-window-size: producer flow control on a link; -1 = off (Artemis's default for bridges).
CC_PRODUCER_WINDOW_SIZE: Final = -1
# call-failover-timeout: call-timeout during a failover; -1 = no timeout.
CC_CALL_FAILOVER_TIMEOUT: Final = -1
# notification-interval: how often a joining node announces itself (ms).
CC_NOTIFICATION_INTERVAL: Final = 1000
# notification-attempts: how many times a joining node announces itself.
CC_NOTIFICATION_ATTEMPTS: Final = 2
# allow-direct-connections-only: link only to the static-connectors, never to nodes learned from them.
CC_ALLOW_DIRECT_CONNECTIONS_ONLY: Final = False


# --- network-connectors (ActiveMQ's NetworkConnector defaults, its attribute names) ---

# duplex: messages flow both ways over the one connection (default: from the defining broker only).
NC_DUPLEX: Final = False
# networkTTL: how many brokers a message and a demand may cross; messageTTL and consumerTTL default to it.
NC_NETWORK_TTL: Final = 1
# conduitSubscriptions: a destination's remote consumers fold into one network subscription.
NC_CONDUIT_SUBSCRIPTIONS: Final = True
# dynamicOnly: forward only with demand, even for statically included destinations.
NC_DYNAMIC_ONLY: Final = False
# decreaseNetworkConsumerPriority: network consumers rank below local ones, lower per hop.
NC_DECREASE_NETWORK_CONSUMER_PRIORITY: Final = False
NC_SUPPRESS_DUPLICATE_QUEUE_SUBSCRIPTIONS: Final = False
NC_SUPPRESS_DUPLICATE_TOPIC_SUBSCRIPTIONS: Final = True
# prefetchSize: messages in flight over the link before the remote acknowledges (credit).
NC_PREFETCH_SIZE: Final = 1000
# bridgeTempDestinations: temporary destinations (request/reply) cross the link.
NC_BRIDGE_TEMP_DESTINATIONS: Final = True
# replayWhenNoConsumers (ActiveMQ's conditional network bridge filter): send a message back whose demand left.
NC_REPLAY_WHEN_NO_CONSUMERS: Final = False

# --- tree-connector (AMQ-2875) -----------------------------------------------

# prefetch-size: messages in flight over the link to the parent before it acknowledges.
TC_PREFETCH_SIZE: Final = NC_PREFETCH_SIZE

# --- computed defaults ---------------------------------------------------------

# A cgroup memory limit at or past this is "no limit" (cgroup v1 writes 2**63 rounded down to a page).
_NO_CGROUP_LIMIT = 1 << 60
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_memory_size(text: str) -> int:
    """Bytes from "536870912", "512M", "4G" (powers of 1024); ValueError otherwise."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = (t[:-1], t[-1]) if t[-1:] in ("K", "M", "G") else (t, "")
    if not number.isdigit():
        raise ValueError(f"{text!r} is not a size: a number of bytes, optionally with K, M or G (e.g. 512M)")
    return int(number) * _UNITS[unit]


def _read_limit(path: Path) -> int | None:
    """A cgroup memory limit file's value; None when absent, unreadable or unlimited ("max")."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text.isdigit():  # "max" (v2)
        return None
    value = int(text)
    return value if value < _NO_CGROUP_LIMIT else None


def _up_to_root(root: Path, group: str, name: str) -> list[Path]:
    """`name` in cgroup `group` under `root` and in each of its ancestors (a parent's limit applies too)."""
    parts = [p for p in group.split("/") if p]
    return [root.joinpath(*parts[:i], name) for i in range(len(parts), -1, -1)]


def cgroup_memory_limit(proc_self_cgroup: str, cgroup_root: Path) -> int | None:
    """The lowest memory limit over the process's cgroups and their ancestors (pure but for reading files).

    `proc_self_cgroup` is the text of /proc/self/cgroup; `cgroup_root` where the
    hierarchies are mounted (/sys/fs/cgroup). cgroup v2 (the "0::" line): the
    group's memory.max under the root; v1: memory.limit_in_bytes under the
    root's memory/ controller. Inside a container the group's path is often not
    mounted: the controller's own root then holds the container's limit.
    None: no limit found.
    """
    limits: list[int] = []
    for line in proc_self_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, group = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            files = _up_to_root(cgroup_root, group, "memory.max")
        elif "memory" in controllers.split(","):
            files = _up_to_root(cgroup_root / "memory", group, "memory.limit_in_bytes")
        else:
            continue
        limits.extend(v for v in map(_read_limit, files) if v is not None)
    return min(limits) if limits else None


def physical_memory() -> int:
    """The machine's memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@dataclass(frozen=True)
class MemoryLimit:
    """The memory the process may use, and where that figure came from (for the log and the docs)."""

    bytes: int
    source: str  # "MESHMQ_MEMORY_LIMIT", "cgroup limit" or "physical memory"


def process_memory_limit(
    environ: Mapping[str, str] = os.environ,
    proc_self_cgroup: Path = Path("/proc/self/cgroup"),
    cgroup_root: Path = Path("/sys/fs/cgroup"),
    physical: int | None = None,
) -> MemoryLimit:
    """MESHMQ_MEMORY_LIMIT if set, else the smaller of the cgroup limit and the machine's memory."""
    override = environ.get(MEMORY_LIMIT_ENV, "").strip()
    if override:
        try:
            return MemoryLimit(parse_memory_size(override), MEMORY_LIMIT_ENV)
        except ValueError as exc:
            raise ValueError(f"{MEMORY_LIMIT_ENV}: {exc}") from None
    physical = physical_memory() if physical is None else physical
    try:
        cgroup = cgroup_memory_limit(proc_self_cgroup.read_text(), cgroup_root)
    except OSError:
        cgroup = None
    if cgroup is not None and cgroup < physical:
        return MemoryLimit(cgroup, "cgroup limit")
    return MemoryLimit(physical, "physical memory")


def default_global_max_size(memory: int) -> int:
    """global-max-size when the key is left out, for a process that may use `memory` bytes (pure)."""
    return min(GLOBAL_MAX_SIZE_CAP, memory // GLOBAL_MAX_SIZE_SHARE)


@dataclass(frozen=True)
class GlobalMaxSize:
    """global-max-size in force: bytes, and why (a sentence for the start-up log)."""

    bytes: int
    why: str


def effective_global_max_size(configured: int | None, memory: MemoryLimit | None = None) -> GlobalMaxSize:
    """What a configured global-max-size means in bytes: a size is itself; -1 is half of the machine's
    memory (as documented since the key existed); None (left out) is default_global_max_size."""
    if configured is not None and configured >= 0:
        return GlobalMaxSize(configured, "configured")
    if configured == -1:
        return GlobalMaxSize(physical_memory() // 2, "-1: half of the machine's memory")
    memory = memory or process_memory_limit()
    value = default_global_max_size(memory.bytes)
    mib = 1024 * 1024
    return GlobalMaxSize(
        value,
        f"not set: the smaller of {GLOBAL_MAX_SIZE_CAP // mib} MiB and 1/{GLOBAL_MAX_SIZE_SHARE} of "
        f"{memory.bytes // mib} MiB ({memory.source})",
    )

# The session protocol (docs/protocol.md section 14): what this release speaks, and the oldest
# client protocol a router accepts by default (min-client-protocol-version). Protocol 1 is every
# client from before versions (it sends none); 2 is the first that says its version; 3 adds
# connection ids and a connection's temporary queues; 4 an answered CloseConsumer (a blocking close).
PROTOCOL_VERSION = 4
MIN_CLIENT_PROTOCOL_VERSION = 1
