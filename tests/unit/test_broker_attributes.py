"""A started broker keeps at most 30 instance attributes: past that CPython
3.11 reads them off its attribute fast path, and the send and delivery paths
read them for every message (860 more instructions per message at 31,
measured under callgrind with bench/router_cpu.py, whose journal this
uses). services/router/broker.py says how to add state
without crossing it."""

from __future__ import annotations

from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config.models import BrokerConfig
from bench.router_cpu import InstantJournal
from services.router.broker import Broker


async def test_a_started_broker_stays_on_the_attribute_fast_path() -> None:
    config = BrokerConfig()
    broker = Broker(name="n", journal=InstantJournal(), address_settings=AddressSettingsResolver.from_config(config),
                    id_cache_size=config.id_cache_size, persist_id_cache=True)
    await broker.start()
    try:
        broker.create_queue("q", "q", 1)
        assert len(vars(broker)) <= Broker.MAX_INSTANCE_ATTRIBUTES, sorted(vars(broker))
    finally:
        await broker.stop()
