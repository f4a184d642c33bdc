"""The conformance driver for the Python SDK (tests/conformance/DRIVER.md).

`python -m tests.conformance.python_driver` reads one JSON request per line on
stdin and writes one JSON response per line on stdout, driving the async SDK
(`meshmq.client`). Every request runs in a task of its own, so a `receive`
that waits for a message never holds up the requests after it; responses go
out in the order they finish, each carrying its request's id. The driver keeps
no state of its own beyond the handles that name the SDK's objects: what it
answers is what the SDK did.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import logging
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import meshmq
from meshmq.client import (
    Connection, Consumer, FailoverEventType, Producer, ReceivedMessage, Session, TemporaryQueue, connect,
)
from meshmq.errors import MeshMQError, Reason

log = logging.getLogger("meshmq.conformance")

# Bodies larger than this are answered by size and digest only (DRIVER.md, `receive`).
INLINE_BODY_LIMIT = 64 * 1024
# A 3 MiB body is a 4 MiB base64 line; leave room for far more.
LINE_LIMIT = 256 * 1024 * 1024


class DriverError(Exception):
    """A request the driver refuses before the SDK sees it (bad arguments, unknown handle)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Handles:
    """The SDK objects a scenario works with, under the names the driver gave them."""

    def __init__(self) -> None:
        self._objects: dict[str, Any] = {}
        self._counter = itertools.count(1)

    def add(self, prefix: str, obj: Any) -> str:
        handle = f"{prefix}{next(self._counter)}"
        self._objects[handle] = obj
        return handle

    def get(self, handle: Any, kind: type | tuple[type, ...]) -> Any:
        obj = self._objects.get(handle) if isinstance(handle, str) else None
        if not isinstance(obj, kind):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise DriverError(Reason.INVALID_REQUEST.value, f"{handle!r} is not a {names} handle")
        return obj

    def pop(self, handle: Any) -> Any:
        if not isinstance(handle, str) or handle not in self._objects:
            raise DriverError(Reason.INVALID_REQUEST.value, f"unknown handle {handle!r}")
        return self._objects.pop(handle)


_JSON_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", dict: "an object"}


