"""Wildcard routing (``wildcard-addresses``) on a real router: a subscription
or consumer on ``news.#`` gets what is sent to every matching address,
including addresses created after it."""

from __future__ import annotations

import uuid

import pytest

from meshmq.client import connect
from meshmq.config.loader import ConfigError, load_config
from tests.fixtures.nodes import ServiceProcess

pytestmark = pytest.mark.integration


def uniq(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


async def bodies(consumer, timeout: float = 0.5) -> list[bytes]:
    """Everything `consumer` gets until it has been quiet for `timeout` (so one too many is seen)."""
    out = []
    while (m := await consumer.receive(timeout)) is not None:
        out.append(m.body)
        m.ack()
    return out


async def test_any_words_and_single_word_subscriptions_get_matching_addresses(shared_router):
    root = uniq("news")  # its own word, so other tests' addresses never match
    async with await connect(shared_router.url) as conn:
        s = await conn.session()
        every = await s.create_consumer(address=f"{root}.#", subscription=f"{root}-every", shared=True)
        one = await s.create_consumer(address=f"{root}.*", subscription=f"{root}-one", shared=True)
        sport = await s.create_consumer(address=f"{root}.*.sport", subscription=f"{root}-sport", shared=True)
        p = await s.create_producer()
        for address in (f"{root}.europe", f"{root}.europe.sport", f"sport.{root}", root, f"{root}x.europe"):
            await p.send(address.encode(), address=address, routing_type="multicast")
        assert await bodies(every) == [f"{root}.europe".encode(), f"{root}.europe.sport".encode(), root.encode()]
        assert await bodies(one) == [f"{root}.europe".encode()]
        assert await bodies(sport) == [f"{root}.europe.sport".encode()]


async def test_a_subscription_made_before_its_address_exists_gets_it_and_a_late_one_too(shared_router):
    root = uniq("late")
    async with await connect(shared_router.url) as conn:
        s = await conn.session()
        early = await s.create_consumer(address=f"{root}.#", subscription=f"{root}-early", shared=True)
        assert not [a for a in await conn.admin.list_addresses() if a.name == f"{root}.europe"]
        p = await s.create_producer(f"{root}.europe")
        await p.send(b"first", routing_type="multicast")
        assert await bodies(early) == [b"first"]
        # A wildcard subscription made after the concrete address exists is bound to it too.
        late = await s.create_consumer(address=f"{root}.*", subscription=f"{root}-late", shared=True)
        await p.send(b"second", routing_type="multicast")
        assert await bodies(early) == [b"second"]
        assert await bodies(late) == [b"second"]
        # Closed and deleted, it gets nothing more.
        await late.close()
        await conn.admin.delete_queue(f"{root}-late", force=True)
        await p.send(b"third", routing_type="multicast")
        assert await bodies(early) == [b"third"]


async def test_an_anycast_consumer_on_a_wildcard_address_takes_from_matching_addresses(shared_router):
    root = uniq("orders")
    async with await connect(shared_router.url) as conn:
        s = await conn.session()
        c = await s.create_consumer(f"{root}.#")
        p = await s.create_producer()
        await p.send(b"eu", address=f"{root}.eu", routing_type="anycast")
        await p.send(b"us", address=f"{root}.us", routing_type="anycast")
        assert await bodies(c) == [b"eu", b"us"]
        # The wildcard queue took them: no queue was auto-created on the concrete addresses.
        assert await conn.admin.list_queues(address=f"{root}.eu") == []


async def test_custom_wildcard_syntax(nodes):
    node: ServiceProcess = nodes.router("custom", extra="""
        wildcard-addresses: {delimiter: /, any-words: ">", single-word: "+"}
        """)
    async with await connect(node.url) as conn:
        s = await conn.session()
        every = await s.create_consumer(address="news/>", subscription="every", shared=True)
        one = await s.create_consumer(address="news/+", subscription="one", shared=True)
        literal = await s.create_consumer(address="news.#", subscription="literal", shared=True)
        p = await s.create_producer()
        for address in ("news/europe", "news/europe/sport", "news.europe", "news.#"):
            await p.send(address.encode(), address=address, routing_type="multicast")
        assert await bodies(every) == [b"news/europe", b"news/europe/sport"]
        assert await bodies(one) == [b"news/europe"]
        assert await bodies(literal) == [b"news.#"]  # '#' and '.' are plain characters here


async def test_routing_disabled_keeps_wildcard_addresses_literal(nodes):
    node = nodes.router("literal", extra="wildcard-addresses: {routing-enabled: false}\n")
    async with await connect(node.url) as conn:
        s = await conn.session()
        sub = await s.create_consumer(address="news.#", subscription="sub", shared=True)
        p = await s.create_producer()
        await p.send(b"europe", address="news.europe", routing_type="multicast")
        await p.send(b"literal", address="news.#", routing_type="multicast")
        assert await bodies(sub) == [b"literal"]


@pytest.mark.parametrize(("yaml", "problem"), [
    ("{delimiter: '#'}", "delimiter, any-words and single-word must be three different characters"),
    ("{single-word: '**'}", "single-word: must be one character that is not a space, got '**'"),
    ("{delimiter: ''}", "delimiter: must be one character that is not a space, got ''"),
])
def test_a_bad_wildcard_syntax_is_refused(tmp_path, yaml: str, problem: str):
    path = tmp_path / "node.yaml"
    path.write_text(f"name: bad\nwildcard-addresses: {yaml}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "node.yaml:2: wildcard-addresses" in str(err.value) and problem in str(err.value)
