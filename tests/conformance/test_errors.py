"""Conformance: each typed error a client can cause reaches the application
with its reason code (docs/protocol.md section 12), and what was refused left
nothing behind. One router with security on and a few address settings serves
the whole module; each scenario uses addresses of its own."""

from __future__ import annotations

import pytest

from meshmq.client.blocking import connect as blocking_connect
from tests.fixtures.nodes import Nodes

from .conftest import b64, unique

pytestmark = pytest.mark.integration

PERMISSIONS = ("send", "consume", "create-address", "delete-address", "create-durable-queue", "delete-durable-queue",
               "create-non-durable-queue", "delete-non-durable-queue", "manage", "browse")
CONFIG = """
security-enabled: true
users:
  - {username: admin, password: adm1n, roles: [admins]}
  - {username: guest, password: gu3st, roles: [guests]}
security-settings:
  "#": {%s}
  "activemq.management":
    manage: [admins]
    view: [admins]
address-settings:
  "nocreate.#":
    auto-create-queues: false
    auto-create-addresses: false
  "full.#":
    max-size-messages: 2
    address-full-policy: FAIL
""" % ", ".join(f"{p}: [admins]" for p in PERMISSIONS)


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    nodes = Nodes(tmp_path_factory.mktemp("conformance-errors"))
    yield nodes.router("errors", extra=CONFIG)
    nodes.stop_all()


@pytest.fixture(scope="module")
def admin(router):
    conn = blocking_connect(f"meshmq://admin:adm1n@{router.endpoint}")
    yield conn.admin
    conn.close()


@pytest.fixture(scope="module")
def session(driver, router):
    """A session of the SDK under test, as the user allowed everything."""
    conn = driver.request("connect", uri=router.url, user="admin", password="adm1n")["connection"]
    yield driver.request("session", connection=conn)["session"]
    driver.request("close", handle=conn)


def make_queue(driver, session, name: str) -> str:
    driver.request("create_queue", session=session, address=name, queue=name)
    return name


def queue_names(admin) -> set[str]:
    return {q.name for q in admin.list_queues()}


def test_an_invalid_selector_is_refused_with_invalid_selector(driver, session):
    q = make_queue(driver, session, unique("conf.selector"))
    err = driver.error("consumer", session=session, queue=q, selector="color = 'red' AND")
    assert err.reason == "INVALID_SELECTOR", err


def test_a_consumer_on_a_queue_that_does_not_exist_gets_queue_not_found(driver, session, admin):
    q = unique("nocreate.missing")
    err = driver.error("consumer", session=session, queue=q)
    assert err.reason == "QUEUE_NOT_FOUND", err
    assert q not in queue_names(admin)


def test_wrong_credentials_are_refused_with_unauthenticated(driver, router):
    err = driver.error("connect", uri=router.url, user="admin", password="wrong")
    assert err.reason == "UNAUTHENTICATED", err
    err = driver.error("connect", uri=router.url, user="nobody", password="adm1n")
    assert err.reason == "UNAUTHENTICATED", err
    err = driver.error("connect", uri=router.url)  # no credentials at all
    assert err.reason == "UNAUTHENTICATED", err


def test_a_send_without_the_send_permission_is_refused_with_permission_denied(driver, router, session, admin):
    q = make_queue(driver, session, unique("conf.guarded"))
    conn = driver.request("connect", uri=router.url, user="guest", password="gu3st")["connection"]
    try:
        guest = driver.request("session", connection=conn)["session"]
        producer = driver.request("producer", session=guest, address=q)["producer"]
        err = driver.error("send", producer=producer, body=b64("not allowed"))
        assert err.reason == "PERMISSION_DENIED", err
        err = driver.error("consumer", session=guest, queue=q)
        assert err.reason == "PERMISSION_DENIED", err
    finally:
        driver.request("close", handle=conn)
    assert admin.queue(q).message_count == 0


def test_a_send_to_an_address_that_does_not_exist_and_may_not_be_created_gets_address_not_found(driver, session, admin):
    missing = unique("nocreate.address")
    producer = driver.request("producer", session=session, address=missing)["producer"]
    err = driver.error("send", producer=producer, body=b64("nowhere to go"))
    assert err.reason == "ADDRESS_NOT_FOUND", err
    assert missing not in {a.name for a in admin.list_addresses()}


