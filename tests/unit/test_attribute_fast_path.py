"""A started broker, and an ordinary queue created and consumed, each keep at
most 30 instance attributes: past that CPython 3.11 reads them off its
attribute fast path, and the send, delivery and acknowledge paths read them
for every message (860 more instructions per message for a broker at 31,
measured under callgrind with bench/router_cpu.py, whose journal this uses;
docs/performance.md). services/router/broker.py and queue.py say how to add
state without crossing it."""

from __future__ import annotations

import pytest

from bench.router_cpu import InstantJournal
from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config.models import BrokerConfig
from services.router.broker import Broker
from services.router.consumer import ServerConsumer
from services.router.queue import Queue


class _Target:
    def delivered(self, consumer, delivery_id, ref) -> None:
        pass


@pytest.fixture
async def broker():
    config = BrokerConfig()
    b = Broker(name="n", journal=InstantJournal(), address_settings=AddressSettingsResolver.from_config(config),
               id_cache_size=config.id_cache_size, persist_id_cache=True)
    await b.start()
    yield b
    await b.stop()


async def test_a_started_broker_stays_on_the_attribute_fast_path(broker) -> None:
    broker.create_queue("q", "q", 1)
    assert len(vars(broker)) <= Broker.MAX_INSTANCE_ATTRIBUTES, sorted(vars(broker))


async def test_an_ordinary_queue_stays_on_the_attribute_fast_path(broker) -> None:
    q = broker.create_queue("q", "q", 1)
    q.add_consumer(ServerConsumer(_Target(), 1, q, None, "", -1))
    assert len(vars(q)) <= Queue.MAX_INSTANCE_ATTRIBUTES, sorted(vars(q))
