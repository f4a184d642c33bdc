"""Settings of the PostgreSQL sessions that write a node's state (the journal
writer's, the shared store's lease), shared by the services that open them."""

from __future__ import annotations


def stuck_transaction_options(idle_in_transaction_ms: int) -> dict[str, str]:
    """psycopg connect arguments under which PostgreSQL ends a session left idle
    inside a transaction for `idle_in_transaction_ms`, releasing the row locks
    it holds: a node frozen or cut off between a transaction's statements
    must not keep a backup out (Journal.stuck_transaction_timeout)."""
    return {"options": f"-c idle_in_transaction_session_timeout={idle_in_transaction_ms}"}
