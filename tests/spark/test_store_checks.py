"""What makes a store readable, decided on plain data (pure)."""

from __future__ import annotations

import pytest

from spark.errors import AnalyticsError
from spark.jdbc import parse_store_url
from services.journal import schema as journal_schema
from spark.store import (
    REQUIRED_COLUMNS,
    SCHEMA_VERSION,
    NodeStore,
    check_catalog,
    check_distinct_nodes,
    check_node_state,
)

STORE = "sqlite:////d/journal.db"


def full_catalog() -> dict[str, set[str]]:
    return {table: set(columns) | {"extra"} for table, columns in REQUIRED_COLUMNS.items()} | {"addresses": {"name"}}


def test_a_complete_catalog_passes():
    check_catalog(STORE, full_catalog())


def test_no_tables_at_all_is_an_empty_store():
    with pytest.raises(AnalyticsError, match=r"store sqlite:////d/journal.db is empty: it has no tables"):
        check_catalog(STORE, {})


def test_other_tables_only_is_not_a_journal():
    with pytest.raises(AnalyticsError, match="is not a meshmq journal: it has no node_state table"):
        check_catalog(STORE, {"customers": {"id"}})


def test_missing_columns_and_tables_are_all_named():
    catalog = full_catalog()
    catalog["events"].discard("message_ts")
    del catalog["message_refs"]
    with pytest.raises(AnalyticsError) as err:
        check_catalog(STORE, catalog)
    assert "older or different journal schema: missing events.message_ts, message_refs;" in str(err.value)


def test_the_report_reads_the_version_the_journal_writes():
    assert SCHEMA_VERSION == str(journal_schema.SCHEMA_VERSION)


def test_node_state_of_this_version_gives_the_node():
    assert check_node_state(STORE, {"schema_version": SCHEMA_VERSION, "node_id": "abc", "node_name": "a"}) == ("abc", "a")


def test_another_schema_version_is_refused_naming_both():
    with pytest.raises(AnalyticsError, match=f"has journal schema version 0; this report reads version {SCHEMA_VERSION}"):
        check_node_state(STORE, {"schema_version": "0", "node_id": "abc"})


def test_no_version_and_no_node_id_are_refused():
    with pytest.raises(AnalyticsError, match="no schema_version"):
        check_node_state(STORE, {"node_id": "abc"})
    with pytest.raises(AnalyticsError, match="no node_id"):
        check_node_state(STORE, {"schema_version": SCHEMA_VERSION})


def _node(url: str, node_id: str) -> NodeStore:
    return NodeStore(parse_store_url(url), node_id, "n", 1, 1, 1, 0, 0, 0, None, None)


def test_two_stores_of_one_node_are_refused():
    check_distinct_nodes([_node("sqlite:////a.db", "x"), _node("sqlite:////b.db", "y")])
    with pytest.raises(AnalyticsError, match="belong to the same node x"):
        check_distinct_nodes([_node("sqlite:////a.db", "x"), _node("sqlite:////b.db", "x")])