def _arg(req: dict, name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """Argument `name` of a request, checked for its JSON type."""
    if name not in req or req[name] is None:
        if default is ...:
            raise DriverError(Reason.INVALID_REQUEST.value, f"{req.get('op')}: missing argument {name!r}")
        return default
    value = req[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int in Python: an int argument must not accept true/false.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        wanted = " or ".join(_JSON_NAMES.get(k, k.__name__) for k in kinds)
        raise DriverError(Reason.INVALID_REQUEST.value,
                          f"{req.get('op')}: {name} must be {wanted}, got {json.dumps(value)}")
    return value


def _with_options(uri: str, options: dict[str, str]) -> str:
    """`uri` with more URI options appended (after a failover:(...) list's closing bracket too)."""
    if not options:
        return uri
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in options.items())
    tail = uri.rsplit(")", 1)[-1]
    return uri + ("&" if "?" in tail else "?") + query


def _properties(req: dict) -> dict | None:
    props = _arg(req, "properties", dict, None)
    if props is None:
        return None
    for key, value in props.items():
        if not isinstance(value, (str, int, float, bool)):
            raise DriverError(Reason.INVALID_REQUEST.value,
                              f"property {key!r}: a string, integer, number or boolean, not {value!r}")
    return props


def _pattern_body(size: int, seed: int) -> bytes:
    """Byte i is (seed + i) % 251: a body either side can make and check without sending it."""
    cycle = bytes((seed + i) % 251 for i in range(251))
    whole, rest = divmod(size, 251)
    return cycle * whole + cycle[:rest]


def _message(handle: str, msg: ReceivedMessage) -> dict:
    body = msg.body
    out = {
        "handle": handle,
        "size": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
        "properties": {k: (base64.b64encode(v).decode() if isinstance(v, bytes) else v)
                       for k, v in msg.properties.items()},
        "delivery_count": msg.delivery_count,
        "durable": msg.durable,
        "priority": msg.priority,
    }
    if len(body) <= INLINE_BODY_LIMIT:
        out["body"] = base64.b64encode(body).decode()
    return out


class PythonDriver:
    """The ops of DRIVER.md on meshmq.client."""

    def __init__(self) -> None:
        self.handles = Handles()
        self._events: dict[str, list[str]] = {}  # connection handle -> failover events seen

    def op(self, name: str) -> Callable[[dict], Awaitable[dict]] | None:
        return getattr(self, f"op_{name}", None) if name.isidentifier() else None

    async def op_hello(self, req: dict) -> dict:
        return {"sdk": "python", "version": meshmq.__version__}

    async def op_connect(self, req: dict) -> dict:
        uri = _arg(req, "uri", str)
        options = {}
        if (user := _arg(req, "user", str, "")):
            options["username"] = user
            options["password"] = _arg(req, "password", str, "")
        if (ca_file := _arg(req, "ca_file", str, "")):
            options.update(sslEnabled="true", trustStorePath=ca_file)
        conn = await connect(_with_options(uri, options))
        handle = self.handles.add("c", conn)
        events = self._events[handle] = []
        conn.add_failover_listener(lambda event, err: events.append(event.value))
        return {"connection": handle}

    async def op_session(self, req: dict) -> dict:
        conn = self.handles.get(req.get("connection"), Connection)
        session = await conn.session(transacted=_arg(req, "transacted", bool, False))
        return {"session": self.handles.add("s", session)}

    async def op_create_queue(self, req: dict) -> dict:
        session = self.handles.get(req.get("session"), Session)
        routing = _arg(req, "routing", str, "anycast")
        if routing not in ("anycast", "multicast"):
            raise DriverError(Reason.INVALID_REQUEST.value, f"routing must be anycast or multicast, not {routing!r}")
        await session.create_queue(_arg(req, "queue", str), address=_arg(req, "address", str),
                                   routing_type=routing, durable=_arg(req, "durable", bool, True))
        return {}

    async def op_create_temporary_queue(self, req: dict) -> dict:
        if req.get("session") is not None:
            maker = self.handles.get(req.get("session"), Session)
        else:
            maker = self.handles.get(req.get("connection"), Connection)
        tq = await maker.create_temporary_queue()
        return {"temporary_queue": self.handles.add("t", tq), "queue": tq.name}

    async def op_delete_temporary_queue(self, req: dict) -> dict:
        await self.handles.get(req.get("temporary_queue"), TemporaryQueue).delete()
        return {}

    async def op_producer(self, req: dict) -> dict:
        session = self.handles.get(req.get("session"), Session)
        producer = await session.create_producer(_arg(req, "address", str),
                                                 idempotent=_arg(req, "idempotent", bool, False))
        return {"producer": self.handles.add("p", producer)}

    async def op_send(self, req: dict) -> dict:
        producer = self.handles.get(req.get("producer"), Producer)
        try:
            body = base64.b64decode(_arg(req, "body", str), validate=True)
        except ValueError as exc:
            raise DriverError(Reason.INVALID_REQUEST.value, f"send: body is not base64: {exc}") from None
        await producer.send(
            body,
            properties=_properties(req),
            durable=_arg(req, "durable", bool, True),
            duplicate_id=_arg(req, "duplicate_id", str, ""),
            priority=_arg(req, "priority", int, 4),
        )
        return {}

    async def op_send_many(self, req: dict) -> dict:
        producer = self.handles.get(req.get("producer"), Producer)
        count = _arg(req, "count", int)
        durable = _arg(req, "durable", bool, True)
        props = _properties(req)
        # Queued one after the other (send_async keeps their order), confirmed together.
        confirms = [await producer.send_async(str(i).encode(), properties=props, durable=durable)
                    for i in range(count)]
        await asyncio.gather(*confirms)
        return {}

    async def op_send_large(self, req: dict) -> dict:
        producer = self.handles.get(req.get("producer"), Producer)
        size = _arg(req, "size", int)
        if size < 0:
            raise DriverError(Reason.INVALID_REQUEST.value, f"send_large: size must not be negative, got {size}")
        # The Python SDK has no separate stream call: a body over minLargeMessageSize
        # goes as a large message in chunks (docs/protocol.md section 7).
        await producer.send(_pattern_body(size, _arg(req, "seed", int)), durable=_arg(req, "durable", bool, True))
        return {}

    async def op_consumer(self, req: dict) -> dict:
        session = self.handles.get(req.get("session"), Session)
        credit = _arg(req, "credit", int, None)
        if credit is None:
            window = None  # the SDK's consumerWindowSize
        elif credit == 1:
            # The SDK's window is in bytes; window 0 is its one-message-at-a-time mode
            # (Artemis's advice for slow consumers): a message comes only when receive asks.
            window = 0
        else:
            raise DriverError(Reason.INVALID_REQUEST.value,
                              f"consumer: the Python SDK's credit is in bytes; only credit 1 (window 0) has an exact "
                              f"equivalent in messages, not {credit}")
        consumer = await session.create_consumer(_arg(req, "queue", str), filter=_arg(req, "selector", str, ""),
                                                 window_size=window)
        return {"consumer": self.handles.add("k", consumer)}

    async def op_receive(self, req: dict) -> dict:
        consumer = self.handles.get(req.get("consumer"), Consumer)
        timeout_ms = _arg(req, "timeout_ms", (int, float))
        msg = await consumer.receive(timeout_ms / 1000)
        if msg is None:
            return {"message": None}
        return {"message": _message(self.handles.add("m", msg), msg)}

    async def op_ack(self, req: dict) -> dict:
        msg = self.handles.get(req.get("message"), ReceivedMessage)
        msg.ack()
        return {}

    async def op_commit(self, req: dict) -> dict:
        await self.handles.get(req.get("session"), Session).commit()
        return {}

    async def op_rollback(self, req: dict) -> dict:
        await self.handles.get(req.get("session"), Session).rollback()
        return {}

    async def op_close(self, req: dict) -> dict:
        obj = self.handles.get(req.get("handle"), (Connection, Session, Producer, Consumer))
        self.handles.pop(req["handle"])
        await obj.close()
        return {}

    async def op_failover_events(self, req: dict) -> dict:
        handle = req.get("connection")
        self.handles.get(handle, Connection)
        return {"events": list(self._events.get(handle, []))}

    async def close_all(self) -> None:
        for obj in list(self.handles._objects.values()):
            if isinstance(obj, Connection):
                try:
                    await obj.close()
                except Exception:  # closing at exit: nothing left to report to
                    log.exception("closing a connection at exit")


def _error(exc: BaseException) -> dict:
    """The error object of a failed request (DRIVER.md)."""
    if isinstance(exc, MeshMQError):
        reason = exc.reason.value
    elif isinstance(exc, DriverError):
        reason = exc.reason
    elif isinstance(exc, (ValueError, TypeError)):
        reason = Reason.INVALID_REQUEST.value  # the SDK refused an argument before sending anything
    else:
        reason = Reason.INTERNAL.value
    return {"reason": reason, "type": type(exc).__name__, "message": str(exc)}


class Server:
    """Reads requests, runs each in its own task, writes each response as it is ready."""

    def __init__(self, driver: PythonDriver, out) -> None:
        self.driver = driver
        self.out = out
        self.tasks: set[asyncio.Task] = set()

    def reply(self, response: dict) -> None:
        self.out.write(json.dumps(response) + "\n")
        self.out.flush()

    async def handle(self, line: bytes) -> None:
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or not isinstance(req.get("id"), int):
                raise ValueError("a request is a JSON object with an integer id")
        except ValueError as exc:
            self.reply({"id": None, "ok": False, "error": {"reason": Reason.INVALID_REQUEST.value,
                                                           "type": type(exc).__name__, "message": str(exc)}})
            return
        rid = req["id"]
        op = self.driver.op(str(req.get("op", "")))
        if op is None:
            self.reply({"id": rid, "ok": False, "error": {"reason": "UNSUPPORTED", "type": "DriverError",
                                                          "message": f"unknown op {req.get('op')!r}"}})
            return
        try:
            result = await op(req)
        except Exception as exc:  # every failure is an answer: the scenario decides what it means
            if not isinstance(exc, (MeshMQError, DriverError)):
                log.debug("op %s failed:\n%s", req.get("op"), traceback.format_exc())
            self.reply({"id": rid, "ok": False, "error": _error(exc)})
        else:
            self.reply({"id": rid, "ok": True, "result": result})

    async def serve(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            if line.strip():
                task = asyncio.create_task(self.handle(line))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
        # stdin closed: the runner is done with us.
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.driver.close_all()


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await Server(PythonDriver(), sys.stdout).serve(reader)


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    asyncio.run(main())
