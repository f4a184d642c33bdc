"""What every conformance scenario shares: the driver under test, one per
SDK (runner.drivers()), started once per module and SDK."""

from __future__ import annotations

import base64
import itertools
import uuid

import pytest

from .runner import Driver, drivers

_counter = itertools.count(1)


@pytest.fixture(scope="module", params=sorted(drivers()))
def driver(request, tmp_path_factory):
    """The driver of one SDK (the test id names it: `-k python`)."""
    name = request.param
    d = Driver(name, drivers()[name], tmp_path_factory.mktemp(f"driver-{name}") / "driver.log")
    try:
        hello = d.request("hello", timeout=60)  # the first answer waits for the SDK to load
        assert hello["sdk"] == name, hello
        yield d
    finally:
        d.stop()


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def body(message: dict) -> bytes:
    return base64.b64decode(message["body"])


def unique(prefix: str) -> str:
    """A queue or address name no other scenario (or SDK run) of this worker uses."""
    return f"{prefix}.{next(_counter)}.{uuid.uuid4().hex[:6]}"
