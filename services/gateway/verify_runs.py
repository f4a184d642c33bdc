"""The last `meshmq verify` runs: posted by the command (POST
/api/v1/verify/runs, manage role), kept in this gateway's memory
(verify_store.py), shown by GET /api/v1/verify/runs[/last] and the console's
Verify page (/verify)."""

from __future__ import annotations

import time

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from .api import GW, Manager, Viewer
from .auth import session_key
from .console import templates
from .problems import RESPONSES
from .verify_store import VerifyCounts, VerifyRun, VerifyRunSummary

router = APIRouter(prefix="/api/v1/verify", tags=["verify"], responses=RESPONSES)


@router.post("/runs", status_code=201, response_model=VerifyRunSummary)
async def post_run(body: VerifyRun, gw: GW, who: Manager) -> VerifyRunSummary:
    """Keep a `meshmq verify` report (the command posts it when given --gateway, or a local cluster's gateway)."""
    run = body.model_copy(update={"posted_by": who.username, "posted_at": time.time()})
    gw.verify_runs.add(run)
    return _summary(run)


@router.get("/runs", response_model=list[VerifyRunSummary])
async def list_runs(gw: GW, who: Viewer) -> list[VerifyRunSummary]:
    """The runs kept (up to 20, oldest first)."""
    return [_summary(r) for r in gw.verify_runs.all()]


@router.get("/runs/last", response_model=VerifyRun)
async def last_run(gw: GW, who: Viewer) -> VerifyRun:
    """The last run's whole report."""
    run = gw.verify_runs.last()
    if run is None:
        raise HTTPException(404, "no verify run was posted to this gateway since it started (meshmq verify --gateway)")
    return run


def _summary(run: VerifyRun) -> VerifyRunSummary:
    return VerifyRunSummary(run_id=run.run_id, passed=run.passed, finished_at=run.finished_at,
                            posted_by=run.posted_by, counts=run.counts)


# --- the console page ------------------------------------------------------------

page_router = APIRouter(include_in_schema=False)


@page_router.get("/verify")
async def verify_page(request: Request) -> Response:
    gw = request.app.state.gateway
    who = gw.sessions.get(session_key(request))
    if who is None:
        return RedirectResponse("/login?next=/verify", status_code=303)
    runs = gw.verify_runs.all()
    return templates.TemplateResponse(request, "verify.html", {
        "who": who, "run": runs[-1] if runs else None, "earlier": list(reversed(runs[:-1])),
        "count_names": list(VerifyCounts.model_fields), "failing": {"lost", "duplicated", "unexpected"},
        "flash": "", "error": "",
    })

