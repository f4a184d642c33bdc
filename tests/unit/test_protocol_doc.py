"""docs/protocol.md names everything a client SDK can meet on the wire: every
RPC of the Broker and Management services, every kind of session request and
response with its field number, and every error reason. A new RPC, a new
oneof field of SessionRequest/SessionResponse or a new Reason that the page
does not name fails here, so the written protocol moves with the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from meshmq.errors import Reason
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import management_pb2 as mgpb

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"

# The client-facing services: their RPCs must each be named.
SERVICES = (bpb.DESCRIPTOR.services_by_name["Broker"], mgpb.DESCRIPTOR.services_by_name["Management"])
# The session stream's oneofs: each field must appear as `name = number`.
SESSION_MESSAGES = (bpb.SessionRequest, bpb.SessionResponse)


def _quoted(text: str) -> set[str]:
    """Every `code span` of the page, and each word in it."""
    spans = set(re.findall(r"`([^`\n]+)`", text))
    words = {w for s in spans for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", s)}
    return spans | words


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def test_every_rpc_of_the_client_facing_services_is_named(doc):
    quoted = _quoted(doc)
    missing = [f"{s.name}.{m.name}" for s in SERVICES for m in s.methods if m.name not in quoted]
    assert missing == [], f"RPCs not named (in backticks) in docs/protocol.md: {missing}"


def test_every_session_request_and_response_kind_is_named_with_its_number(doc):
    spans = set(re.findall(r"`([^`\n]+)`", doc))
    missing = []
    for cls in SESSION_MESSAGES:
        for field in cls.DESCRIPTOR.oneofs_by_name["kind"].fields:
            if f"{field.name} = {field.number}" not in spans:
                missing.append(f"{cls.DESCRIPTOR.name}.{field.name} = {field.number}")
    assert missing == [], f"session kinds not named as `name = number` in docs/protocol.md: {missing}"


def test_every_reason_code_is_named(doc):
    quoted = _quoted(doc)
    missing = [r.value for r in Reason if r.value not in quoted]
    assert missing == [], f"reason codes not named (in backticks) in docs/protocol.md: {missing}"


def test_the_check_sees_a_missing_name():
    """The checks above read code spans: a name that is only in prose does not count."""
    assert "UNBLOCKED" not in _quoted("a call raises UNBLOCKED when ...")
    assert "WatchTopology" in _quoted("`Management.WatchTopology` streams")
