"""A secured router and a gateway process in front of it, both real processes
on loopback with ports picked at run time."""

from __future__ import annotations

import httpx
import pytest

from meshmq.security.passwords import hash_password
from tests.fixtures.nodes import Nodes, ServiceProcess, free_port

# (username, password, roles): admin manages, viewer views, guest has a default password.
USERS = (("admin", "s3cret-admin", "admins"), ("viewer", "s3cret-viewer", "viewers"),
         ("guest", "guest", "admins"))

SECURITY = """
security-enabled: true
users:
{users}
security-settings:
  "#":
    send: [admins]
    consume: [admins]
    browse: [admins, viewers]
    create-address: [admins]
    delete-address: [admins]
    create-durable-queue: [admins]
    delete-durable-queue: [admins]
    create-non-durable-queue: [admins]
    delete-non-durable-queue: [admins]
    manage: [admins]
    view: [viewers]
addresses:
  DLQ: {{anycast: [{{name: DLQ}}]}}
  ExpiryQueue: {{anycast: [{{name: ExpiryQueue}}]}}
address-settings:
  "#": {{dead-letter-address: DLQ, expiry-address: ExpiryQueue, max-delivery-attempts: 2}}
"""


def security_yaml() -> str:
    users = "\n".join(f"  - {{username: {u}, password: '{hash_password(p)}', roles: [{r}]}}" for u, p, r in USERS)
    return SECURITY.format(users=users)


class Stack:
    """The router, the gateway, and an HTTP client per user."""

    def __init__(self, nodes: Nodes, router: ServiceProcess, gateway: ServiceProcess) -> None:
        self.nodes = nodes
        self.router = router
        self.gateway = gateway
        self.base = gateway.endpoint
        self._clients: list[httpx.Client] = []

    @property
    def sdk_url(self) -> str:
        return f"meshmq://admin:s3cret-admin@{self.router.endpoint}?useTopologyForLoadBalancing=false"

    def client(self, username: str | None = None, password: str | None = None) -> httpx.Client:
        """A client logged in with a bearer token (anonymous without a username)."""
        c = httpx.Client(base_url=self.base, timeout=30)
        self._clients.append(c)
        if username is not None:
            password = password or dict((u, p) for u, p, _ in USERS)[username]
            r = c.post("/api/v1/auth/token", json={"username": username, "password": password})
            assert r.status_code == 200, r.text
            c.headers["Authorization"] = f"Bearer {r.json()['token']}"
        return c

    def close(self) -> None:
        for c in self._clients:
            c.close()


def gateway_config(router_endpoint: str, extra: str = "") -> str:
    return f"""
name: gateway
connectors:
  node: {router_endpoint}
gateway:
  listen: {{host: 127.0.0.1, port: 0}}
  static-connectors: [node]
{security_yaml()}
{extra}
"""


@pytest.fixture
def stack(tmp_path):
    nodes = Nodes(tmp_path)
    # A fixed port: a restarted router is found where the gateway's connector says.
    acceptor = f"acceptors: [{{name: grpc, host: 127.0.0.1, port: {free_port()}}}]\n"
    router = nodes.router("node", extra=acceptor + security_yaml())
    gateway = ServiceProcess(tmp_path, "gateway", "gateway", gateway_config(router.endpoint))
    nodes.started.append(gateway)
    gateway.start()
    s = Stack(nodes, router, gateway)
    yield s
    s.close()
    nodes.stop_all()
