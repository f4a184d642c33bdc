"""A client must skip a SessionResponse kind it does not know (a newer router's):
docs/protocol.md, "Versioning". The Python SDK once failed its whole session on one."""

from __future__ import annotations

from meshmq.aio import wait_for
from meshmq.client.failover import Incidents
from meshmq.client.options import ClientOptions, Server
from meshmq.client.session import Session
from meshmq.v1 import broker_pb2 as bpb

# Field 15 of SessionResponse, length-delimited and empty: a kind this SDK has no name for.
UNKNOWN_KIND = b"\x7a\x00"


class _Host:
    metadata = ()
    options = ClientOptions()
    incidents = Incidents()


async def test_an_unknown_response_kind_is_skipped_and_the_session_goes_on():
    session = Session(_Host(), Server("127.0.0.1", 1), transacted=False)
    created = session._expect("producer_created", 1)
    resp = bpb.SessionResponse.FromString(UNKNOWN_KIND)
    assert resp.WhichOneof("kind") is None
    session._dispatch(resp)
    assert session._failure is None and not created.done()
    session._dispatch(bpb.SessionResponse(producer_created=bpb.ProducerCreated(producer_id=1)))
    assert (await wait_for(created, 1)).producer_id == 1
