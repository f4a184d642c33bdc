"""Router metrics with security enabled (meshmq/metrics_access.py,
docs/metrics.md): a scrape proves a user who may view the management state,
over HTTPS when the node serves TLS; real routers scraped with httpx."""

from __future__ import annotations

import ssl

import httpx
import pytest

from meshmq.client import connect
from tests.integration.test_security import certs  # noqa: F401 - the fixture: a CA and a cert for 127.0.0.1

pytestmark = pytest.mark.integration

SECURED = """
security-enabled: true
metrics: {enabled: true, host: 127.0.0.1, port: 0}
users:
  - {username: admin, password: a, roles: [admins]}
  - {username: mon, password: m, roles: [monitoring]}
  - {username: app, password: p, roles: [apps]}
security-settings:
  "#": {send: [admins, apps], consume: [admins, apps], create-address: [admins], create-durable-queue: [admins]}
  "activemq.management":
    manage: [admins]
    view: [monitoring]
"""
SECRET_QUEUE = "payroll.transfers"


async def get(url: str, auth: tuple[str, str] | None = None, verify: ssl.SSLContext | bool = True) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10, verify=verify) as client:
        return await client.get(url, auth=auth)


async def test_with_security_a_scrape_needs_a_user_who_may_view_the_management_state(nodes) -> None:
    node = nodes.router("metered-secure", extra=SECURED)
    async with await connect(f"meshmq://admin:a@{node.endpoint}") as admin:
        await admin.admin.create_queue(SECRET_QUEUE, routing_type="anycast")
    url = node.info["metrics"]
    for auth in (None, ("mon", "wrong"), ("nobody", "m")):
        refused = await get(url, auth)
        assert refused.status_code == 401, (auth, refused.status_code)
        assert refused.headers["www-authenticate"].startswith('Basic realm="meshmq metrics"')
        assert SECRET_QUEUE not in refused.text and "meshmq_queue" not in refused.text
    forbidden = await get(url, ("app", "p"))
    assert forbidden.status_code == 403
    assert "user 'app' may not view address 'activemq.management'" in forbidden.text
    assert SECRET_QUEUE not in forbidden.text
    for auth in (("mon", "m"), ("admin", "a")):  # view, and manage (which implies it)
        ok = await get(url, auth)
        assert ok.status_code == 200
        assert f'queue="{SECRET_QUEUE}"' in ok.text


async def test_a_node_with_tls_serves_its_metrics_over_https_only(nodes, certs) -> None:  # noqa: F811
    node = nodes.router("metered-tls", extra=SECURED + f"""
acceptors:
  - {{name: tls, host: 127.0.0.1, port: 0, ssl-enabled: true,
     cert-path: {certs / 'server.pem'}, key-path: {certs / 'server-key.pem'}}}
""")
    url = node.info["metrics"]
    assert url.startswith("https://127.0.0.1:")
    with pytest.raises(httpx.TransportError):  # plain HTTP to it: no answer
        await get(url.replace("https://", "http://", 1), ("mon", "m"))
    with pytest.raises(httpx.ConnectError):  # a scraper that does not trust the cluster's CA
        await get(url, ("mon", "m"))
    trusted = ssl.create_default_context(cafile=str(certs / "ca" / "ca.pem"))
    assert (await get(url, verify=trusted)).status_code == 401
    ok = await get(url, ("mon", "m"), verify=trusted)
    assert ok.status_code == 200 and "meshmq_router_active" in ok.text


async def test_guessing_a_scrape_password_is_slowed_and_the_owner_still_gets_in(nodes) -> None:
    """Failed scrapes count as failed log-ins (login-throttle): past the free
    attempts each guess waits its back-off (at most max-delay); guesses sent
    at once from one address beyond that are answered 429 at once; the owner
    gets in from another address with the right password within max-delay."""
    import asyncio
    import time

    node = nodes.router("metered-guessed", extra=SECURED + """
login-throttle: {free-attempts: 2, initial-delay: 200, max-delay: 400}
""")
    url = node.info["metrics"]
    started = time.monotonic()
    statuses = [(await get(url, ("mon", f"guess-{i}"))).status_code for i in range(6)]
    slowed = time.monotonic() - started
    assert statuses == [401] * 6
    assert slowed >= 0.2 + 0.4 * 3, slowed  # the 3rd waited initial-delay, the 4th to 6th max-delay
    at_once = await asyncio.gather(*(get(url, ("nobody", f"guess-{i}")) for i in range(8)))
    codes = sorted(r.status_code for r in at_once)
    assert set(codes) <= {401, 429} and codes.count(429) >= 5, codes  # turns beyond max-delay: refused at once
    throttled = next(r for r in at_once if r.status_code == 429)
    assert int(throttled.headers["retry-after"]) >= 1 and SECRET_QUEUE not in throttled.text
    started = time.monotonic()
    # The owner, from another address, while the guesser's address is still in back-off.
    async with httpx.AsyncClient(timeout=10, transport=httpx.AsyncHTTPTransport(local_address="127.0.0.2")) as owner:
        ok = await owner.get(url, auth=("mon", "m"))
    assert ok.status_code == 200, ok.text
    assert time.monotonic() - started < 0.4 + 1.0  # at most max-delay (and one scrypt) for the owner
    assert f'queue="{SECRET_QUEUE}"' in ok.text or "meshmq_" in ok.text
