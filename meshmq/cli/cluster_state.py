"""`meshmq cluster bindings`: one node's links as it sees them — its cluster
bridges, network-connector and tree links (kind, state, forwarded, batches,
confirmed, pending, retries) and the remote bindings (other nodes' queues and
consumers, with how far away they are); `meshmq cluster connections`: the
same node's links as configured."""

from __future__ import annotations

import sys

import click

from meshmq.cli.common import run_coroutine
from meshmq.config.defaults import CLIENT_URL
from meshmq.link_kinds import describe_kind


def _rows(state) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    from meshmq.v1 import messages_pb2 as mpb

    bridges = [
        (b.cluster_connection, describe_kind(b), b.target_node_name or "?", b.endpoint, b.state, str(b.routed), str(b.forwarded),
         str(b.batches), str(b.confirmed), str(b.pending), str(b.retries), b.problem)
        for b in state.bridges
    ]
    bindings = [
        (rb.node_name, rb.queue, rb.address, mpb.RoutingType.Name(rb.routing_type), rb.filter,
         str(len(rb.consumer_filters)), ", ".join(f or "(all)" for f in rb.consumer_filters), str(rb.hops), rb.via)
        for rb in state.remote_bindings
    ]
    return bridges, bindings


BRIDGE_HEADER = ("connection", "kind", "node", "endpoint", "state", "routed", "forwarded", "batches", "confirmed",
                 "pending", "retries", "problem")
BINDING_HEADER = ("node", "queue", "address", "routing", "filter", "consumers", "consumer filters", "hops", "via")


@click.command("bindings")
@click.option("--url", default=CLIENT_URL, show_default=True, help="The node to ask.")
def bindings(url: str) -> None:
    """Show a node's links (cluster bridges, network and tree links) and the
    remote bindings it knows (docs/clustering.md)."""
    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            return await conn.admin.cluster_state()

    state = run_coroutine(go())
    bridges, remote = _rows(state)
    if not sys.stdout.isatty():  # piped: tab-separated, a header line per table
        for header, rows in ((BRIDGE_HEADER, bridges), (BINDING_HEADER, remote)):
            for row in (header, *rows):
                click.echo("\t".join(row))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for title, header, rows in (("links", BRIDGE_HEADER, bridges), ("remote bindings", BINDING_HEADER, remote)):
        table = Table(*header, title=f"{state.node_name}: {title}")
        for row in rows:
            table.add_row(*row)
        console.print(table)


LINK_CONFIG_HEADER = ("kind", "name", "parameter", "value", "status")


@click.command("connections")
@click.option("--url", default=CLIENT_URL, show_default=True, help="The node to ask.")
def connections(url: str) -> None:
    """The node's cluster connections, network connectors and tree connector as
    configured: every parameter, its value, and whether it is the default."""
    import json

    from meshmq.client import connect

    async def go():
        async with await connect(url) as conn:
            return await conn.admin.link_configurations()

    rows = [(c.kind, c.name, key, json.dumps(value), "changed" if key in c.changed_keys else "default")
            for c in run_coroutine(go()) for key, value in sorted(json.loads(c.parameters_json).items())]
    if not sys.stdout.isatty():
        for row in (LINK_CONFIG_HEADER, *rows):
            click.echo("\t".join(row))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*LINK_CONFIG_HEADER)
    for row in rows:
        table.add_row(*row)
    Console().print(table)
