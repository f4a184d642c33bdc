"""The temporary-queue deciders (services/router/temporary_queues.py): who may
consume from and who may manage a queue that belongs to a session."""

from __future__ import annotations

from meshmq.errors import Reason
from services.router.temporary_queues import Owner, consume_refusal, management_refusal

OWNER = Owner("s1", "admin")


def test_a_queue_without_an_owner_is_left_to_security_settings():
    assert consume_refusal("q", None, "s2", "bob") is None
    assert management_refusal("q", None, "bob", operator=False) is None


def test_only_the_owning_session_consumes():
    assert consume_refusal("q", OWNER, "s1", "admin") is None
    for session, user in (("s2", "admin"), ("s2", "bob")):
        refusal = consume_refusal("q", OWNER, session, user)
        assert refusal.reason is Reason.PERMISSION_DENIED
        assert f"user {user!r}" in refusal.message and "queue 'q'" in refusal.message


def test_without_security_the_refusal_names_no_user():
    refusal = consume_refusal("q", Owner("s1", ""), "s2", "")
    assert refusal.message.startswith("this session may not consume from queue 'q'")


def test_its_user_or_an_operator_manages_it():
    assert management_refusal("q", OWNER, "admin", operator=False) is None
    assert management_refusal("q", OWNER, "ops", operator=True) is None
    refusal = management_refusal("q", OWNER, "bob", operator=False)
    assert refusal.reason is Reason.PERMISSION_DENIED
    assert "queue 'q'" in refusal.message and "'activemq.management'" in refusal.message
