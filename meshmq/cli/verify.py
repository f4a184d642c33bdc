"""`meshmq verify`: producers, consumers and optional faults on a live cluster,
then the report of what was lost, duplicated or unexpected (docs/verify.md).
The work is meshmq.verify."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import click

from meshmq.cli.common import fail, run_coroutine
from meshmq.config.defaults import CLIENT_URL


def _seconds(ctx, param, value):
    if value is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*", str(value))
    if not m:
        raise click.BadParameter(f"{value!r} is not a duration (e.g. 60s, 500ms, 2m, 30)")
    n = float(m.group(1))
    return n / 1000 if m.group(2) == "ms" else n * 60 if m.group(2) == "m" else n


def _local_cluster(spec_file, run_dir):
    from meshmq.config.loader import ConfigError
    from meshmq.launcher import ClusterError, LocalCluster, load_cluster_spec

    if spec_file is None and run_dir is None:
        return None
    try:
        lc = LocalCluster(load_cluster_spec(spec_file), run_dir) if spec_file else LocalCluster.attach(run_dir)
        lc.load_state()
    except (ConfigError, ClusterError) as exc:
        fail(str(exc))
    return lc


def _gateway_login(lc) -> tuple[str, str]:
    """A local cluster's gateway in dev mode with no users logs in as its built-in admin (services/gateway/auth.py)."""
    from meshmq.config.loader import load_config

    record = lc.state.gateway
    config = load_config(record.config)
    if config.gateway.dev_mode and not config.users:
        return "admin", "admin"
    return "", ""


@click.command("verify")
@click.option("--url", default=None, help=f"The cluster (default: the local cluster's nodes, else {CLIENT_URL}).")
@click.option("-f", "--file", "spec_file", type=click.Path(dir_okay=False),
              help="A local cluster's file (meshmq cluster up): needed for faults.")
@click.option("--run-dir", type=click.Path(file_okay=False), help="A local cluster's run directory.")
@click.option("--duration", default="60s", show_default=True, callback=_seconds, help="How long producers send.")
@click.option("--producers", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--consumers", default=0, show_default=True, type=click.IntRange(min=0), help="0 = one per node.")
@click.option("--rate", default=200.0, show_default=True, type=click.FloatRange(min=0),
              help="Messages per second, all producers together (0 = as fast as confirms come).")
@click.option("--queue", default="meshmq.verify", show_default=True,
              help="The verify queue (anycast, on every node; created if missing, purged at start).")
@click.option("--kill-node", "kill_nodes", multiple=True, help="kill -9 this node and start it again (repeatable).")
@click.option("--pause-node", "pause_nodes", multiple=True, help="SIGSTOP this node, then SIGCONT (repeatable).")
@click.option("--restart-etcd", is_flag=True, help="kill -9 etcd and start it again.")
@click.option("--every", default="20s", show_default=True, callback=_seconds, help="Time between faults.")
@click.option("--down-for", default="1s", show_default=True, callback=_seconds, help="How long a fault lasts.")
@click.option("--drain-timeout", default="60s", show_default=True, callback=_seconds,
              help="How long to wait for every confirmed message after sending stops.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON instead of tables.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Write the full JSON report here.")
@click.option("--gateway", default=None,
              help="Post the report to this admin gateway (default: the local cluster's gateway, if any).")
@click.option("--gateway-token", default=None, envvar="MESHMQ_GATEWAY_TOKEN",
              help="A bearer token for the gateway (default: log in with the URL's user, or a dev-mode "
                   "gateway's built-in admin). Env: MESHMQ_GATEWAY_TOKEN.")
@click.option("--no-gateway", is_flag=True, help="Do not post the report.")
def verify(url, spec_file, run_dir, duration, producers, consumers, rate, queue, kill_nodes, pause_nodes,
           restart_etcd, every, down_for, drain_timeout, as_json, report_path, gateway, gateway_token,
           no_gateway) -> None:
    """Check a live cluster for lost and duplicated messages.

    Producers send durable messages with duplicate ids and wait for confirms,
    consumers drain the verify queue; optional faults hit a local cluster.
    Then: sent, confirmed, in doubt, received, lost, duplicated, unexpected,
    out of order. Exit status 0 when nothing was lost, duplicated or unexpected,
    1 otherwise (2: bad arguments or no cluster)."""
    from meshmq.verify import Verifier, VerifyOptions, render
    from meshmq.verify.faults import KillNode, PauseNode, RestartEtcd, check_targets

    lc = _local_cluster(spec_file, run_dir)
    wants_faults = bool(kill_nodes or pause_nodes or restart_etcd)
    if wants_faults and lc is None:
        fail("faults (--kill-node, --pause-node, --restart-etcd) need a local cluster started by "
             "`meshmq cluster up`: name it with -f FILE or --run-dir DIR")
    if wants_faults and every <= 0:
        fail("--every must be more than 0 s")
    if lc is not None:
        problems = check_targets(lc, [*kill_nodes, *pause_nodes])
        if problems:
            fail("; ".join(problems))
    url = url or (lc.state.url if lc is not None else CLIENT_URL)
    faults = [*(KillNode(lc, n) for n in kill_nodes), *(PauseNode(lc, n) for n in pause_nodes),
              *([RestartEtcd(lc)] if restart_etcd else [])]
    options = VerifyOptions(url=url, duration=duration, producers=producers, consumers=consumers, queue=queue,
                            rate=rate, drain_timeout=drain_timeout, every=every, down_for=down_for)
    report = run_coroutine(Verifier(options, faults).run())
    if report is None:
        sys.exit(130)
    full = report.to_dict()
    if report_path:
        Path(report_path).write_text(json.dumps(full, indent=2) + "\n")
    if as_json:
        click.echo(json.dumps(full, indent=2))
    else:
        render(report)
    if not no_gateway:
        _publish(report, gateway, gateway_token, lc, url)
    sys.exit(0 if report.passed else 1)


def _publish(report, gateway, token, lc, url) -> None:
    from meshmq.client import parse_uri
    from meshmq.verify.publish import POSTED_IDS, post_report

    if gateway is None and lc is not None and lc.state.gateway is not None and lc.state.gateway.endpoint:
        gateway = lc.state.gateway.endpoint
    if not gateway:
        return
    options = parse_uri(url).options
    username, password = options.username, options.password
    trust = os.environ.get("SSL_CERT_FILE") or (lc.state.trust_store if lc is not None else "") or True
    try:
        if not token and not username and lc is not None and lc.state.gateway is not None:
            username, password = _gateway_login(lc)
        where = post_report(gateway, report.to_dict(max_ids=POSTED_IDS), token=token or "", username=username,
                            password=password, verify_tls=trust)
    except Exception as exc:  # the check is done: a gateway that cannot take it is a warning
        click.secho(f"warning: the report was not posted to the gateway: {exc}", fg="yellow", err=True)
        return
    click.echo(f"report posted: {where}", err=True)
