"""The client options' defaults live in meshmq/config/defaults.py, and the README's
option table states the same values."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from meshmq.client import ClientOptions
from meshmq.config import defaults

README = Path(__file__).resolve().parents[2] / "README.md"


def documented_defaults() -> dict[str, str]:
    """Option name -> default as the README's client option table writes it."""
    found: dict[str, str] = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`(\w+)`", cells[0])
        values = [v.strip() for v in cells[1].split(",")] if cells[1] else [""] * len(names)
        if len(values) == len(names):
            found.update(zip(names, values))
    return found


def as_written(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_every_option_default_is_documented_as_it_is():
    written = documented_defaults()
    for option in dataclasses.fields(ClientOptions):
        if option.name in ("trustStorePath", "keyStorePath", "keyPath"):
            continue  # documented in the sslEnabled row
        assert option.name in written, f"{option.name} is missing from README.md's option table"
        assert written[option.name] == as_written(option.default), option.name


def test_the_option_defaults_are_the_named_constants():
    options = ClientOptions()
    assert options.consumerWindowSize == defaults.CLIENT_CONSUMER_WINDOW_SIZE
    assert options.confirmationWindowSize == defaults.CLIENT_CONFIRMATION_WINDOW_SIZE
    assert options.callFailoverTimeout == defaults.CLIENT_CALL_FAILOVER_TIMEOUT
    assert options.reconnectAttempts == defaults.CLIENT_RECONNECT_ATTEMPTS
    assert options.connectionLoadBalancingPolicyClassName == defaults.CLIENT_LOAD_BALANCING_POLICY
