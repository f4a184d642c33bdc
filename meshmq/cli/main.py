"""The `meshmq` command."""

from __future__ import annotations

import asyncio
import importlib
import sys

import click

from meshmq import __version__
from meshmq.cli.common import fail, run_coroutine
from meshmq.config import defaults
from meshmq.config.loader import ConfigError, default_dev_config_yaml, effective_config_yaml, load_config, load_config_text

DEFAULT_URL = defaults.CLIENT_URL


def _load(path: str):
    try:
        return load_config(path)
    except ConfigError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read config {path}: {exc.strerror}")


def _serve(config, name: str, ready_file: str | None, quiet: bool, *, refusal_hint: str = "") -> None:
    """Run one installed service (meshmq/service_registry.py) until a signal.
    `refusal_hint` follows the error when the config may not start it (security/exposure.py)."""
    import logging

    from meshmq.runtime import (
        NodeHalted,
        ScaleDownFailed,
        defer_collection,
        keep_files_private,
        settle_heap,
        setup_logging,
    )
    from meshmq.security.exposure import open_banner, start_problems, start_warnings
    from meshmq.service_registry import UnknownServiceError, service

    defer_collection()
    keep_files_private()
    try:
        svc = service(name)
    except UnknownServiceError as exc:
        fail(str(exc))
    problems = start_problems(config, name)
    if problems:
        fail("\n".join(problems) + refusal_hint)
    setup_logging(config.name)
    try:
        shown = effective_config_yaml(config, computed=True)
    except ValueError as exc:  # MESHMQ_MEMORY_LIMIT that is not a size
        fail(str(exc))
    if not quiet:
        click.echo("# effective configuration\n" + shown, err=True)
    banner = open_banner(config, name)
    if banner is not None:  # after the effective configuration, where it is seen
        logging.getLogger("meshmq.security").warning(banner)
    for warning in start_warnings(config, name):
        logging.getLogger("meshmq.security").warning(warning)

    def announce(info: dict) -> None:
        click.echo(svc.ready_line(info))
        sys.stdout.flush()

    settle_heap()  # before the service runs: one that waits long before it is ready still collects
    try:
        run_coroutine(svc.run(config, ready_file=ready_file, on_ready=announce))
    except NodeHalted as exc:
        click.secho(f"error: node halted: {exc}", fg="red", err=True)
        sys.exit(3)
    except ScaleDownFailed as exc:
        click.secho(f"error: scale-down failed: {exc}", fg="red", err=True)
        sys.exit(4)
    except (RuntimeError, OSError) as exc:  # start-up failures (a store that cannot open, a port taken): say what
        fail(str(exc))


class _TopCommands(click.Group):
    """The `meshmq` group. The command groups of other modules are imported
    when run or listed, not at every start: `meshmq serve` (a router start,
    which the test suite and a launcher's cluster make by the hundred) would
    otherwise import the analytics, launcher, verify and perf code it never
    uses (~40 ms of CPU)."""

    ELSEWHERE = {
        "analytics": "meshmq.cli.analytics:analytics",
        "certs": "meshmq.cli.security:certs",
        "cluster": "meshmq.cli.cluster:cluster",
        "connection": "meshmq.cli.connections:connection",
        "perf": "meshmq.cli.perf:perf",
        "user": "meshmq.cli.security:user",
        "verify": "meshmq.cli.verify:verify",
    }

    def list_commands(self, ctx) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.ELSEWHERE})

    def get_command(self, ctx, name: str) -> click.Command | None:
        if name in self.ELSEWHERE:
            module, attr = self.ELSEWHERE[name].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


