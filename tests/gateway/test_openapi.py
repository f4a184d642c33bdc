"""Schemathesis against a live gateway (in front of a real secured router):
every operation of the OpenAPI document, with generated valid and invalid
input, logged in as a manager; no response may be a 5xx and every one must
match the document (status, content type, schema)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CHECKS = ",".join(("not_a_server_error", "status_code_conformance", "content_type_conformance",
                   "response_schema_conformance", "response_headers_conformance"))


def test_every_operation_answers_as_its_openapi_document_says(stack, tmp_path):
    admin = stack.client("admin")
    # Something to find: a queue with a message, so browsing and moving meet real data too.
    assert admin.post("/api/v1/nodes/node/queues", json={"name": "st.queue"}).status_code == 201
    token = admin.headers["Authorization"]
    schemathesis = Path(sys.executable).with_name("schemathesis")
    report = tmp_path / "schemathesis.junit.xml"
    run = subprocess.run(
        [str(schemathesis), "run", f"{stack.base}/api/openapi.json", "--url", stack.base,
         "--header", f"Authorization: {token}", "--checks", CHECKS, "--max-examples", "40",
         "--seed", "14", "--generation-deterministic", "--no-shrink", "--continue-on-failure",
         # Logging out would end the run's own session: every later operation would be a 401.
         "--exclude-operation-id-regex", "^revoke_token",
         "--report", "junit", "--report-junit-path", str(report)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"})
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    assert "No issues found" in out or "passed" in out, out[-3000:]
