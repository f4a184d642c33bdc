"""Request bodies are capped before they are read: a huge body before log-in
is refused with 413 without the gateway process growing by its size, a
logged-in caller has a larger cap, and a normal log-in still works."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.integration

FIFTY_MB = 50 * 1024 * 1024
# Reading a 50 MB body makes the gateway hold at least that much; refusing it unread, almost nothing.
GROWTH_BOUND = 20 * 1024 * 1024


def _peak_rss(pid: int) -> int:
    """The process's peak resident set (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


def _chunks(total: int, size: int = 1024 * 1024):
    sent = 0
    while sent < total:
        yield b"x" * min(size, total - sent)
        sent += size


def _refused(r: httpx.Response, limit: int, key: str) -> None:
    assert r.status_code == 413, r.text
    body = r.json()
    assert body["reason"] == "BODY_TOO_LARGE", body
    assert str(limit) in body["detail"] and key in body["detail"], body


def test_a_50_mb_body_before_log_in_is_refused_unread_and_log_in_still_works(stack):
    pid = stack.gateway.proc.pid
    anonymous = stack.client()
    assert anonymous.get("/healthz").status_code == 200
    before = _peak_rss(pid)
    # With a Content-Length: refused on the headers alone.
    declared = anonymous.post("/api/v1/auth/token", content=b"x" * FIFTY_MB,
                              headers={"content-type": "application/json"})
    _refused(declared, 16 * 1024, "gateway.max-anonymous-body-size")
    # Chunked, with no length to go by: refused once the chunks pass the limit.
    chunked = stack.client().post("/api/v1/auth/token", content=_chunks(FIFTY_MB),
                                  headers={"content-type": "application/json"})
    _refused(chunked, 16 * 1024, "gateway.max-anonymous-body-size")
    grown = _peak_rss(pid) - before
    assert grown < GROWTH_BOUND, f"the gateway's peak RSS grew by {grown / 2**20:.0f} MiB"
    # A log-in's own body is well inside the limit.
    admin = stack.client("admin")
    assert admin.get("/api/v1/whoami").json()["username"] == "admin"


def test_a_logged_in_caller_has_the_larger_limit(stack):
    admin = stack.client("admin")
    # 64 KiB: over the anonymous limit, under the logged-in one (a field the API ignores pads it).
    body = {"name": "gw.limit", "filter": "", "padding": "x" * 64 * 1024}
    assert admin.post("/api/v1/nodes/node/queues", json=body).status_code == 201
    _refused(admin.post("/api/v1/nodes/node/queues", content=b"x" * (2 * 1024 * 1024),
                        headers={"content-type": "application/json"}), 1024 * 1024, "gateway.max-body-size")
    _refused(stack.client().post("/api/v1/nodes/node/queues", json=body), 16 * 1024,
             "gateway.max-anonymous-body-size")