@click.group(cls=_TopCommands)
@click.version_option(__version__, prog_name="meshmq")
def main() -> None:
    """meshmq: a clustered message broker."""


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Node config YAML (default: the starter config).")
@click.option("--data-dir", default="./data", show_default=True, help="Where the embedded SQLite journal lives.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=defaults.ACCEPTOR_PORT, show_default=True, type=int)
@click.option("--console-port", default=8161, show_default=True, type=int,
              help="The admin console and REST API (0 = pick a free port).")
@click.option("--ready-file", type=click.Path(dir_okay=False), help="Write a JSON line with the endpoints once listening.")
@click.option("--quiet", is_flag=True, help="Do not print the effective configuration.")
@click.pass_context
def up(ctx, config_path, data_dir, host, port, console_port, ready_file, quiet) -> None:
    """Start one node on the embedded default: router + journal in this process, SQLite under --data-dir."""
    if config_path:
        given = [
            f"--{name.replace('_', '-')}" for name in ("data_dir", "host", "port")
            if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            fail(
                f"{', '.join(given)} shape the starter config and cannot be combined with --config; "
                f"set them in {config_path} (acceptors[0].host/port, data-directory)"
            )
        config = _load(config_path)
    else:
        try:
            config = load_config_text(
                default_dev_config_yaml(host=host, port=port, data_directory=data_dir, console_port=console_port),
                source="<meshmq up>"
            )
        except ConfigError as exc:
            fail(str(exc))
    hint = "" if config_path else (
        "\nThe starter config does not decide that for you: `meshmq config default > node.yaml`, set the host and "
        "security-enabled there, then `meshmq up --config node.yaml`")
    _serve(config, "router", ready_file, quiet, refusal_hint=hint)


class _ServiceCommands(click.Group):
    """`meshmq serve NAME` for every service installed under the meshmq.services entry points."""

    def list_commands(self, ctx) -> list[str]:
        from meshmq.service_registry import service_names

        return service_names()

    def get_command(self, ctx, name: str) -> click.Command | None:
        from meshmq.service_registry import UnknownServiceError, service

        try:
            svc = service(name)
        except UnknownServiceError:
            return None

        @click.command(name, help=svc.summary)
        @click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False))
        @click.option("--ready-file", type=click.Path(dir_okay=False))
        @click.option("--quiet", is_flag=True)
        def run(config_path, ready_file, quiet) -> None:
            _serve(_load(config_path), name, ready_file, quiet)

        return run


@main.group(cls=_ServiceCommands)
def serve() -> None:
    """Run one service from a node config file."""


@main.group()
def config() -> None:
    """Check or print node configurations."""


@config.command("check")
@click.argument("path", type=click.Path(dir_okay=False))
def config_check(path) -> None:
    """Validate a config file and print the effective configuration."""
    click.echo(effective_config_yaml(_load(path)), nl=False)


@config.command("default")
def config_default() -> None:
    """Print the starter configuration `meshmq up` uses."""
    click.echo(default_dev_config_yaml(), nl=False)


def _parse_props(items: tuple[str, ...]) -> dict:
    props = {}
    for item in items:
        if "=" not in item:
            fail(f"--property {item!r}: expected NAME=VALUE")
        key, raw = item.split("=", 1)
        value: object = raw
        for conv in (int, float):
            try:
                value = conv(raw)
                break
            except ValueError:
                pass
        if raw in ("true", "false"):
            value = raw == "true"
        props[key] = value
    return props


