"""The temporary-queue deciders (services/router/temporary_queues.py): who may
consume from and who may manage a queue that belongs to a session or a
connection, and how a connection's temporary queues end with it
(services/router/client_connections.py)."""

from __future__ import annotations

from meshmq.errors import Reason
from services.router.client_connections import ClientConnections
from services.router.temporary_queues import Owner, consume_refusal, management_refusal

OWNER = Owner("s1", "admin")


def test_a_queue_without_an_owner_is_left_to_security_settings():
    assert consume_refusal("q", None, "s2", "bob", None) is None
    assert management_refusal("q", None, "bob", operator=False) is None


def test_only_the_owning_session_consumes():
    assert consume_refusal("q", OWNER, "s1", "admin", None) is None
    for session, user in (("s2", "admin"), ("s2", "bob")):
        refusal = consume_refusal("q", OWNER, session, user, None)
        assert refusal.reason is Reason.PERMISSION_DENIED
        assert f"user {user!r}" in refusal.message and "queue 'q'" in refusal.message


def test_without_security_the_refusal_names_no_user():
    refusal = consume_refusal("q", Owner("s1", ""), "s2", "", None)
    assert refusal.message.startswith("this session may not consume from queue 'q'")


def test_its_user_or_an_operator_manages_it():
    assert management_refusal("q", OWNER, "admin", operator=False) is None
    assert management_refusal("q", OWNER, "ops", operator=True) is None
    refusal = management_refusal("q", OWNER, "bob", operator=False)
    assert refusal.reason is Reason.PERMISSION_DENIED
    assert "queue 'q'" in refusal.message and "'activemq.management'" in refusal.message


def test_any_session_of_the_owning_connection_consumes_and_no_other():
    connections = ClientConnections(lambda name, conn: None)
    mine = connections.join("s1", "admin", "c1")
    assert connections.join("s2", "admin", "c1") is mine
    owner = Owner("s1", "admin", mine)
    assert consume_refusal("q", owner, "s2", "admin", mine) is None
    other = connections.join("s3", "admin", "c2")
    refusal = consume_refusal("q", owner, "s3", "admin", other)
    assert refusal.reason is Reason.PERMISSION_DENIED and "only the connection that created it" in refusal.message


def test_another_user_naming_the_same_connection_id_gets_a_connection_of_its_own():
    connections = ClientConnections(lambda name, conn: None)
    assert connections.join("s1", "alice", "c1") is not connections.join("s2", "mallory", "c1")


def test_a_connections_temporary_queues_go_with_its_last_session_here():
    deleted = []
    connections = ClientConnections(lambda name, conn: deleted.append((name, conn.connection_id)))
    conn = connections.join("s1", "", "c1")
    connections.join("s2", "", "c1")
    conn.temporary_queues.update({"t2", "t1"})
    connections.leave("s1", conn)
    assert deleted == [] and len(connections) == 1
    connections.leave("s2", conn)
    assert deleted == [("t1", "c1"), ("t2", "c1")] and len(connections) == 0
    again = connections.join("s3", "", "c1")  # the client came back (a failover to this node)
    assert again is not conn and not again.temporary_queues


def test_a_session_without_a_connection_id_is_a_connection_of_its_own():
    connections = ClientConnections(lambda name, conn: None)
    assert connections.join("s1", "", "") is not connections.join("s2", "", "")
