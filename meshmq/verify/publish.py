"""Post a verify report to the admin gateway (POST /api/v1/verify/runs, manage
role), where the console's Verify page shows the last runs."""

from __future__ import annotations

import httpx

# Ids per kind posted to the gateway (the totals are in the counts).
POSTED_IDS = 1000


def post_report(gateway: str, report: dict, *, token: str = "", username: str = "", password: str = "",
                verify_tls: bool | str = True) -> str:
    """Log in (unless given a bearer token) and post; returns the run's URL on the gateway.
    httpx.HTTPError or RuntimeError (with the gateway's answer) when it fails."""
    base = gateway.rstrip("/")
    with httpx.Client(base_url=base, timeout=15, verify=verify_tls) as http:
        if not token:
            login = http.post("/api/v1/auth/token", json={"username": username, "password": password})
            if login.status_code != 200:
                raise RuntimeError(f"log-in to {base} refused ({login.status_code}): {_detail(login)}")
            token = login.json()["token"]
        posted = http.post("/api/v1/verify/runs", json=report, headers={"Authorization": f"Bearer {token}"})
        if posted.status_code != 201:
            raise RuntimeError(f"{base} refused the report ({posted.status_code}): {_detail(posted)}")
    return f"{base}/verify"


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", response.text))
    except ValueError:
        return response.text[:200]
