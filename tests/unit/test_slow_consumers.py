"""The slow-consumer decider and settings (services/router/slow_consumers.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from meshmq.config import defaults
from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config.models import AddressSettings
from services.router.slow_consumers import is_slow


@pytest.mark.parametrize(
    ("acked", "elapsed", "threshold", "had_messages", "slow"),
    [
        (0, 5.0, 10, True, True),
        (49, 5.0, 10, True, True),     # 9.8/s
        (50, 5.0, 10, True, False),    # exactly the threshold is not below it
        (0, 5.0, -1, True, False),     # -1: no check
        (0, 5.0, 10, False, False),    # nothing to consume: idle, not slow
        (0, 0.0, 10, True, False),     # no time measured
        (0, 5.0, 0, True, False),      # 0/s is never below 0
    ],
)
def test_is_slow(acked, elapsed, threshold, had_messages, slow):
    assert is_slow(acked, elapsed, threshold, had_messages) is slow


def test_defaults_are_artemis_and_no_setting_means_no_check():
    r = AddressSettingsResolver({})
    s = r.resolve("orders")
    assert (s.slow_consumer_threshold, s.slow_consumer_policy, s.slow_consumer_check_period) == (-1, "NOTIFY", 5)
    assert defaults.SLOW_CONSUMER_THRESHOLD == -1 and not r.checks_slow_consumers


def test_a_threshold_turns_the_check_on_with_the_shortest_period_as_tick():
    r = AddressSettingsResolver({
        "slow.#": AddressSettings.model_validate(
            {"slow-consumer-threshold": 10, "slow-consumer-policy": "kill", "slow-consumer-check-period": 2}),
    })
    assert r.checks_slow_consumers and r.slow_consumer_tick == 2
    s = r.resolve("slow.a")
    assert (s.slow_consumer_threshold, s.slow_consumer_policy, s.slow_consumer_check_period) == (10, "KILL", 2)


@pytest.mark.parametrize("bad", [{"slow-consumer-policy": "DROP"}, {"slow-consumer-check-period": 0},
                                 {"slow-consumer-threshold": -2}])
def test_bad_values_are_refused(bad):
    with pytest.raises(ValidationError):
        AddressSettings.model_validate(bad)
