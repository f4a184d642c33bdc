"""The journal's own binary array packing (services/journal/pg_arrays.py) read back by a real PostgreSQL.

PostgreSQL itself decodes every array here (`array_recv`), so a wrong length
word, flag or byte order fails the statement or changes a value."""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from meshmq.v1 import journal_pb2 as jpb
from services.journal import pg_arrays
from services.journal.store import JournalStore

pytestmark = pytest.mark.integration

_INT8 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_INT4 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)

_CASES = [
    (pg_arrays.Int8Array, "bigint", _INT8),
    (pg_arrays.Int4Array, "integer", _INT4),
    (pg_arrays.BoolArray, "boolean", st.booleans()),
    (pg_arrays.TextArray, "varchar(255)", _TEXT),
    (pg_arrays.ByteaArray, "bytea", st.binary(max_size=300)),
]


@pytest.fixture
def pg(pg_url):
    conn = psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)
    pg_arrays.register(conn)
    yield conn
    conn.close()


def _read_back(conn, kind, sql_type: str, values: list) -> list:
    got = conn.execute(f"SELECT %b::{sql_type}[]", (kind(values),)).fetchone()[0]
    return [bytes(v) if isinstance(v, memoryview) else v for v in got]


@pytest.mark.parametrize(("kind", "sql_type", "element"), _CASES, ids=[c[1] for c in _CASES])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_array_kind_reads_back_as_written_with_nulls_and_empties(pg, kind, sql_type, element, data):
    values = data.draw(st.lists(st.one_of(st.none(), element), max_size=30))
    assert _read_back(pg, kind, sql_type, values) == values


def test_a_column_of_only_nulls_and_an_empty_column_read_back(pg):
    assert _read_back(pg, pg_arrays.Int8Array, "bigint", [None, None, None]) == [None, None, None]
    assert _read_back(pg, pg_arrays.TextArray, "varchar(64)", [None]) == [None]
    assert _read_back(pg, pg_arrays.Int8Array, "bigint", []) == []


def test_text_goes_in_the_connections_client_encoding(pg):
    """PostgreSQL reads binary text in the client encoding: a LATIN1 client's é is one byte."""
    pg.execute("SET client_encoding TO 'LATIN1'")
    assert _read_back(pg, pg_arrays.TextArray, "varchar(8)", ["é", "a", None]) == ["é", "a", None]
    assert pg.execute("SELECT octet_length(convert_to(x, 'UTF8')) FROM unnest(%b::text[]) AS x",
                      (pg_arrays.TextArray(["é"]),)).fetchone() == (2,)


def test_columns_unnest_side_by_side_into_rows(pg):
    rows = pg.execute(
        "SELECT * FROM unnest(%b::bigint[], %b::varchar(16)[], %b::bytea[])",
        (pg_arrays.Int8Array([1, 2]), pg_arrays.TextArray(["é", None]), pg_arrays.ByteaArray([b"\x00", b""])),
    ).fetchall()
    assert rows == [(1, "é", b"\x00"), (2, None, b"")]


def test_an_unknown_sql_type_is_named():
    with pytest.raises(ValueError, match="NUMERIC"):
        pg_arrays.array_kind("NUMERIC(10, 2)")


def test_a_batch_of_messages_and_events_is_stored_exactly_on_postgresql(pg_url):
    """The journal's batch statements through the packers: a forwarded and a
    local event in one batch (from_* NULL on one row only), a message without
    a queue, a non-ASCII address, an empty body."""
    store = JournalStore(pg_url)
    epoch = store.activate(store.open("n").epoch + 1)
    node = store.node_id
    req = jpb.AppendRequest(request_id=1, epoch=epoch)
    req.add_messages.add(message_id=7, address="адрес", size=0, timestamp=5, data=b"", delivery_count=2)
    req.add_messages.add(message_id=8, address="a", size=3, timestamp=6, data=b"\x00\xff\x01", queue_id=4, large=False)
    req.events.add(kind=1, timestamp=10, address="адрес", queue="q", message_id=7, size=0, delivery_count=0,
                   message_timestamp=5, from_node_id="other", from_message_id=99)
    req.events.add(kind=3, timestamp=11, address="a", queue="q", message_id=8, size=3, delivery_count=1,
                   message_timestamp=6)
    assert [r.ok for r in store.apply([req])] == [True]
    with store.engine.connect() as conn:
        messages = conn.execute(text(
            "SELECT message_id, address, size, timestamp, large, queue_id, delivery_count, data "
            "FROM messages ORDER BY message_id")).all()
        events = conn.execute(text(
            "SELECT node_id, kind, ts, address, queue, message_id, size, delivery_count, message_ts, "
            "from_node_id, from_message_id FROM events ORDER BY ts")).all()
    store.close()
    assert [tuple(m) for m in messages] == [
        (7, "адрес", 0, 5, False, None, 2, b""),
        (8, "a", 3, 6, False, 4, 0, b"\x00\xff\x01"),
    ]
    assert [tuple(e) for e in events] == [
        (node, "ENQUEUED", 10, "адрес", "q", 7, 0, 0, 5, "other", 99),
        (node, "ACKNOWLEDGED", 11, "a", "q", 8, 3, 1, 6, None, None),
    ]
