"""What goes wrong in analytics, said in one line a user can act on.

Spark reports JDBC and planning failures as Java exceptions several causes
deep; `explain` digs out the part that names the problem (the JDBC driver's
own message) so the CLI never prints a Java stack trace.
"""

from __future__ import annotations


class AnalyticsError(Exception):
    """A report cannot be made; the message says why and, where it can, what to do."""


def java_causes(exc: BaseException) -> list[tuple[str, str]]:
    """(Java class name, message) of the JVM exception behind `exc` and each of
    its causes, outermost first; empty when `exc` did not come from the JVM."""
    throwable = _throwable(exc)
    out: list[tuple[str, str]] = []
    seen = 0
    while throwable is not None and seen < 20:
        try:
            name = throwable.getClass().getName()
            message = throwable.getMessage()
        except Exception:  # noqa: BLE001 - the gateway may already be gone
            break
        out.append((str(name), "" if message is None else str(message)))
        throwable = throwable.getCause()
        seen += 1
    return out


def _throwable(exc: BaseException):
    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:  # pragma: no cover - pyspark always brings py4j
        return None
    if isinstance(exc, Py4JJavaError):
        return exc.java_exception
    return getattr(exc, "_origin", None)  # pyspark's CapturedException (AnalysisException, ...)


# Exceptions whose message is the most useful one in a chain: the drivers' own.
_DRIVER_EXCEPTIONS = ("org.postgresql.util.PSQLException", "org.sqlite.SQLiteException", "java.sql.SQLException")


def explain(exc: BaseException) -> str:
    """The one line that says what went wrong inside Spark or a JDBC driver."""
    causes = java_causes(exc)
    if not causes:
        text = str(exc).strip()
        return text.splitlines()[0] if text else type(exc).__name__
    for wanted in _DRIVER_EXCEPTIONS:
        for name, message in causes:
            if name == wanted and message:
                return _first_line(message)
    name, message = causes[-1]  # the root cause
    return _first_line(message) or name.rsplit(".", 1)[-1]


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0].strip() if text else ""
