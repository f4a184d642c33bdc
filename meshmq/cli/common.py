"""What every `meshmq` subcommand does the same way: stop with an error on
stderr and exit status 2, and run its asyncio work (with the event loop the
services use) turning a MeshMQError into that same error. Here, below the
command modules, so that none of them imports another to borrow it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn, TypeVar

import click

from meshmq.errors import MeshMQError

T = TypeVar("T")


def fail(message: str) -> NoReturn:
    """Print `error: message` in red on stderr and exit with status 2."""
    click.secho(f"error: {message}", fg="red", err=True)
    sys.exit(2)


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T | None:
    """Run a command's coroutine to the end; a MeshMQError fails the command with its
    reason code, Ctrl-C ends it quietly (None)."""
    from meshmq.runtime import install_event_loop_policy

    install_event_loop_policy()
    try:
        return asyncio.run(coro)
    except MeshMQError as exc:
        fail(f"{exc} ({exc.reason.value})")
    except KeyboardInterrupt:
        return None
