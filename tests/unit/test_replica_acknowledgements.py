"""When the live gives up on its backup: a write unacknowledged for the ack
timeout, counted from when that wait began — never a write sent just now
after a quiet spell (which once dropped an in-sync backup in the HA
coordinator's test, its write landing on the idle check)."""

from __future__ import annotations

import pytest

from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import replication_pb2 as rpb
from services.ha_coordinator.replication_live import _Replica


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


async def test_a_write_after_a_quiet_spell_is_not_overdue_until_it_has_waited_the_timeout(clock):
    replica = _Replica(rpb.ReplicaHello(node_name="backup"), clock)
    replica.acknowledged(0)  # the copy, then nothing for a long time
    clock.now += 60
    assert not replica.overdue(1.0)  # nothing waits
    replica.send(jpb.AppendRequest(request_id=1))
    clock.now += 0.01
    assert not replica.overdue(1.0)  # sent just now
    clock.now += 0.99
    assert replica.overdue(1.0)


async def test_each_acknowledgement_restarts_the_wait_of_what_is_left(clock):
    replica = _Replica(rpb.ReplicaHello(node_name="backup"), clock)
    first = replica.send(jpb.AppendRequest(request_id=1))
    clock.now += 0.6
    replica.send(jpb.AppendRequest(request_id=2))
    clock.now += 0.3
    replica.acknowledged(1)  # progress: the backup follows
    assert first.result() is True
    clock.now += 0.9
    assert not replica.overdue(1.0)
    clock.now += 0.1
    assert replica.overdue(1.0)
    replica.acknowledged(2)
    assert not replica.overdue(1.0)
