"""Rows of a CDC tool's change envelope -> the typed changes the platform decoder makes.

Debezium and DeltaForge describe a row change with the same envelope (docs/sources.md, "CDC
tools' formats"): ``op`` (``c`` create, ``u`` update, ``d`` delete, ``r`` snapshot read,
``t`` truncate), ``before`` and ``after`` (the row's columns), ``source`` (``table``,
``schema`` or ``db``, ``ts_ms``, and the change's position in the database log: ``lsn`` for
PostgreSQL, ``file``/``pos``/``row`` for MySQL) and ``ts_ms``; Debezium's JSON converter may
wrap it as ``{"schema": ..., "payload": <envelope>}``. :class:`RowMapper` turns one envelope
into :class:`~drasi_ray.model.changes.ElementChange` values, as Drasi's PostgreSQL source turns
a row into a node:

- **label**: the table's label from ``cdc.labels`` (``<schema or db>.<table>`` first, then
  ``<table>``), else the table name;
- **id**: ``<table>:<key>``, the key columns' values as text joined by ``_``; the key columns
  are ``cdc.keys`` of the table (or ``*``), else the columns of the message key (Debezium);
- **properties**: the columns of ``after`` (``before`` for a delete), their values as the
  platform decoder reads them (:func:`~drasi_ray.source.decode.element_properties`);
- **op**: ``c`` and ``r`` insert, ``u`` update, ``d`` delete; ``t`` (truncate) is refused with
  its reason: the stream does not say which rows went. An update that changes the key (the old
  key in ``before``) deletes the old element and inserts the new one;
- **time**: ``source.ts_ms`` (else the envelope's ``ts_ms``) is ``effective_from``;
- **version** (``cdc.ordering: position``, the default): the change's position in the database
  log, so a change the tool sent twice (at-least-once delivery, a replay after its crash) has
  the version it had and the element store drops it like any redelivery. PostgreSQL:
  ``(phase, lsn, index)``; MySQL: ``(phase, file number << 40 | pos, row << 2 | index)``;
  ``phase`` is 0 for snapshot reads (``op`` ``r``) and 1 for streamed changes, because a
  snapshot row is read at the snapshot's position while a transaction that committed after it
  may hold earlier positions. ``index`` is the change's place in the entry (0, or 1 for the
  insert of a key change). A snapshot read without a position (DeltaForge's) is ``(0, 0,
  index)``. With ``ordering: stream`` the version is the entry id's, as for platform entries.

Per element these positions rise as the tool emits the element's changes (a row's changes in
one log are in commit order: a transaction waits for the row lock of the one before), which
is all the versioned store needs; across elements they need not (PostgreSQL transactions
interleave in the WAL), so they say nothing about the order of two rows' changes.

Anything malformed raises :class:`~drasi_ray.model.errors.DecodeError` naming the field; the
consumer dead-letters the entry with that reason.

Speed: msgspec parses the envelope straight into the structs below in C, skipping what is not
read (Debezium's inline ``schema``, DeltaForge's extensions); a row's values are then checked
as the platform decoder checks properties. ``bench.ingest`` section (n) measures it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import orjson

from drasi_ray.model.changes import (
    DecodedEntry,
    Element,
    ElementChange,
    ElementKind,
    FrozenMap,
    Op,
    Timing,
    Version,
)
from drasi_ray.model.config import CdcConfig, CdcOrdering
from drasi_ray.model.errors import DecodeError
from drasi_ray.source.decode import element_properties

__all__ = ["Envelope", "RowMapper", "decode_envelope", "parse_message_key"]

Decoder = Callable[[str, Mapping[bytes, bytes]], DecodedEntry]
"""Decodes one stream entry (its id and raw fields) or raises :class:`DecodeError`."""


class Source(msgspec.Struct, gc=False):
    """The ``source`` block: where the change comes from. Fields not named are skipped."""

    table: str | None = None
    schema: str | None = None
    db: str | None = None
    ts_ms: int | None = None
    lsn: int | str | None = None
    file: str | None = None
    pos: int | None = None
    row: int | None = None


class Envelope(msgspec.Struct, gc=False):
    """One change envelope, bare or wrapped in ``payload`` (Debezium's ``schema`` beside it is
    skipped unparsed). ``ddl`` and ``specversion`` mark DeltaForge's schema-change events and
    its CloudEvents envelope."""

    op: str | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    source: Source | None = None
    ts_ms: int | None = None
    payload: Envelope | None = None
    ddl: Any = None

    def unwrapped(self) -> Envelope:
        """The envelope itself, out of its ``{"schema", "payload"}`` wrapper if it has one."""
        payload = self.payload
        return payload if payload is not None and self.op is None else self


_ENVELOPE: Final = msgspec.json.Decoder(Envelope)
_ANY: Final = msgspec.json.Decoder()
_OPS: Final = {"c": Op.INSERT, "r": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}
_SNAPSHOT: Final = "r"
_TRUNCATE: Final = "t"
_NS_PER_MS: Final = 1_000_000
_FILE_NUMBER: Final = re.compile(r"(\d+)$")
_FILE_SHIFT: Final = 40  # a binlog position below 2**40 (1 TiB): the file number above it
_ROW_SHIFT: Final = 2  # the entry index (0 or 1) below the row number
_NODE: Final = ElementKind.NODE
_LSN_END: Final = 1 << 64


def decode_envelope(raw: bytes, where: str, tool: str) -> Envelope:
    """Parse one envelope from ``raw``, the bytes found ``where`` (``"field 'value'"``).

    Raises :class:`DecodeError`: invalid JSON, or a field of the wrong type (msgspec's message
    names its path, e.g. ``$.payload.source.table``).
    """
    try:
        return _ENVELOPE.decode(raw)
    except msgspec.ValidationError as exc:
        raise DecodeError(f"invalid {tool} envelope in {where}: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise DecodeError(f"invalid JSON in {where}: {exc}") from exc


def parse_message_key(raw: bytes) -> dict[str, Any] | None:
    """The columns of a message key (``{"id": 1}``, or Debezium's ``{"schema": ...,
    "payload": {"id": 1}}``); None when it holds none (a null key written as text)."""
    try:
        key = _ANY.decode(raw)
    except msgspec.DecodeError:
        return None
    if type(key) is dict and "payload" in key and "schema" in key and len(key) == 2:
        key = key["payload"]
    return key if type(key) is dict and key else None


@dataclass(frozen=True, slots=True)
class _Table:
    """How the rows of one table become nodes (from ``cdc.labels`` and ``cdc.keys``)."""

    name: str
    labels: tuple[str, ...]
    key: tuple[str, ...] | None
    """The configured key columns; None: the message key's."""