@main.command()
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--address", required=True)
@click.option("--body", default="", help="Message body text.")
@click.option("--body-file", type=click.File("rb"), help="Read the body from a file ('-' for stdin).")
@click.option("--count", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--property", "-p", "properties", multiple=True, help="NAME=VALUE (int, float, true/false or text).")
@click.option("--durable/--non-durable", default=True, show_default=True)
@click.option("--priority", default=4, show_default=True, type=click.IntRange(0, 9))
@click.option("--ttl", default=0, help="Time to live in ms (0 = never expires).")
@click.option("--duplicate-id", default="", help="Duplicate-detection id (with --count > 1, suffixed with -N).")
@click.option(
    "--routing-type",
    type=click.Choice(["anycast", "multicast"]),
    default="anycast",
    show_default=True,
    help="anycast: to a queue named like the address (created if absent); multicast: to every subscription.",
)
@click.option("--reply-to", default="", help="JMSReplyTo: the address a reply goes to.")
@click.option("--correlation-id", default="", help="JMSCorrelationID.")
@click.option("--type", "type_", default="", help="JMSType.")
@click.option("--group-id", default="", help="JMSXGroupID (_AMQ_GROUP_ID): a message group.")
@click.option("--group-seq", default=0, type=click.IntRange(-(2**31), 2**31 - 1),
              help="JMSXGroupSeq (_AMQ_GROUP_SEQUENCE); -1 closes the group. With --count > 1 and a "
                   "positive value, numbered from it.")
@click.option("--delivery-time", default=None, callback=lambda ctx, param, value: _delivery_time(value),
              help="Scheduled delivery (_AMQ_SCHED_DELIVERY): ms since the epoch, or an ISO 8601 time "
                   "(2030-01-02T03:04:05Z; without a zone, local time).")
@click.option("--delivery-delay", default=0, type=click.IntRange(min=0),
              help="Scheduled delivery (_AMQ_SCHED_DELAY): ms after the router accepts the message.")
def send(url, address, body, body_file, count, properties, durable, priority, ttl, duplicate_id, routing_type,
         reply_to, correlation_id, type_, group_id, group_seq, delivery_time, delivery_delay) -> None:
    """Send messages and wait for their confirms."""
    from meshmq.client import connect

    payload = body_file.read() if body_file else body.encode()
    props = _parse_props(properties)
    headers = dict(reply_to=reply_to, correlation_id=correlation_id, type=type_, group_id=group_id,
                   delivery_time=delivery_time, delivery_delay=delivery_delay)

    async def go():
        async with await connect(url) as conn:
            session = await conn.session()
            producer = await session.create_producer(address)
            futs = []
            for i in range(count):
                dup = f"{duplicate_id}-{i}" if duplicate_id and count > 1 else duplicate_id
                seq = group_seq + i if group_seq > 0 else group_seq
                futs.append(
                    await producer.send_async(
                        payload, properties=props, durable=durable, priority=priority, ttl=ttl,
                        duplicate_id=dup, routing_type=routing_type, group_seq=seq, **headers,
                    )
                )
            results = await asyncio.gather(*futs, return_exceptions=True)
            failed = [r for r in results if isinstance(r, Exception)]
            for r in failed[:5]:
                click.secho(f"rejected: {r} ({getattr(r, 'reason', '')})", fg="yellow", err=True)
            click.echo(f"sent {count - len(failed)} of {count} message(s) to {address}")
            if failed:
                sys.exit(1)

    run_coroutine(go())


@main.command()
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--queue", default="")
@click.option("--address", default="", help="Subscribe to a multicast address instead of a queue.")
@click.option("--subscription", default="", help="Durable subscription name (with --address); unshared, it needs --client-id.")
@click.option("--shared", is_flag=True, help="A shared subscription (JMS 2.0): several consumers share its messages.")
@click.option("--client-id", default="", help="The connection's client id, which qualifies a subscription: CLIENT.NAME.")
@click.option("--filter", "filter_", default="", help="Selector, e.g. \"color = 'red' AND weight > 5\".")
@click.option("--count", default=1, show_default=True, type=click.IntRange(min=0), help="0 = until --timeout.")
@click.option("--timeout", default=5.0, show_default=True, help="Seconds to wait for each message.")
@click.option("--no-ack", is_flag=True, help="Leave messages unacknowledged (they are redelivered).")
def receive(url, queue, address, subscription, shared, client_id, filter_, count, timeout, no_ack) -> None:
    """Receive messages and print them."""
    from urllib.parse import quote

    from meshmq.client import connect

    if not queue and not address:
        fail("give --queue or --address")
    if client_id:
        url += ("&" if "?" in url else "?") + "clientID=" + quote(client_id, safe="")

    async def go():
        async with await connect(url) as conn:
            session = await conn.session()
            consumer = await session.create_consumer(queue, address=address, subscription=subscription, filter=filter_,
                                                     shared=shared)
            got = 0
            while count == 0 or got < count:
                msg = await consumer.receive(timeout)
                if msg is None:
                    break
                got += 1
                try:
                    text = msg.body.decode()
                except UnicodeDecodeError:
                    text = f"<{len(msg.body)} bytes>"
                click.echo(" ".join(w for w in (f"[{msg.message_id}] {text}", str(msg.properties or ""),
                                                header_words(msg.proto)) if w).rstrip())
                if not no_ack:
                    msg.ack()
            await consumer.close()
            click.echo(f"received {got} message(s)", err=True)

    run_coroutine(go())


@main.group()
def queue() -> None:
    """List, create, delete, purge, browse, pause and resume queues; move and retry their messages."""


@queue.command("list")
@click.option("--url", default=DEFAULT_URL, show_default=True)
def queue_list(url) -> None:
    from meshmq.client import connect
    from meshmq.v1 import messages_pb2 as mpb

    async def go():
        async with await connect(url) as conn:
            return await conn.admin.list_queues()

    qs = run_coroutine(go())
    header = ("queue", "address", "routing", "durable", "messages", "paged", "paged-bytes", "scheduled", "consumers",
              "delivering", "added", "delivered", "acked", "paused", "groups", "filter", "kind")
    rows = [
        (
            q.name, q.address, mpb.RoutingType.Name(q.routing_type), "yes" if q.durable else "no",
            str(q.message_count), str(q.paged_count), str(q.paged_bytes), str(q.scheduled_count), str(q.consumer_count),
            str(q.delivering_count), str(q.messages_added), str(q.messages_delivered), str(q.messages_acknowledged), "yes" if q.paused else "no",
            str(q.group_count), q.filter, queue_kind(q),
        )
        for q in qs
    ]
    _print_table(header, rows)


def _delivery_time(value: str | None) -> int:
    """--delivery-time as ms since the epoch: an integer, or an ISO 8601 time."""
    if value is None or value == "":
        return 0
    if value.lstrip("-").isdigit():
        ms = int(value)
    else:
        from datetime import datetime

        try:
            ms = int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            raise click.BadParameter(f"{value!r} is neither ms since the epoch nor an ISO 8601 time") from None
    if ms < 0:
        raise click.BadParameter(f"{value!r} is before the epoch")
    return ms


def header_words(m) -> str:
    """A message's JMS headers and delivery time that are set, as key=value words
    ("correlation-id=c1 group-id=g group-seq=2"; "" if none is)."""
    words = [f"{name}={value}" for name, value in (
        ("reply-to", m.reply_to), ("correlation-id", m.correlation_id), ("type", m.type),
        ("group-id", m.group_id), ("group-seq", m.group_seq)) if value]
    if m.delivery_time:
        words.append(f"delivery-time={_iso_ms(m.delivery_time)}")
    return " ".join(words)


def _iso_ms(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def queue_kind(q) -> str:
    """A queue's attributes in Artemis's words ("last-value-key=k, non-destructive, exclusive"; "" if ordinary)."""
    words = [f"last-value-key={q.last_value_key}"] if q.last_value_key else []
    words += [w for w, on in (("non-destructive", q.non_destructive), ("exclusive", q.exclusive),
                              ("group-rebalance", q.group_rebalance),
                              ("group-rebalance-pause-dispatch", q.group_rebalance_pause_dispatch)) if on]
    if q.group_buckets != -1:
        words.append(f"group-buckets={q.group_buckets}")
    if q.group_first_key:
        words.append(f"group-first-key={q.group_first_key}")
    return ", ".join(words)


def _print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """A rich table on a terminal; piped, one tab-separated line per row (for scripts)."""
    if not sys.stdout.isatty():
        for row in (header, *rows):
            click.echo("\t".join(row))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*header)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


@queue.command("create")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--address", default="")
@click.option("--routing-type", type=click.Choice(["anycast", "multicast"]), default="anycast", show_default=True)
@click.option("--filter", "filter_", default="")
@click.option("--durable/--non-durable", default=True, show_default=True)
@click.option("--last-value-key", default=None, help="A last-value queue on this message property (_AMQ_LVQ_NAME: Artemis's legacy last-value).")
@click.option("--non-destructive/--destructive", default=None, help="Consumers read without removing. [default: the address settings']")
@click.option("--exclusive/--not-exclusive", default=None, help="One consumer at a time receives. [default: the address settings']")
@click.option("--group-rebalance/--no-group-rebalance", default=None, help="A new consumer resets the message groups. [default: the address settings']")
@click.option("--group-rebalance-pause-dispatch/--no-group-rebalance-pause-dispatch", default=None, help="While rebalancing, deliver nothing until in-flight messages are settled. [default: the address settings']")
@click.option("--group-buckets", type=click.IntRange(min=-1, max=2**31 - 1), default=None, help="-1: every group; 0: no grouping; N: group ids hashed into N buckets. [default: the address settings']")
@click.option("--group-first-key", default=None, help="Property set true on the first message of a group a consumer gets (e.g. JMSXGroupFirstForConsumer).")
def queue_create(name, url, address, routing_type, filter_, durable, last_value_key, non_destructive, exclusive,
                 group_rebalance, group_rebalance_pause_dispatch, group_buckets, group_first_key) -> None:
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            q = await conn.admin.create_queue(name, address=address, routing_type=routing_type, filter=filter_, durable=durable,
                                              last_value_key=last_value_key, non_destructive=non_destructive,
                                              exclusive=exclusive, group_rebalance=group_rebalance,
                                              group_rebalance_pause_dispatch=group_rebalance_pause_dispatch,
                                              group_buckets=group_buckets, group_first_key=group_first_key)
            kind = queue_kind(q)
            click.echo(f"created queue {q.name} on address {q.address}" + (f" ({kind})" if kind else ""))

    run_coroutine(go())


@queue.command("delete")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--force", is_flag=True, help="Delete even with consumers attached.")
def queue_delete(name, url, force) -> None:
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            n = await conn.admin.delete_queue(name, force=force)
            click.echo(f"deleted queue {name} ({n} messages removed)")

    run_coroutine(go())


@queue.command("purge")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
def queue_purge(name, url) -> None:
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            n = await conn.admin.purge_queue(name)
            click.echo(f"purged {n} messages from {name}")

    run_coroutine(go())


@queue.command("browse")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--offset", default=0, show_default=True, type=click.IntRange(min=0))
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 1000))
@click.option("--filter", "filter_", default="", help="Only messages this selector matches.")
@click.option("--body-bytes", default=64, show_default=True, type=click.IntRange(min=1), help="How much of each body to show.")
def queue_browse(name, url, offset, limit, filter_, body_bytes) -> None:
    """Show a queue's messages in delivery order without consuming them."""
    from meshmq.client import connect
    from meshmq.properties import properties_dict

    async def go():
        async with await connect(url) as conn:
            return await conn.admin.browse(name, offset=offset, limit=limit, filter=filter_, body_preview_bytes=body_bytes)

    page = run_coroutine(go())
    rows = []
    for b in page.messages:
        m = b.message
        body = m.body.decode(errors="replace") + ("…" if b.body_size > len(m.body) else "")
        rows.append((str(m.message_id), b.state, str(m.priority), str(b.delivery_count), str(b.body_size),
                     repr(properties_dict(m.properties)) if m.properties else "", header_words(m), body))
    _print_table(("id", "state", "priority", "deliveries", "size", "properties", "headers", "body"), rows)
    shown = f"{offset + 1}-{offset + len(page.messages)}" if page.messages else "none"
    click.echo(f"{shown} of {page.total} message(s){' matching' if filter_ else ''} in {name}", err=True)


