"""`meshmq verify --gateway` against a secured router: the report is posted with
the URL's user (manage role), the gateway keeps it for the REST API and the
console's Verify page; a view-only user may read it and not post one; a bad
report is refused naming the field."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


async def test_a_verify_run_is_posted_with_the_urls_user_and_shown_to_viewers(stack, tmp_path):
    admin, viewer = stack.client("admin"), stack.client("viewer")
    assert viewer.get("/api/v1/verify/runs/last").status_code == 404
    report_file = tmp_path / "report.json"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "meshmq.cli.main", "verify", "--url", stack.sdk_url, "--duration", "2s",
         "--producers", "2", "--rate", "100", "--gateway", stack.base, "--report", str(report_file)],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_file.read_text())
    assert report["passed"] and report["counts"]["lost"] == 0 and report["counts"]["confirmed"] > 100
    last = viewer.get("/api/v1/verify/runs/last").json()
    assert (last["run_id"], last["counts"], last["posted_by"]) == (report["run_id"], report["counts"], "admin")
    assert [r["run_id"] for r in viewer.get("/api/v1/verify/runs").json()] == [report["run_id"]]
    page = viewer.get("/verify")
    assert page.status_code == 200 and f'id="count-sent">{report["counts"]["sent"]}<' in page.text

    refused = viewer.post("/api/v1/verify/runs", json=report)
    assert refused.status_code == 403 and "view-only" in refused.json()["detail"]
    bad = admin.post("/api/v1/verify/runs", json={**report, "counts": {**report["counts"], "lost": -1}})
    assert bad.status_code == 422 and "lost" in bad.text
    assert viewer.get("/api/v1/verify/runs/last").json()["run_id"] == report["run_id"]
