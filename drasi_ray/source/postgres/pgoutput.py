"""The messages of PostgreSQL's ``pgoutput`` plugin (protocol version 1), parsed.

Each XLogData payload of a logical replication stream is one message: ``B`` begin, ``C``
commit, ``R`` relation (a table's columns, sent before its first change in a session and after
a schema change), ``I``/``U``/``D`` a row inserted, updated or deleted, ``T`` truncate, ``M`` a
logical message (``pg_logical_emit_message``), ``O`` origin, ``Y`` type. Column values arrive
as text (``t``), null (``n``) or "unchanged TOAST value" (``u``: an update that did not touch a
large value does not send it). Anything else is a :class:`ProtocolError`.

Numbers are big-endian; LSNs are 64-bit WAL positions; times are microseconds since
2000-01-01 UTC (PostgreSQL's epoch).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from drasi_ray.model.errors import DrasiRayError

POSTGRES_EPOCH_US: Final = 946_684_800_000_000
"""2000-01-01 UTC in microseconds since the Unix epoch."""


class ProtocolError(DrasiRayError):
    """A pgoutput message this parser cannot read (truncated, or of an unknown shape)."""


class Unchanged:
    """The value of a column an update left alone, which pgoutput does not send (a TOASTed
    value); one instance, :data:`UNCHANGED`."""

    _instance: Unchanged | None = None

    def __new__(cls) -> Unchanged:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Final = Unchanged()

ColumnValue: TypeAlias = str | Unchanged | None
"""A column's value in a tuple: its text, null, or :data:`UNCHANGED`."""


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int
    commit_time_us: int
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    commit_lsn: int
    end_lsn: int
    commit_time_us: int


@dataclass(frozen=True, slots=True)
class RelationColumn:
    name: str
    type_oid: int
    is_key: bool


@dataclass(frozen=True, slots=True)
class Relation:
    oid: int
    namespace: str
    name: str
    replica_identity: str
    """``d`` default (the primary key), ``n`` nothing, ``f`` full, ``i`` an index."""
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True, slots=True)
class Insert:
    relation_oid: int
    new: tuple[ColumnValue, ...]


