"""The log-in throttle's decisions (meshmq/security/login_throttle.py), on a fake clock."""

from __future__ import annotations

import pytest

from meshmq.security.login_throttle import LoginThrottle, ThrottlePolicy

POLICY = ThrottlePolicy(free_attempts=3, initial_delay_s=0.25, max_delay_s=2.0, forget_after_s=60.0, max_entries=100)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def guess(throttle: LoginThrottle, clock: Clock, username: str, source: str) -> float:
    """One failed attempt that waits what it is told; returns the wait."""
    wait = throttle.wait(username, source)
    clock.now += wait
    throttle.failed(username, source)
    return wait


def test_failures_past_the_free_ones_wait_doubling_up_to_the_maximum():
    clock = Clock()
    t = LoginThrottle(POLICY, clock=clock)
    waits = [guess(t, clock, "app", "10.0.0.9") for _ in range(10)]
    assert waits == [0, 0, 0, 0.25, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0]
    assert t.failures == 10 and t.throttled == 7


def test_an_unknown_username_is_throttled_exactly_like_a_known_one():
    # The throttle never sees whether a user exists: same keys, same waits.
    clock = Clock()
    known, unknown = LoginThrottle(POLICY, clock=clock), LoginThrottle(POLICY, clock=clock)
    assert [guess(known, clock, "app", "s") for _ in range(6)] == [guess(unknown, clock, "nobody", "s")
                                                                    for _ in range(6)]


def test_the_owner_from_another_address_waits_at_most_the_maximum_whatever_the_guessing():
    clock = Clock()
    t = LoginThrottle(POLICY, clock=clock)
    for i in range(50):  # guesses at app from many addresses, several at a time
        t.failed("app", f"10.0.{i}.1")
    assert t.wait("app", "192.168.1.5") == POLICY.max_delay_s
    t.succeeded("app", "192.168.1.5")
    assert t.wait("app", "192.168.1.5") == 0  # its owner came back: the username starts over
    assert t.wait("other", "192.168.1.6") == 0  # another user, another address: untouched


def test_concurrent_attempts_from_one_address_take_turns():
    clock = Clock()
    t = LoginThrottle(POLICY, clock=clock)
    for i in range(5):
        t.failed(f"user{i}", "10.0.0.9")  # a password spray: one guess per username
    # Five more at once, each for a new username: the address's delay (1 s) each, in turn.
    assert [t.wait(f"new{i}", "10.0.0.9") for i in range(5)] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_a_success_does_not_clear_the_address():
    # Otherwise logging in with one's own account between guesses would reset them.
    clock = Clock()
    t = LoginThrottle(POLICY, clock=clock)
    for i in range(4):
        guess(t, clock, f"victim{i}", "10.0.0.9")
    t.succeeded("mine", "10.0.0.9")
    assert t.wait("victim9", "10.0.0.9") == 0.5  # four failures: still counted


def test_failures_are_forgotten_after_a_quiet_window():
    clock = Clock()
    t = LoginThrottle(POLICY, clock=clock)
    for _ in range(6):
        guess(t, clock, "app", "10.0.0.9")
    clock.now += 59
    assert t.wait("app", "10.0.0.1") > 0
    clock.now += 62
    assert t.wait("app", "10.0.0.9") == 0 and t.tracked() == (0, 0)


def test_the_tables_stay_bounded():
    clock = Clock()
    t = LoginThrottle(POLICY, clock=clock)
    for i in range(1000):
        t.failed(f"user{i}", f"10.0.{i // 256}.{i % 256}")
    assert t.tracked() == (100, 100)


@pytest.mark.parametrize("failures, delay", [(0, 0), (2, 0), (3, 0.25), (4, 0.5), (40, 2.0), (10**6, 2.0)])
def test_the_delay_for_a_number_of_failures(failures, delay):
    assert POLICY.delay(failures) == delay