def _with_progress(what: str, call):
    """Run a streamed operation (`call(on_progress)`), showing its progress; print the outcome."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), transient=True,
                  disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(what, total=None)

        def on_progress(p) -> None:
            bar.update(task, completed=p.done, total=p.total or None)

        return run_coroutine(call(on_progress))


@queue.command("move")
@click.argument("name")
@click.argument("to_queue")
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--filter", "filter_", default="", help="Only messages this selector matches.")
@click.option("--limit", default=0, show_default=True, type=click.IntRange(min=0), help="At most this many (0 = all).")
def queue_move(name, to_queue, url, filter_, limit) -> None:
    """Move a queue's waiting messages to another queue (those being delivered stay)."""
    from meshmq.client import connect

    async def go(on_progress):
        async with await connect(url) as conn:
            return await conn.admin.move_messages(name, to_queue, filter=filter_, limit=limit, on_progress=on_progress)

    final = _with_progress(f"moving {name} → {to_queue}", go)
    if final is not None:
        click.echo(f"moved {final.done} of {final.total} message(s) from {name} to {to_queue}")


@queue.command("retry")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--filter", "filter_", default="", help="Only messages this selector matches.")
@click.option("--message-id", default=0, type=click.IntRange(min=0), help="Only this message (its id in NAME).")
def queue_retry(name, url, filter_, message_id) -> None:
    """Send a dead-letter (or expiry) queue's messages back to the queues they
    died on, or, where such a queue is gone, to their original address. Prints
    what happened to each message; exits 1 when some were not moved."""
    from meshmq import outcomes
    from meshmq.client import connect

    async def go(on_progress):
        async with await connect(url) as conn:
            return await conn.admin.retry_messages(name, filter=filter_, message_id=message_id,
                                                   on_progress=on_progress)

    final = _with_progress(f"retrying {name}", go)
    if final is None:
        return
    for o in final.outcomes:
        click.echo(f"message {o.message_id}: {outcomes.describe(o, name)}")
    click.echo(outcomes.summary(final.done, final.total, final.kept, "retried", name))
    if final.done < final.total:
        sys.exit(1)