@dataclass(frozen=True, slots=True)
class Update:
    relation_oid: int
    old: tuple[ColumnValue, ...] | None
    """The old row (``O``, with REPLICA IDENTITY FULL), or its old key (``K``, when the key
    changed), or None."""
    new: tuple[ColumnValue, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    relation_oid: int
    old: tuple[ColumnValue, ...]
    """The whole old row (REPLICA IDENTITY FULL) or only its key columns (the others null)."""


@dataclass(frozen=True, slots=True)
class Truncate:
    relation_oids: tuple[int, ...]
    cascade: bool
    restart_identity: bool


@dataclass(frozen=True, slots=True)
class LogicalMessage:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


@dataclass(frozen=True, slots=True)
class Other:
    """An origin (``O``) or type (``Y``) message: nothing the reader acts on."""

    kind: str


Message: TypeAlias = (
    Begin | Commit | Relation | Insert | Update | Delete | Truncate | LogicalMessage | Other
)


class _Cursor:
    """Reads big-endian fields off one message, with a clear error when it runs short."""

    __slots__ = ("data", "position")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def _unpack(self, fmt: str, size: int) -> int:
        if self.position + size > len(self.data):
            raise ProtocolError(f"message truncated at byte {self.position}")
        (value,) = struct.unpack_from(fmt, self.data, self.position)
        self.position += size
        return int(value)

    def byte(self) -> int:
        return self._unpack(">B", 1)

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def uint32(self) -> int:
        return self._unpack(">I", 4)

    def int64(self) -> int:
        return self._unpack(">q", 8)

    def uint64(self) -> int:
        return self._unpack(">Q", 8)

    def text(self) -> str:
        end = self.data.find(b"\x00", self.position)
        if end < 0:
            raise ProtocolError(f"unterminated string at byte {self.position}")
        value = self.data[self.position : end].decode("utf-8")
        self.position = end + 1
        return value

    def raw(self, size: int) -> bytes:
        if size < 0 or self.position + size > len(self.data):
            raise ProtocolError(f"value of {size} bytes truncated at byte {self.position}")
        value = self.data[self.position : self.position + size]
        self.position += size
        return value

    def tuple_data(self) -> tuple[ColumnValue, ...]:
        """A TupleData: the hot path (one per row change), read with local variables and
        ``int.from_bytes`` rather than a struct call per field."""
        data, position = self.data, self.position
        end = len(data)
        if position + 2 > end:
            raise ProtocolError(f"message truncated at byte {position}")
        count = int.from_bytes(data[position : position + 2], "big")
        position += 2
        values: list[ColumnValue] = []
        append = values.append
        for _ in range(count):
            if position >= end:
                raise ProtocolError(f"message truncated at byte {position}")
            kind = data[position]
            if kind == 0x74:  # t: text
                size = int.from_bytes(data[position + 1 : position + 5], "big")
                start = position + 5
                position = start + size
                if position > end:
                    raise ProtocolError(f"value of {size} bytes truncated at byte {start}")
                append(data[start:position].decode("utf-8"))
            elif kind == 0x6E:  # n: null
                append(None)
                position += 1
            elif kind == 0x75:  # u: unchanged TOAST value
                append(UNCHANGED)
                position += 1
            else:
                raise ProtocolError(f"unknown column kind {chr(kind)!r} (binary mode is off)")
        self.position = position
        return tuple(values)


def parse(payload: bytes) -> Message:
    """One pgoutput message. Raises :class:`ProtocolError` for one it cannot read."""
    if not payload:
        raise ProtocolError("empty message")
    reader = _Cursor(payload)
    kind = chr(reader.byte())
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ProtocolError(f"unknown pgoutput message {kind!r}")
    return parser(reader)


_BEGIN = struct.Struct(">QqI")
_COMMIT = struct.Struct(">xQQq")  # flags (unused), commit LSN, end LSN, commit time
_ROW = struct.Struct(">Ic")  # relation OID, then the tuple's kind


def _fixed(cursor: _Cursor, layout: struct.Struct) -> tuple[Any, ...]:
    """Fields of a fixed layout in one unpack (begin, commit: one per transaction)."""
    if cursor.position + layout.size > len(cursor.data):
        raise ProtocolError(f"message truncated at byte {cursor.position}")
    fields = layout.unpack_from(cursor.data, cursor.position)
    cursor.position += layout.size
    return fields


def _begin(cursor: _Cursor) -> Begin:
    return Begin(*_fixed(cursor, _BEGIN))


def _commit(cursor: _Cursor) -> Commit:
    return Commit(*_fixed(cursor, _COMMIT))


def _relation(cursor: _Cursor) -> Relation:
    oid, namespace, name = cursor.uint32(), cursor.text(), cursor.text()
    identity = chr(cursor.byte())
    columns = []
    for _ in range(cursor.int16()):
        flags = cursor.byte()
        column_name = cursor.text()
        type_oid = cursor.uint32()
        cursor.int32()  # type modifier: unused
        columns.append(RelationColumn(column_name, type_oid, bool(flags & 1)))
    return Relation(oid, namespace, name, identity, tuple(columns))


def _insert(cursor: _Cursor) -> Insert:
    oid, kind = _fixed(cursor, _ROW)
    if kind != b"N":
        raise ProtocolError(f"insert: expected the new row ('N'), got {kind!r}")
    return Insert(oid, cursor.tuple_data())


def _update(cursor: _Cursor) -> Update:
    oid = cursor.uint32()
    kind = chr(cursor.byte())
    old = None
    if kind in ("K", "O"):
        old = cursor.tuple_data()
        kind = chr(cursor.byte())
    if kind != "N":
        raise ProtocolError(f"update: expected the new row ('N'), got {kind!r}")
    return Update(oid, old, cursor.tuple_data())


def _delete(cursor: _Cursor) -> Delete:
    oid = cursor.uint32()
    kind = chr(cursor.byte())
    if kind not in ("K", "O"):
        raise ProtocolError(f"delete: expected the old row ('K' or 'O'), got {kind!r}")
    return Delete(oid, cursor.tuple_data())


def _truncate(cursor: _Cursor) -> Truncate:
    count = cursor.int32()
    options = cursor.byte()
    oids = tuple(cursor.uint32() for _ in range(count))
    return Truncate(oids, bool(options & 1), bool(options & 2))


def _message(cursor: _Cursor) -> LogicalMessage:
    flags = cursor.byte()
    lsn = cursor.uint64()
    prefix = cursor.text()
    return LogicalMessage(bool(flags & 1), lsn, prefix, cursor.raw(cursor.int32()))


def _origin(cursor: _Cursor) -> Other:
    return Other("origin")


def _type(cursor: _Cursor) -> Other:
    return Other("type")


_PARSERS: dict[str, Callable[[_Cursor], Message]] = {
    "B": _begin,
    "C": _commit,
    "R": _relation,
    "I": _insert,
    "U": _update,
    "D": _delete,
    "T": _truncate,
    "M": _message,
    "O": _origin,
    "Y": _type,
}


def format_lsn(lsn: int) -> str:
    """``0x16B3748`` -> ``"0/16B3748"``, as PostgreSQL writes an LSN."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """``"0/16B3748"`` -> ``0x16B3748``. Raises ValueError for anything else."""
    high, slash, low = text.partition("/")
    if not slash:
        raise ValueError(f"not an LSN: {text!r}")
    return (int(high, 16) << 32) | int(low, 16)


def unix_ns(postgres_time_us: int) -> int:
    """A pgoutput time (microseconds since 2000-01-01 UTC) in nanoseconds since 1970."""
    return (postgres_time_us + POSTGRES_EPOCH_US) * 1000
