"""deploy/monitoring/'s alert rules, loaded by a real Prometheus (Debian's,
scripts/setup.sh --test) that scrapes a real router: valid for promtool, and
the disk alarm's rule fires, naming the node, while the router is in alarm."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.fixtures.nodes import eventually, free_port
from tests.metrics.test_metrics import METRICS

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
RULES = MONITORING / "meshmq-rules.yml"


def _binary(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is needed (Debian's prometheus package: scripts/setup.sh --test installs it)"
    return found


def test_promtool_accepts_the_rules_and_the_compose_config(tmp_path: Path) -> None:
    checked = subprocess.run([_binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0 and "SUCCESS: 10 rules found" in checked.stdout, checked.stdout + checked.stderr
    config = tmp_path / "prometheus.yml"
    config.write_text((MONITORING / "prometheus.yml").read_text().replace("/etc/prometheus/meshmq-rules.yml",
                                                                         str(RULES)))
    checked = subprocess.run([_binary("promtool"), "check", "config", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.integration
async def test_the_disk_alarm_rule_fires_for_a_router_in_disk_alarm(nodes, tmp_path: Path) -> None:
    router = nodes.router("alerting", extra=METRICS + "max-disk-usage: 0\ndisk-scan-period: 200\n")
    target = router.info["metrics"].removeprefix("http://").removesuffix("/metrics")
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: [{RULES}]
scrape_configs:
  - job_name: meshmq-routers
    static_configs: [{{targets: ["{target}"]}}]
""")
    port = free_port()
    log = (tmp_path / "prometheus.log").open("w")
    prometheus = subprocess.Popen(
        [_binary("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            async def firing():
                try:
                    alerts = (await client.get("/api/v1/alerts")).json()["data"]["alerts"]
                except (httpx.HTTPError, ValueError):  # not up yet, or not ready (a text answer)
                    return None
                mine = [a for a in alerts if a["labels"]["alertname"] == "MeshmqDiskAlarm" and a["state"] == "firing"]
                return mine or None

            [alert] = await eventually(firing, 60, "Prometheus to fire MeshmqDiskAlarm")
            assert alert["labels"]["node"] == "alerting" and alert["labels"]["severity"] == "critical"
            assert "producers are blocked" in alert["annotations"]["summary"]
    finally:
        prometheus.terminate()
        prometheus.wait(10)
        log.close()
