import random

import pytest

from meshmq.client.loadbalance import FirstElement, Random, RandomSticky, RoundRobin, policy_from_name
from meshmq.errors import InvalidRequestError


def test_round_robin_starts_at_random_then_goes_in_order():
    starts = set()
    for seed in range(40):
        p = RoundRobin(random.Random(seed))
        seq = [p.select(4) for _ in range(9)]
        first = seq[0]
        starts.add(first)
        assert seq == [(first + i) % 4 for i in range(9)]
    assert starts == {0, 1, 2, 3}  # the first node is random


def test_random_sticky_and_first_element():
    p = RandomSticky(random.Random(7))
    first = p.select(5)
    assert all(p.select(5) == first for _ in range(20))
    assert all(FirstElement().select(3) == 0 for _ in range(5))
    r = Random(random.Random(1))
    picks = [r.select(3) for _ in range(300)]
    assert set(picks) == {0, 1, 2} and all(60 < picks.count(i) < 140 for i in range(3))


def test_policy_names_artemis_and_custom():
    assert isinstance(policy_from_name("RoundRobin"), RoundRobin)
    assert isinstance(
        policy_from_name("org.apache.activemq.artemis.api.core.client.loadbalance.RandomStickyConnectionLoadBalancingPolicy"),
        RandomSticky,
    )
    assert isinstance(policy_from_name("FirstElementConnectionLoadBalancingPolicy"), FirstElement)
    custom = policy_from_name("tests.unit.test_loadbalance:AlwaysLast")
    assert custom.select(4) == 3
    with pytest.raises(InvalidRequestError, match="has no 'Missing'"):
        policy_from_name("tests.unit.test_loadbalance:Missing")
    with pytest.raises(InvalidRequestError, match="no select"):
        policy_from_name("tests.unit.test_loadbalance:NotAPolicy")


class AlwaysLast:
    def select(self, n: int) -> int:
        return n - 1


class NotAPolicy:
    pass
