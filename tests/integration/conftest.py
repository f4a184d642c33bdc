"""The feature tests' connection to the worker's shared router."""

from __future__ import annotations

import pytest

from meshmq.client import connect


@pytest.fixture
async def conn(shared_router):
    c = await connect(shared_router.url)
    yield c
    await c.close()