class RowMapper:
    """Envelopes of one source -> its changes, by the source's :class:`CdcConfig` (module
    docstring). ``tool`` names the format in reasons. Keeps one :class:`_Table` per table."""

    def __init__(self, rules: CdcConfig, tool: str) -> None:
        self._rules = rules
        self._tool = tool
        self._by_stream = rules.ordering is CdcOrdering.STREAM
        self._tables: dict[tuple[str | None, str], _Table] = {}

    def changes(
        self, entry_id: str, envelope: Envelope, message_key: bytes | None = None
    ) -> DecodedEntry:
        """The changes ``envelope`` (of entry ``entry_id``) states; ``message_key`` is the raw
        message key, read only when the table has no configured key columns."""
        envelope = envelope.unwrapped()
        code = envelope.op
        if code is None:
            raise DecodeError("missing 'op' field")
        op = _OPS.get(code)
        source = envelope.source
        if source is None:
            raise DecodeError("missing 'source' field")
        table = self._table(source)
        if op is None:
            raise DecodeError(_refused_op(code, table.name))
        ts_ms = source.ts_ms if source.ts_ms is not None else envelope.ts_ms
        if ts_ms is None or ts_ms < 0:
            raise DecodeError("missing or invalid 'source.ts_ms' field")
        row = _row(op, code, envelope)
        key = self._key(table, op, row, message_key)
        version = self._version(entry_id, code, source, 0)
        timing = Timing(ts_ms * _NS_PER_MS)
        element = _node(table, key, row, ts_ms)
        if op is Op.UPDATE and table.key is not None and envelope.before is not None:
            old_key = _changed_key(table, envelope.before, key)
            if old_key is not None:  # a key change: the old element goes, the new one comes
                gone = _node(table, old_key, envelope.before, ts_ms)
                inserted = self._version(entry_id, code, source, 1)
                return DecodedEntry(
                    entry_id,
                    (
                        ElementChange(Op.DELETE, gone, version, timing),
                        ElementChange(Op.INSERT, element, inserted, timing),
                    ),
                )
        return DecodedEntry(entry_id, (ElementChange(op, element, version, timing),))

    def _table(self, source: Source) -> _Table:
        name = source.table
        if not name:
            raise DecodeError("missing or invalid 'source.table' field")
        space = source.schema if source.schema else source.db
        found = self._tables.get((space, name))
        if found is None:
            found = self._tables[(space, name)] = self._resolve(space, name)
        return found

    def _resolve(self, space: str | None, name: str) -> _Table:
        qualified = f"{space}.{name}" if space else name
        labels, keys = self._rules.labels, self._rules.keys
        label = labels.get(qualified) or labels.get(name) or name
        key = keys.get(qualified) or keys.get(name) or keys.get("*")
        return _Table(name, (label,), key)

    def _key(self, table: _Table, op: Op, row: dict[str, Any], message_key: bytes | None) -> str:
        """The element id's key part: the key columns' values as text, joined by ``_``."""
        if table.key is not None:
            side = "before" if op is Op.DELETE else "after"
            return _key_text(table.key, row, f"'{side}'")
        columns = parse_message_key(message_key) if message_key is not None else None
        if columns is None:
            raise DecodeError(
                f"no key for table '{table.name}': the message key is null or not an object "
                f"and cdc.keys names no key columns for it (set cdc.keys.{table.name})"
            )
        return _key_text(tuple(columns), columns, "the message key")

    def _version(self, entry_id: str, code: str, source: Source, index: int) -> Version:
        if self._by_stream:
            ms, _, seq = entry_id.partition("-")
            return int(ms), int(seq or 0), index
        phase = 0 if code == _SNAPSHOT else 1
        if source.lsn is not None:
            return phase, _lsn(source.lsn), index
        if source.file is not None and source.pos is not None:
            return phase, _binlog(source.file, source.pos), (source.row or 0) << _ROW_SHIFT | index
        if phase == 0:
            return 0, 0, index
        raise DecodeError(
            "no position in 'source': 'lsn' (PostgreSQL) or 'file' and 'pos' (MySQL) orders "
            "the changes (cdc.ordering: position); set cdc.ordering: stream to order them by "
            "stream entry instead"
        )


