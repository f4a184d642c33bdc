"""An ordinary queue, created and consumed, keeps at most 30 instance
attributes: past that CPython 3.11 reads them off its attribute fast path, and
enqueue, dispatch and acknowledge read them for every message (measured under
callgrind with bench/router_cpu.py: docs/performance.md). services/router/queue.py
says how to add state without crossing it."""

from __future__ import annotations

from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config.models import BrokerConfig
from bench.router_cpu import InstantJournal
from services.router.broker import Broker
from services.router.consumer import ServerConsumer
from services.router.queue import Queue


class _Target:
    def delivered(self, consumer, delivery_id, ref) -> None:
        pass


async def test_an_ordinary_queue_stays_on_the_attribute_fast_path() -> None:
    config = BrokerConfig()
    broker = Broker(name="n", journal=InstantJournal(), address_settings=AddressSettingsResolver.from_config(config),
                    id_cache_size=config.id_cache_size, persist_id_cache=True)
    await broker.start()
    try:
        q = broker.create_queue("q", "q", 1)
        q.add_consumer(ServerConsumer(_Target(), 1, q, None, "", -1))
        assert len(vars(q)) <= Queue.MAX_INSTANCE_ATTRIBUTES, sorted(vars(q))
    finally:
        await broker.stop()