def test_creating_a_queue_that_exists_is_refused_with_queue_exists(driver, session, admin):
    q = make_queue(driver, session, unique("conf.twice"))
    err = driver.error("create_queue", session=session, address=q, queue=q)
    assert err.reason == "QUEUE_EXISTS", err
    assert [name for name in queue_names(admin) if name == q] == [q]


def test_commit_on_a_session_that_is_not_transacted_is_refused_with_not_transacted(driver, session):
    err = driver.error("commit", session=session)
    assert err.reason == "NOT_TRANSACTED", err
    err = driver.error("rollback", session=session)
    assert err.reason == "NOT_TRANSACTED", err


def test_a_priority_above_9_is_refused_with_invalid_request(driver, session, admin):
    q = make_queue(driver, session, unique("conf.priority"))
    producer = driver.request("producer", session=session, address=q)["producer"]
    err = driver.error("send", producer=producer, body=b64("too urgent"), priority=10)
    assert err.reason == "INVALID_REQUEST", err
    assert admin.queue(q).message_count == 0


def test_a_send_to_a_full_address_with_the_fail_policy_is_refused_with_address_full(driver, session, admin):
    q = make_queue(driver, session, unique("full.orders"))
    producer = driver.request("producer", session=session, address=q)["producer"]
    driver.request("send", producer=producer, body=b64("1"))
    driver.request("send", producer=producer, body=b64("2"))
    err = driver.error("send", producer=producer, body=b64("3"))
    assert err.reason == "ADDRESS_FULL", err
    assert admin.queue(q).message_count == 2


def test_a_commit_the_router_rolled_back_raises_transaction_rolled_back(driver, router, admin):
    """The send was admitted into the transaction; at commit its address does not
    exist and may not be created, so the router rolls the whole transaction back."""
    conn = driver.request("connect", uri=router.url, user="admin", password="adm1n")["connection"]
    try:
        tx = driver.request("session", connection=conn, transacted=True)["session"]
        kept = make_queue(driver, tx, unique("conf.tx"))
        missing = unique("nocreate.tx")
        to_kept = driver.request("producer", session=tx, address=kept)["producer"]
        to_missing = driver.request("producer", session=tx, address=missing)["producer"]
        driver.request("send", producer=to_kept, body=b64("would be stored"))
        driver.request("send", producer=to_missing, body=b64("cannot be routed"))
        err = driver.error("commit", session=tx)
        assert err.reason == "TRANSACTION_ROLLED_BACK", err
        assert admin.queue(kept).message_count == 0  # nothing of the transaction was stored
        assert missing not in {a.name for a in admin.list_addresses()}
        # The session goes on: the next transaction commits.
        driver.request("send", producer=to_kept, body=b64("next"))
        driver.request("commit", session=tx)
        assert admin.queue(kept).message_count == 1
    finally:
        driver.request("close", handle=conn)


def test_a_message_too_large_for_one_frame_is_refused_with_message_too_large(driver, router, admin):
    """Large-message chunking off (minLargeMessageSize above the body): a 17 MiB
    body cannot travel in one 16 MiB frame."""
    uri = f"{router.url}?minLargeMessageSize=67108864"
    conn = driver.request("connect", uri=uri, user="admin", password="adm1n")["connection"]
    try:
        session = driver.request("session", connection=conn)["session"]
        q = make_queue(driver, session, unique("conf.toolarge"))
        producer = driver.request("producer", session=session, address=q)["producer"]
        err = driver.error("send", producer=producer, body=b64(bytes(17 * 1024 * 1024)), timeout=60)
        assert err.reason == "MESSAGE_TOO_LARGE", err
    finally:
        driver.request("close", handle=conn)
    assert admin.queue(q).message_count == 0


@pytest.mark.parametrize("uri", [
    "meshmq://127.0.0.1:61616?noSuchOption=1",
    "meshmq://127.0.0.1:61616?consumerWindowSize=lots",
    "tcp://127.0.0.1:61616",
    "meshmq://127.0.0.1:notaport",
])
def test_a_bad_uri_is_refused_with_invalid_request(driver, uri):
    err = driver.error("connect", uri=uri)
    assert err.reason == "INVALID_REQUEST", err