def _refused_op(code: str, table: str) -> str:
    if code == _TRUNCATE:
        return (
            f"op 't' (truncate of table '{table}') is not applied: the stream does not say "
            "which rows went; delete them at the source or re-snapshot the table"
        )
    return f"unknown 'op' value {code!r}"


def _row(op: Op, code: str, envelope: Envelope) -> dict[str, Any]:
    """The row the element is made of: ``after``, or ``before`` for a delete (a delete
    whose ``before`` is null still has its key in the message key)."""
    if op is Op.DELETE:
        return envelope.before if envelope.before is not None else {}
    if envelope.after is None:
        raise DecodeError(f"missing 'after' field (op '{code}')")
    return envelope.after


def _node(table: _Table, key: str, row: dict[str, Any], ts_ms: int) -> Element:
    values = FrozenMap(element_properties(row, False))
    return Element(_NODE, f"{table.name}:{key}", table.labels, values, None, None, ts_ms)


def _key_text(columns: tuple[str, ...], row: Mapping[str, Any], where: str) -> str:
    if len(columns) == 1:  # the common case: no join
        return _value_text(columns[0], row, where)
    return "_".join(_value_text(column, row, where) for column in columns)


def _value_text(column: str, row: Mapping[str, Any], where: str) -> str:
    """A key column's value as text: a string as it is, other values as JSON writes them."""
    value = row.get(column)
    kind = type(value)
    if kind is str:
        return str(value)  # (no copy: str of a str is itself)
    if kind is int:
        return str(value)
    if value is None:
        raise DecodeError(f"key column '{column}' missing or null in {where}")
    return orjson.dumps(value).decode()


def _changed_key(table: _Table, before: dict[str, Any], key: str) -> str | None:
    """The old key when ``before`` holds every key column and they differ from ``key``."""
    columns = table.key
    assert columns is not None
    if any(before.get(column) is None for column in columns):
        return None
    old = _key_text(columns, before, "'before'")
    return old if old != key else None


def _lsn(value: int | str) -> int:
    """A PostgreSQL LSN: Debezium's integer, or DeltaForge's text ``"16/B374D848"``."""
    if type(value) is int:
        if not 0 <= value < _LSN_END:
            raise DecodeError(f"invalid 'source.lsn' value {value}")
        return value
    text = str(value)
    high, slash, low = text.partition("/")
    try:
        lsn = (int(high, 16) << 32) | int(low, 16) if slash else int(text)
    except ValueError:
        lsn = -1
    if not 0 <= lsn < _LSN_END:
        raise DecodeError(f"invalid 'source.lsn' value {text!r}")
    return lsn


def _binlog(file: str, pos: int) -> int:
    """A MySQL binlog position as one number: the file's sequence number, then ``pos``."""
    number = _FILE_NUMBER.search(file)
    if number is None:
        raise DecodeError(f"invalid 'source.file' value {file!r}: no binlog sequence number")
    if not 0 <= pos < 1 << _FILE_SHIFT:
        raise DecodeError(f"invalid 'source.pos' value {pos}")
    return int(number.group(1)) << _FILE_SHIFT | pos
