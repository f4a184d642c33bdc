"""Wildcard demand across a cluster connection (ON_DEMAND): a subscription on
``news.#`` on B is demand, on A, for every address it matches — A forwards
what is sent to ``news.europe`` to it and keeps what it does not match."""

from __future__ import annotations

import pytest

from meshmq.client import connect

from .cluster import start_cluster, wait_bindings

pytestmark = pytest.mark.integration


async def test_a_wildcard_subscription_on_b_gets_matching_messages_sent_on_a(nodes):
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"]}, options="message-load-balancing: ON_DEMAND")
    async with await connect(cluster["B"].url) as b_conn, await connect(cluster["A"].url) as a_conn:
        sub = await (await b_conn.session()).create_consumer(address="news.#", subscription="b-news", shared=True)
        await wait_bindings(cluster["A"], {("B", "b-news", 1)})
        p = await (await a_conn.session()).create_producer()
        for address in ("news.europe", "sport.news", "news.europe.sport"):
            await p.send(address.encode(), address=address, routing_type="multicast")
        got = []
        while (m := await sub.receive(2 if not got else 0.5)) is not None:
            got.append(m.body)
            m.ack()
        assert got == [b"news.europe", b"news.europe.sport"]
