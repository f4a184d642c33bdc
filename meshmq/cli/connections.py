"""`meshmq connection list|close`: a node's client connections (Management.ListConnections)
and ending one (CloseConnection: the client sees its connection fail; with failover it reconnects)."""

from __future__ import annotations

import sys
from datetime import datetime, timezone

import click

from meshmq.cli.common import run_coroutine
from meshmq.config import defaults

HEADER = ("id", "client-address", "user", "client-id", "sessions", "producers", "consumers", "credit",
          "in-flight", "since")


@click.group()
def connection() -> None:
    """List a node's client connections (sessions, producers, consumers, credit, in flight); close one."""


@connection.command("list")
@click.option("--url", default=defaults.CLIENT_URL, show_default=True)
def connection_list(url) -> None:
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            return await conn.admin.list_connections()

    rows = [
        (c.connection_id, c.client_address, c.user, c.client_id or "-", str(c.session_count), str(c.producers),
         str(c.consumers), str(c.credits), str(c.in_flight),
         datetime.fromtimestamp(c.since / 1000, timezone.utc).isoformat(timespec="seconds"))
        for c in run_coroutine(go())
    ]
    if not sys.stdout.isatty():
        for row in (HEADER, *rows):
            click.echo("\t".join(row))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*HEADER)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


@connection.command("close")
@click.argument("connection_id")
@click.option("--url", default=defaults.CLIENT_URL, show_default=True)
def connection_close(connection_id, url) -> None:
    """End every session of CONNECTION_ID (from `meshmq connection list`)."""
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            n = await conn.admin.close_connection(connection_id)
            click.echo(f"closed connection {connection_id} ({n} sessions)")

    run_coroutine(go())
