"""`meshmq perf`: throughput and latency through the SDK, with a progress bar."""

from __future__ import annotations

import json

import click

from meshmq import perf as p
from meshmq.cli.common import run_coroutine
from meshmq.config.defaults import CLIENT_URL


def _progress_run(total: int, make):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("messages", total=total)
        return run_coroutine(make(lambda n: bar.advance(task, n)))


def _print(results, as_json: bool) -> None:
    for r in results:
        s = r.summary()
        if as_json:
            click.echo(json.dumps(s))
        else:
            click.echo(
                f"{s['role']:>10}: {s['messages']} msgs in {s['seconds']:.2f} s = {s['rate']:,.0f} msg/s"
                + (f"; latency p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, max {s['max_ms']} ms" if r.latencies_ms else "")
            )


_common = [
    click.option("--url", default=CLIENT_URL, show_default=True),
    click.option("--count", default=100_000, show_default=True, type=click.IntRange(min=1)),
    click.option("--json", "as_json", is_flag=True, help="One JSON object per result line."),
]


def common(f):
    for opt in reversed(_common):
        f = opt(f)
    return f


@click.group()
def perf() -> None:
    """Measure throughput (msg/s) and latency percentiles."""


_RATE = click.option(
    "--rate",
    type=click.FloatRange(min=1),
    default=None,
    help="Send at this many msg/s (open loop; latency counted from when each message was due). "
    "Default: as fast as the confirmation window allows.",
)


@perf.command("producer")
@common
@click.option("--address", default="perf", show_default=True)
@click.option("--size", default=1024, show_default=True, help="Body bytes.")
@click.option("--durable/--non-durable", default=True, show_default=True)
@_RATE
def perf_producer(url, count, as_json, address, size, durable, rate) -> None:
    """Send COUNT messages; confirm latency per message."""
    r = _progress_run(count, lambda prog: p.produce(url, address, count, size, durable, prog, rate))
    _print([r], as_json)


@perf.command("consumer")
@common
@click.option("--queue", default="perf", show_default=True)
def perf_consumer(url, count, as_json, queue) -> None:
    """Receive and acknowledge COUNT messages."""
    r = _progress_run(count, lambda prog: p.consume(url, queue, count, progress=prog))
    _print([r], as_json)


@perf.command("client")
@common
@click.option("--address", default="perf", show_default=True)
@click.option("--size", default=1024, show_default=True)
@click.option("--durable/--non-durable", default=True, show_default=True)
@_RATE
def perf_client(url, count, as_json, address, size, durable, rate) -> None:
    """One producer and one consumer at once, end to end."""
    results = _progress_run(count, lambda prog: p.client(url, address, count, size, durable, prog, rate))
    _print(results, as_json)
