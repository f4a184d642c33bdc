"""The PostgreSQL fixtures give each test a real, private database."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, inspect, select
from sqlalchemy.pool import NullPool

from tests.fixtures.postgres import PgServer

pytestmark = pytest.mark.integration


def _messages_table(metadata: MetaData) -> Table:
    return Table(
        "messages", metadata,
        Column("id", Integer, primary_key=True),
        Column("body", String(100), nullable=False),
    )


def test_databases_are_isolated(make_pg_url: Callable[[], str]) -> None:
    first, second = make_pg_url(), make_pg_url()
    assert first != second

    metadata = MetaData()
    _messages_table(metadata)
    e1, e2 = create_engine(first, poolclass=NullPool), create_engine(second, poolclass=NullPool)
    try:
        metadata.create_all(e1)
        assert inspect(e1).get_table_names() == ["messages"]
        assert inspect(e2).get_table_names() == []
    finally:
        e1.dispose()
        e2.dispose()


def test_committed_data_survives_a_fresh_engine(pg_url: str, pg_server: PgServer) -> None:
    metadata = MetaData()
    messages = _messages_table(metadata)

    writer = create_engine(pg_url, poolclass=NullPool)
    with writer.begin() as conn:
        metadata.create_all(conn)
        conn.execute(messages.insert(), [{"id": 1, "body": "hello"}, {"id": 2, "body": "world"}])
        writer_pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    writer.dispose()

    reader = create_engine(pg_url, poolclass=NullPool)
    try:
        with reader.connect() as conn:
            rows = conn.execute(select(messages.c.id, messages.c.body).order_by(messages.c.id)).all()
            reader_pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
            server_port = conn.exec_driver_sql("SELECT inet_server_port()").scalar_one()
    finally:
        reader.dispose()

    assert [tuple(r) for r in rows] == [(1, "hello"), (2, "world")]
    assert reader_pid != writer_pid  # a different server backend, not a cached connection
    assert server_port == pg_server.port
    assert reader.dialect.driver == "psycopg"
