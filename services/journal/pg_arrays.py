"""PostgreSQL binary arrays for the journal's batch statements, packed a column at a time.

On PostgreSQL the journal writes each batch as `INSERT ... SELECT FROM
unnest(one array per column)` and deletes with `= ANY(array)` (store.py). psycopg
dumps a Python list as a binary array element by element, in Python: a
`struct.pack`, two `list.append`s and a type lookup per value, which came to
about 10 µs of journal-writer CPU per durable message (two event rows and the
message row: about 30 values). Here a column is one typed object and its
array is packed in a few C-level calls: integers with one `struct.pack`,
strings and bytes with one `join`.

The wire format is PostgreSQL's `array_recv`: ndim, has-null flag, element type
oid, then per dimension its length and lower bound (1), then each element as a
4-byte length (-1 for NULL) and its binary value. Every number is big-endian.
"""

from __future__ import annotations

import struct

from psycopg.adapt import Dumper
from psycopg.pq import Format

_LENGTH = struct.Struct(">i")
_ONE_DIMENSION = struct.Struct(">iiiii")  # ndim=1, has_null, element oid, length, lower bound
_EMPTY = struct.Struct(">iii")  # ndim=0, has_null=0, element oid
_NULL = b"\xff\xff\xff\xff"


class PgArray:
    """One column's values for a binary array parameter; the subclass names the element type."""

    __slots__ = ("values",)
    element_oid = 0
    array_oid = 0

    def __init__(self, values) -> None:
        self.values = values if isinstance(values, (list, tuple)) else list(values)


class Int8Array(PgArray):
    __slots__ = ()
    element_oid, array_oid, typecode, width = 20, 1016, "q", 8


class Int4Array(PgArray):
    __slots__ = ()
    element_oid, array_oid, typecode, width = 23, 1007, "i", 4


class BoolArray(PgArray):
    __slots__ = ()
    element_oid, array_oid, typecode, width = 16, 1000, "?", 1


class TextArray(PgArray):
    __slots__ = ()
    element_oid, array_oid = 25, 1009


class ByteaArray(PgArray):
    __slots__ = ()
    element_oid, array_oid = 17, 1001


def pack_array(column: PgArray, encoding: str = "utf-8") -> bytes:
    """The binary `array_recv` form of `column`; text in the connection's `encoding`
    (PostgreSQL reads binary text in the client encoding, as it reads text)."""
    values = column.values
    n = len(values)
    if not n:
        return _EMPTY.pack(0, 0, column.element_oid)
    nulls = values.count(None)
    if nulls == n:
        body = _NULL * n
    elif isinstance(column, TextArray):
        body = _pack_names(values, encoding)
    elif isinstance(column, ByteaArray):
        body = _pack_bytes(values)
    elif nulls:
        element = struct.Struct(">i" + column.typecode).pack
        width = column.width
        body = b"".join([_NULL if v is None else element(width, v) for v in values])
    else:
        body = _pack_fixed(values, column.typecode, column.width)
    return _ONE_DIMENSION.pack(1, 1 if nulls else 0, column.element_oid, n, 1) + body


def _pack_fixed(values, typecode: str, width: int) -> bytes:
    """Fixed-width elements without NULLs: one `struct.pack` of (length, value)
    pairs (the struct module keeps the compiled formats it saw last)."""
    n = len(values)
    pairs = [width] * (2 * n)
    pairs[1::2] = values
    return struct.pack(">" + ("i" + typecode) * n, *pairs)


def _pack_names(values, encoding: str) -> bytes:
    """Text elements. The journal's text columns hold few distinct values in a
    batch (node, kind, address, queue names), so each is encoded once."""
    length = _LENGTH.pack
    packed = {v: _NULL if v is None else length(len(e)) + e
              for v in set(values) for e in (None if v is None else v.encode(encoding),)}
    return b"".join(map(packed.__getitem__, values))


def _pack_bytes(values) -> bytes:
    length = _LENGTH.pack
    return b"".join([part for v in values for part in ((_NULL,) if v is None else (length(len(v)), v))])


def _dumper_for(kind: type[PgArray]) -> type[Dumper]:
    class _ArrayDumper(Dumper):
        format = Format.BINARY
        oid = kind.array_oid

        def dump(self, obj: PgArray) -> bytes:
            return pack_array(obj, self.connection.info.encoding if self.connection is not None else "utf-8")

    _ArrayDumper.__name__ = _ArrayDumper.__qualname__ = f"{kind.__name__}Dumper"
    return _ArrayDumper


ARRAY_KINDS: tuple[type[PgArray], ...] = (Int8Array, Int4Array, BoolArray, TextArray, ByteaArray)
_DUMPERS = {kind: _dumper_for(kind) for kind in ARRAY_KINDS}


def register(connection) -> None:
    """Teach a psycopg connection to send the column types above (engine `connect` event)."""
    for kind, dumper in _DUMPERS.items():
        connection.adapters.register_dumper(kind, dumper)


def array_kind(sql_type: str) -> type[PgArray]:
    """The column class for a compiled SQL type name (BIGINT, VARCHAR(255), ...)."""
    name = sql_type.split("(")[0].strip().upper()
    try:
        return _BY_SQL_TYPE[name]
    except KeyError:
        raise ValueError(f"no binary array packer for SQL type {sql_type!r}") from None


_BY_SQL_TYPE = {
    "BIGINT": Int8Array,
    "INTEGER": Int4Array,
    "BOOLEAN": BoolArray,
    "VARCHAR": TextArray,
    "TEXT": TextArray,
    "BYTEA": ByteaArray,
}
