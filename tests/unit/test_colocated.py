"""The colocated policy's pure parts (services/ha-coordinator/colocated.py) and its config keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from meshmq.config.loader import ConfigError, load_config_text
from meshmq.config.models import ColocatedSharedStore
from meshmq.v1 import cluster_pb2 as cpb
from services.ha_coordinator.colocated import (
    HOST_CONNECTOR, LIVE_CONNECTOR, REPLICATION, SHARED_STORE, backup_config, free_slot, hosting_refusal,
)

PG = "postgresql+psycopg://meshmq@db/x"
HOST = f"""
name: h
data-directory: /var/lib/meshmq
acceptors: [{{name: grpc, host: 127.0.0.1, port: 61616}}]
connectors: {{me: 127.0.0.1:61616, other: 10.0.0.2:61616}}
cluster-connections: {{cc: {{static-connectors: [other]}}}}
journal: {{url: "{PG}h"}}
ha-policy:
  shared-store:
    colocated:
      request-backup: true
      excludes: [other]
      slave: {{scale-down: {{}}}}
"""


def test_the_defaults_are_artemis_s():
    c = ColocatedSharedStore()
    assert (c.request_backup, c.backup_request_retries, c.backup_request_retry_interval, c.max_backups,
            c.backup_port_offset, c.excludes) == (False, -1, 5000, 1, 100, ())


def test_a_hosted_backup_is_the_host_renamed_moved_by_the_offset_on_the_requester_s_store():
    host = load_config_text(HOST)
    b = backup_config(host, host.colocated, 2, cpb.BackupRequest(journal_url=PG + "x"), "127.0.0.1:61616")
    assert b.name == "colocated_backup_2"
    assert b.data_directory == Path("/var/lib/meshmq/colocated_backup_2")
    assert [a.port for a in b.acceptors] == [61816]
    assert b.connectors["me"] == "127.0.0.1:61816"  # offset ...
    assert b.connectors["other"] == "10.0.0.2:61616"  # ... unless excluded (another node's)
    assert b.journal.url == PG + "x" and b.journal.address is None
    ss = b.ha_policy.shared_store
    assert ss.slave is not None and ss.master is None and ss.colocated is None
    # A scale-down that names no node goes to the host (Artemis: its in-VM connector).
    assert ss.slave.scale_down.connectors == (HOST_CONNECTOR,)
    assert b.connectors[HOST_CONNECTOR] == "127.0.0.1:61616"
    assert b.scales_down_on_activation and b.cluster_connections == host.cluster_connections


def test_a_port_0_acceptor_stays_0_in_the_backup():
    host = load_config_text(HOST.replace("port: 61616}]", "port: 0}]"))
    b = backup_config(host, host.colocated, 1, cpb.BackupRequest(journal_url=PG + "x"), "127.0.0.1:40000")
    assert [a.port for a in b.acceptors] == [0]


def _request(node_id: str = "x", kind: str = SHARED_STORE, url: str = PG, connector: str = "") -> cpb.BackupRequest:
    return cpb.BackupRequest(node_id=node_id, kind=kind, journal_url=url, connector=connector)


@pytest.mark.parametrize("hosted,kind,request_,says", [
    ([], SHARED_STORE, _request("me"), "does not back itself up"),
    ([], SHARED_STORE, _request(url="sqlite:///x.db"), "PostgreSQL"),
    ([], SHARED_STORE, _request(kind=REPLICATION), "hosts shared-store backups; the request is for a replication"),
    ([], REPLICATION, _request(kind=REPLICATION, url=""), "names no endpoint"),
    (["x"], SHARED_STORE, _request(), "already hosts a backup of that live"),
    (["y"], SHARED_STORE, _request(), "max-backups=1"),
])
def test_a_node_refuses_to_host_saying_why(hosted, kind, request_, says):
    assert says in hosting_refusal(ColocatedSharedStore(), kind, hosted, request_, "me")


def test_a_node_hosts_while_it_has_room():
    assert hosting_refusal(ColocatedSharedStore(max_backups=2), SHARED_STORE, ["y"], _request(), "me") is None
    replicating = _request(kind=REPLICATION, url="", connector="10.0.0.3:61616")
    assert hosting_refusal(ColocatedSharedStore(), REPLICATION, [], replicating, "me") is None
    assert "no colocated ha-policy" in hosting_refusal(None, SHARED_STORE, [], _request(), "me")


REPLICATING_HOST = """
name: h
data-directory: /var/lib/meshmq
acceptors: [{name: grpc, host: 127.0.0.1, port: 61616}]
connectors: {other: 10.0.0.2:61616}
cluster-connections: {cc: {static-connectors: [other]}}
ha-policy:
  replication:
    colocated:
      request-backup: true
      excludes: [other]
      slave: {vote-retries: 3, scale-down: {}}
"""


def test_a_hosted_replicating_backup_copies_the_live_that_asked_into_a_store_of_its_own():
    host = load_config_text(REPLICATING_HOST)
    b = backup_config(host, host.colocated, 1, _request(kind=REPLICATION, url="", connector="10.0.0.3:61616"),
                      "127.0.0.1:61616")
    assert b.name == "colocated_backup_1" and b.journal.url is None  # SQLite under its own data directory
    assert b.journal_file() == Path("/var/lib/meshmq/colocated_backup_1/journal.db")
    slave = b.ha_policy.replication.slave
    assert slave.vote_retries == 3 and slave.cluster_name == LIVE_CONNECTOR
    assert b.replication_lives == ["10.0.0.3:61616"]  # the one live it replicates and votes on
    assert b.cluster_connections["cc"] == host.cluster_connections["cc"]
    assert b.scales_down_on_activation and b.connectors[HOST_CONNECTOR] == "127.0.0.1:61616"
    assert host.ha_role == "replication colocated" and host.ha_policy.replication.own().master is not None


def test_backups_take_the_lowest_free_number():
    assert free_slot([], 3) == 1
    assert free_slot([1, 3], 3) == 2


@pytest.mark.parametrize("change,says", [
    ("excludes: [other]", "excludes[0]: no connector named 'nobody'"),
    ("slave: {scale-down: {}}", "scale-down.connectors[0]: no connector named 'nobody'"),
])
def test_colocated_keys_naming_unknown_connectors_are_refused(change, says):
    bad = {"excludes: [other]": "excludes: [nobody]",
           "slave: {scale-down: {}}": "slave: {scale-down: {connectors: [nobody]}}"}[change]
    with pytest.raises(ConfigError, match=says.replace("[", r"\[").replace("]", r"\]")):
        load_config_text(HOST.replace(change, bad))


def test_request_backup_needs_a_way_to_find_other_nodes():
    text = HOST.replace("cluster-connections: {cc: {static-connectors: [other]}}\n", "")
    with pytest.raises(ConfigError, match="request-backup: a live finds the nodes to ask"):
        load_config_text(text)


def test_colocated_is_one_of_the_shared_store_roles():
    with pytest.raises(ConfigError, match="exactly one of master"):
        load_config_text(HOST.replace("    colocated:\n", "    master: {}\n    colocated:\n"))
