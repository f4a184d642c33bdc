"""Redelivery backoff (services/router/redelivery.py) and its address settings."""

from __future__ import annotations

import pytest

from meshmq.config.address_settings import AddressSettingsResolver, ResolvedAddressSettings
from meshmq.config.loader import ConfigError, load_config_text
from meshmq.config.models import AddressSettings
from services.router.redelivery import redelivery_delay


def settings(**kw) -> ResolvedAddressSettings:
    return ResolvedAddressSettings(**kw)


def test_no_redelivery_delay_redelivers_at_once_whatever_the_multiplier() -> None:
    assert redelivery_delay(settings(redelivery_delay_multiplier=5.0), 3) == 0


def test_the_default_multiplier_keeps_the_delay_constant() -> None:
    s = settings(redelivery_delay=100, max_redelivery_delay=1000)
    assert [redelivery_delay(s, n) for n in range(1, 6)] == [100] * 5


def test_each_redelivery_waits_multiplier_times_longer_until_the_max() -> None:
    s = settings(redelivery_delay=100, redelivery_delay_multiplier=2.0, max_redelivery_delay=500)
    assert [redelivery_delay(s, n) for n in range(0, 7)] == [100, 100, 200, 400, 500, 500, 500]


def test_max_redelivery_delay_defaults_to_ten_times_the_merged_redelivery_delay() -> None:
    r = AddressSettingsResolver({"#": AddressSettings(redelivery_delay=10),
                                 "orders.#": AddressSettings(redelivery_delay_multiplier=3.0),
                                 "orders.eu": AddressSettings(redelivery_delay=50, max_redelivery_delay=70)})
    assert [redelivery_delay(r.resolve("orders.us"), n) for n in (1, 2, 3, 4)] == [10, 30, 90, 100]
    assert [redelivery_delay(r.resolve("orders.eu"), n) for n in (1, 2)] == [50, 70]


def test_collision_avoidance_spreads_the_delay_either_way_by_up_to_the_factor() -> None:
    s = settings(redelivery_delay=1000, redelivery_collision_avoidance_factor=0.5, max_redelivery_delay=10_000)
    assert redelivery_delay(s, 1, rand=lambda: 0.0) == 500
    assert redelivery_delay(s, 1, rand=lambda: 0.5) == 1000
    assert redelivery_delay(s, 1, rand=lambda: 0.999) == 1499
    assert all(500 <= redelivery_delay(s, 1) < 1500 for _ in range(200))


def test_the_cap_applies_after_the_spread() -> None:
    s = settings(redelivery_delay=1000, redelivery_collision_avoidance_factor=0.5, max_redelivery_delay=1200)
    assert redelivery_delay(s, 1, rand=lambda: 0.999) == 1200


def test_a_message_given_back_very_often_waits_the_max() -> None:
    s = settings(redelivery_delay=1000, redelivery_delay_multiplier=10.0, max_redelivery_delay=60_000)
    assert redelivery_delay(s, 100_000) == 60_000


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("redelivery-delay-multiplier", "-1.5", "greater than or equal to 0"),
    ("redelivery-collision-avoidance-factor", "1.5", "less than or equal to 1"),
    ("redelivery-collision-avoidance-factor", "-0.1", "greater than or equal to 0"),
    ("max-redelivery-delay", "-1", "greater than or equal to 0"),
])
def test_bad_backoff_settings_are_refused_naming_the_key(key: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config_text(f'address-settings:\n  "orders.#":\n    redelivery-delay: 100\n    {key}: {value}\n')
    assert str(info.value).startswith(f'<string>:4: address-settings."orders.#".{key}: Input should be {problem}')


def test_backoff_settings_load_from_yaml() -> None:
    config = load_config_text('address-settings:\n  "orders.#":\n    redelivery-delay: 100\n'
                              '    redelivery-delay-multiplier: 1.5\n    max-redelivery-delay: 900\n'
                              '    redelivery-collision-avoidance-factor: 0.25\n')
    r = AddressSettingsResolver.from_config(config).resolve("orders.eu")
    assert (r.redelivery_delay_multiplier, r.max_redelivery_delay, r.redelivery_collision_avoidance_factor) == (
        1.5, 900, 0.25)
