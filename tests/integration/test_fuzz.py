"""Random and truncated requests to every method of every service — the
router's Broker and Management, the journal, discovery (its test is in
tests/discovery/test_service_identity.py) — with and without credentials
(hypothesis): no process exits, an unauthenticated caller changes nothing,
and every refusal is a gRPC status carrying a meshmq reason."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from google.protobuf import message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshmq.client import connect
from meshmq.errors import REASON_METADATA_KEY
from meshmq.transport import credentials_metadata
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import management_pb2 as mgpb
from tests.fixtures.cluster_proof import member_proof

pytestmark = pytest.mark.integration

SECURED = """
security-enabled: true
users:
  - {username: app, password: pw, roles: [apps]}
security-settings:
  "#": {send: [apps], consume: [apps], create-address: [apps], create-durable-queue: [apps],
        create-non-durable-queue: [apps], delete-durable-queue: [apps], delete-non-durable-queue: [apps],
        manage: [apps]}
cluster-password: fuzz-router-cluster-secret
# What is fuzzed here is decoding, not guessing: failed log-ins are not slowed (tests/integration/test_login_throttle.py).
login-throttle: {free-attempts: 100000}
"""
ROUTER_METHODS = [
    (service, method)
    for service in (bpb.DESCRIPTOR.services_by_name["Broker"], mgpb.DESCRIPTOR.services_by_name["Management"],
                    cpb.DESCRIPTOR.services_by_name["Cluster"])
    for method in service.methods
]
CALL_TIMEOUT = 5.0


def samples(method) -> list[bytes]:
    """Well-formed requests of the method's type: fuzzing truncates and mutates these."""
    cls = message_factory.GetMessageClass(method.input_type)
    msg = cls()
    for field in cls.DESCRIPTOR.fields:
        if field.type == field.TYPE_STRING and not field.is_repeated:
            setattr(msg, field.name, "fuzz.q")
    out = [msg.SerializeToString()]
    if cls is bpb.SessionRequest:
        out.append(bpb.SessionRequest(open=bpb.OpenSession(client_id="fuzz")).SerializeToString())
    return out


def payloads(method):
    truncated = st.sampled_from(samples(method)).flatmap(
        lambda data: st.integers(0, max(0, len(data))).map(lambda n: data[:n])
    )
    return st.one_of(st.binary(max_size=96), truncated)


async def invoke(channel, service, method, data: bytes, metadata, *, stream_payload: bool = True
                 ) -> grpc.aio.AioRpcError | None:
    """One call with raw bytes; the error it ended with, None for success. A
    stream that answers is a success, cancelled after its first response.

    Without `stream_payload` a request stream carries no message: a caller
    refused before the method runs is refused unread either way, and a
    message still being written when the server has already ended the call
    makes gRPC's client report INTERNAL instead of the server's status."""
    path = f"/{service.full_name}/{method.name}"
    try:
        if method.client_streaming:
            call = channel.stream_stream(path, None, None)(metadata=metadata, timeout=CALL_TIMEOUT)
            try:
                if stream_payload:
                    await call.write(data)
                await call.done_writing()
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                pass  # the server ended the call first: reading gives its status
        elif method.server_streaming:
            call = channel.unary_stream(path, None, None)(data, metadata=metadata, timeout=CALL_TIMEOUT)
        else:
            await channel.unary_unary(path, None, None)(data, metadata=metadata, timeout=CALL_TIMEOUT)
            return None
        async for _ in call:
            call.cancel()
            return None
        return None
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.CANCELLED:
            return None
        return exc


def check_refusal(err: grpc.aio.AioRpcError | None, path: str, *, authenticated: bool) -> None:
    if not authenticated:
        assert err is not None and err.code() == grpc.StatusCode.UNAUTHENTICATED, (path, err)
    if err is None:
        return
    assert err.code() != grpc.StatusCode.UNKNOWN, (path, err)
    reason = dict(err.trailing_metadata() or ()).get(REASON_METADATA_KEY)
    assert reason, f"{path}: {err.code()} without a reason ({err.details()})"


