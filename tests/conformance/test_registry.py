"""Conformance of the drivers themselves (DRIVER.md), and a guard that the
suite runs every SDK the tree has: a TypeScript SDK without its built driver
fails here instead of quietly dropping out of the parametrization."""

from __future__ import annotations

import pytest

from .runner import TYPESCRIPT_DRIVER, TYPESCRIPT_PACKAGE, drivers


def test_the_typescript_driver_is_built_and_every_sdk_runs_the_suite():
    assert TYPESCRIPT_PACKAGE.is_file()
    assert TYPESCRIPT_DRIVER.is_file(), (
        f"{TYPESCRIPT_PACKAGE.parent} exists but its conformance driver {TYPESCRIPT_DRIVER} was not built: "
        "run `npm ci && npm run build` in sdk/typescript (scripts/setup.sh --test does)"
    )
    assert sorted(drivers()) == ["python", "typescript"]


@pytest.mark.integration
def test_hello_names_the_sdk_and_its_version(driver):
    hello = driver.request("hello")
    assert hello["sdk"] == driver.name
    assert isinstance(hello["version"], str) and hello["version"]


@pytest.mark.integration
def test_an_unknown_op_answers_unsupported(driver):
    err = driver.error("no_such_op")
    assert err.reason == "UNSUPPORTED", err


@pytest.mark.integration
def test_a_handle_the_driver_never_gave_is_refused_with_invalid_request(driver):
    err = driver.error("session", connection="c999999")
    assert err.reason == "INVALID_REQUEST", err