@queue.command("pause")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
def queue_pause(name, url) -> None:
    """Stop delivering a queue's messages (it still receives them) until resumed."""
    _pause(name, url, pause=True)


@queue.command("resume")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
def queue_resume(name, url) -> None:
    """Deliver a paused queue's messages again."""
    _pause(name, url, pause=False)


@queue.command("reset-groups")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
def queue_reset_groups(name, url) -> None:
    """Unpin every message group of a queue (Artemis's resetAllGroups)."""
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            n = await conn.admin.reset_all_groups(name)
            click.echo(f"reset {n} message group(s) of queue {name}")

    run_coroutine(go())


def _pause(name: str, url: str, *, pause: bool) -> None:
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            call = conn.admin.pause_queue if pause else conn.admin.resume_queue
            q = await call(name)
            click.echo(f"{'paused' if q.paused else 'resumed'} queue {q.name} ({q.message_count} messages)")

    run_coroutine(go())


@main.group()
def address() -> None:
    """Create or delete addresses."""


@address.command("create")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--routing-type", "routing_types", multiple=True, type=click.Choice(["anycast", "multicast"]),
              help="Repeat for both (default: anycast).")
def address_create(name, url, routing_types) -> None:
    from meshmq.client import connect
    from meshmq.v1 import messages_pb2 as mpb

    async def go():
        async with await connect(url) as conn:
            a = await conn.admin.create_address(name, routing_types=routing_types or ("anycast",))
            kinds = "+".join(mpb.RoutingType.Name(rt) for rt in a.routing_types)
            click.echo(f"address {a.name} ({kinds})" + (f", queues: {', '.join(a.queues)}" if a.queues else ""))

    run_coroutine(go())


@address.command("delete")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
@click.option("--force", is_flag=True, help="Delete its queues (and their messages) too.")
def address_delete(name, url, force) -> None:
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            n = await conn.admin.delete_address(name, force=force)
            click.echo(f"deleted address {name} ({n} messages removed)")

    run_coroutine(go())


@address.command("settings")
@click.argument("name")
@click.option("--url", default=DEFAULT_URL, show_default=True)
def address_settings(name, url) -> None:
    """The address-settings in force for NAME on the node: each setting's value
    and the match it came from ("default" when none sets it)."""
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            return await conn.admin.address_settings(name)

    info = run_coroutine(go())
    click.echo(f"address {info.address}: matched by {', '.join(info.matched) or 'nothing (all defaults)'}")
    _print_table(("setting", "value", "from"),
                 [(s.name, s.value_json, s.match or "default") for s in info.settings])


if __name__ == "__main__":
    main()