def fuzz(loop, channel, methods, metadata_choices, *, authenticated: bool, examples: int = 60) -> int:
    """Send `examples` random or truncated requests to random `methods`; check each outcome."""
    calls = 0

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data):
        nonlocal calls
        service, method = data.draw(st.sampled_from(methods))
        payload = data.draw(payloads(method))
        metadata = data.draw(st.sampled_from(metadata_choices))
        err = loop.run_until_complete(invoke(channel, service, method, payload, metadata,
                                             stream_payload=authenticated))
        check_refusal(err, f"{service.name}/{method.name}", authenticated=authenticated)
        calls += 1

    one()
    return calls


def open_loop_and_channel(endpoint: str):
    loop = asyncio.new_event_loop()

    async def open_channel():  # inside the loop the calls run on
        return grpc.aio.insecure_channel(endpoint)

    return loop, loop.run_until_complete(open_channel())


@pytest.fixture
def secured(nodes):
    return nodes.router("fuzz", extra=SECURED)


def test_random_and_truncated_requests_with_and_without_credentials(secured):
    loop, channel = open_loop_and_channel(secured.endpoint)

    async def snapshot():
        async with await connect(f"meshmq://app:pw@{secured.endpoint}") as conn:
            return sorted((q.name, q.message_count) for q in await conn.admin.list_queues())

    async def seed():
        async with await connect(f"meshmq://app:pw@{secured.endpoint}") as conn:
            await conn.admin.create_queue("fuzz.q", routing_type="anycast")
            await (await (await conn.session()).create_producer("fuzz.q")).send(b"x", routing_type="anycast")

    loop.run_until_complete(seed())
    before = loop.run_until_complete(snapshot())
    strangers = [(), credentials_metadata("app", "wrong"), credentials_metadata("x", "")]
    assert fuzz(loop, channel, ROUTER_METHODS, strangers, authenticated=False) >= 60
    assert loop.run_until_complete(snapshot()) == before  # nothing changed
    assert secured.proc.poll() is None
    # A user, and another node of the cluster (the cluster credential opens Cluster.Link).
    app = [credentials_metadata("app", "pw"), member_proof("fuzz-router-cluster-secret")]
    assert fuzz(loop, channel, ROUTER_METHODS, app, authenticated=True, examples=90) >= 90
    assert secured.proc.poll() is None, secured.log_tail()
    assert "Traceback" not in secured.log_path.read_text()
    loop.run_until_complete(channel.close())
    loop.close()


JOURNAL_METHODS = [(s, m) for s in (jpb.DESCRIPTOR.services_by_name["Journal"],) for m in s.methods]
CLUSTER_SECRET = "fuzz-cluster-secret"


def test_the_journal_service_under_fuzz(nodes):
    """A journal service no router uses (an authenticated fuzzer may fence
    and append: it is the cluster): strangers change nothing, nothing exits."""
    journal = nodes.journal("fuzz-journal", extra=f"cluster-password: {CLUSTER_SECRET}\n")
    loop, channel = open_loop_and_channel(journal.endpoint)
    cluster = member_proof(CLUSTER_SECRET)

    async def stored() -> bytes:
        stub = channel.unary_unary("/meshmq.v1.Journal/Open", jpb.OpenRequest.SerializeToString,
                                   jpb.OpenResponse.FromString)
        opened = await stub(jpb.OpenRequest(node_name="fuzz"), metadata=cluster, timeout=CALL_TIMEOUT)
        return opened.SerializeToString()

    before = loop.run_until_complete(stored())
    strangers = [(), member_proof("guess"), credentials_metadata("app", "pw")]
    assert fuzz(loop, channel, JOURNAL_METHODS, strangers, authenticated=False) >= 60
    assert loop.run_until_complete(stored()) == before  # same epoch, node id and message ids: nothing changed
    assert fuzz(loop, channel, JOURNAL_METHODS, [cluster], authenticated=True, examples=40) >= 40
    assert journal.proc.poll() is None, journal.log_tail()
    assert "Traceback" not in journal.log_path.read_text()
    loop.run_until_complete(channel.close())
    loop.close()
