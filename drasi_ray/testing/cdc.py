"""Stream entries shaped as CDC tools write them, for tests, benchmarks and demos.

Built from what the tools document and what their sink code writes (docs/sources.md, "CDC
tools' formats", says where each shape comes from): Debezium Server's Redis sink (one field
``<key JSON>`` -> ``<event JSON>``, or ``key``/``value`` plus headers; JSON with or without
the ``{"schema", "payload"}`` wrapper; a tombstone after each delete) and DeltaForge's Redis
sink (``event_id``, ``idempotency_key``, ``df-event``; envelope native or debezium). A
:class:`RowChange` is one captured row change; the functions write it in each format, and as
the platform event that states the same change (what a query must see either way).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event

DEBEZIUM_VERSION = "2.7.3.Final"
DELTAFORGE_VERSION = "deltaforge-0.1.0"
SERVER = "dbserver1"
DATABASE = "shop"
NULL_TEXT = b"default"
"""What Debezium's Redis sink writes for a null key or value (its ``null.key``/``null.value``)."""

_PLATFORM_OPS = {"c": Op.INSERT, "r": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}
_JSON_TYPES = {bool: "boolean", int: "int64", float: "double", str: "string"}


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row change as a CDC tool captures it: ``op`` ``c``/``u``/``d``/``r``/``t``, the
    row ``before`` and ``after``, the commit time and the position in the database log: a
    PostgreSQL ``lsn``, or a MySQL ``binlog`` (file, pos, row) when given."""

    op: str
    table: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    ts_ms: int
    lsn: int = 0
    key: tuple[str, ...] = ("id",)
    schema: str = "public"
    binlog: tuple[str, int, int] | None = None
    tx_id: int = 1

    @property
    def row(self) -> Mapping[str, Any]:
        """The row the change is about: ``after``, else ``before``."""
        row = self.after if self.after is not None else self.before
        return row if row is not None else {}

    @property
    def element_id(self) -> str:
        return f"{self.table}:" + "_".join(str(self.row[column]) for column in self.key)


# --------------------------------------------------------------------------------------------
# Debezium Server
# --------------------------------------------------------------------------------------------


def debezium_fields(
    change: RowChange, *, schemas: bool = True, extended: bool = False
) -> dict[bytes, bytes]:
    """The fields of the entry Debezium Server's Redis sink writes for ``change``:
    ``message.format`` compact (one field, key JSON -> value JSON) or extended."""
    key, value = debezium_key(change, schemas=schemas), debezium_value(change, schemas=schemas)
    if extended:
        return {b"key": key, b"value": value, b"HEADERKEY": b"headervalue"}
    return {key: value}


def debezium_tombstone(
    change: RowChange, *, schemas: bool = True, extended: bool = False
) -> dict[bytes, bytes]:
    """The tombstone Debezium sends after the delete ``change`` (its value null)."""
    key = debezium_key(change, schemas=schemas)
    return {b"key": key, b"value": NULL_TEXT} if extended else {key: NULL_TEXT}


def debezium_key(change: RowChange, *, schemas: bool = True) -> bytes:
    """The message key: the key columns of the row, with their schema when ``schemas``."""
    payload = {column: change.row[column] for column in change.key}
    if not schemas:
        return orjson.dumps(payload)
    name = f"{SERVER}.{change.schema}.{change.table}.Key"
    schema = {"type": "struct", "fields": _fields(payload, False), "optional": False, "name": name}
    return orjson.dumps({"schema": schema, "payload": payload})


def debezium_value(change: RowChange, *, schemas: bool = True) -> bytes:
    """The change event (value) of ``change``, as Debezium's JSON converter writes it."""
    payload = {
        "before": _row(change.before),
        "after": _row(change.after),
        "source": _debezium_source(change),
        "op": change.op,
        "ts_ms": change.ts_ms + 7,  # when the connector processed it: later than the commit
        "transaction": None,
    }
    if not schemas:
        return orjson.dumps(payload)
    return orjson.dumps({"schema": _envelope_schema(change), "payload": payload})


def _debezium_source(change: RowChange) -> dict[str, Any]:
    snapshot = "true" if change.op == "r" else "false"
    common = {"version": DEBEZIUM_VERSION, "name": SERVER, "ts_ms": change.ts_ms}
    if change.binlog is not None:
        file, pos, row = change.binlog
        return {
            **common,
            "connector": "mysql",
            "snapshot": snapshot,
            "db": DATABASE,
            "table": change.table,
            "server_id": 223344,
            "gtid": None,
            "file": file,
            "pos": pos,
            "row": row,
            "thread": 7,
            "query": None,
        }
    return {
        **common,
        "connector": "postgresql",
        "snapshot": snapshot,
        "db": DATABASE,
        "sequence": orjson.dumps([str(max(change.lsn - 64, 0)), str(change.lsn)]).decode(),
        "schema": change.schema,
        "table": change.table,
        "txId": change.tx_id,
        "lsn": change.lsn,
        "xmin": None,
    }


def _envelope_schema(change: RowChange) -> dict[str, Any]:
    """A Kafka Connect schema of the envelope, as the JSON converter inlines it."""
    name = f"{SERVER}.{change.schema}.{change.table}.Value"
    row = _fields(change.row, True)
    source = [{"type": "string", "optional": False, "field": "version"}]  # (abridged)
    return {
        "type": "struct",
        "fields": [
            {"type": "struct", "fields": row, "optional": True, "name": name, "field": "before"},
            {"type": "struct", "fields": row, "optional": True, "name": name, "field": "after"},
            {"type": "struct", "fields": source, "optional": False, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
        "optional": False,
        "name": f"{SERVER}.{change.schema}.{change.table}.Envelope",
        "version": 2,
    }


def _fields(row: Mapping[str, Any], optional: bool) -> list[dict[str, Any]]:
    return [
        {"type": _JSON_TYPES.get(type(value), "string"), "optional": optional, "field": column}
        for column, value in row.items()
    ]


def _row(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else dict(row)


# --------------------------------------------------------------------------------------------
# DeltaForge
# --------------------------------------------------------------------------------------------


def deltaforge_fields(
    change: RowChange, *, envelope: Literal["native", "debezium"] = "native"
) -> dict[bytes, bytes]:
    """The fields of the entry DeltaForge's Redis sink writes for ``change``. The event id is
    new on every call, as DeltaForge makes a new one whenever it reads the change again."""
    event_id = str(uuid.uuid4())
    event = deltaforge_event(change, event_id, envelope=envelope)
    idempotency = f"_|{change.schema}.{change.table}|{change.tx_id}|{event_id}"
    return {
        b"event_id": event_id.encode(),
        b"idempotency_key": idempotency.encode(),
        b"df-event": event,
    }


def deltaforge_event(
    change: RowChange, event_id: str, *, envelope: Literal["native", "debezium"] = "native"
) -> bytes:
    """The event JSON (``df-event``); a snapshot read carries no position, as DeltaForge's."""
    source: dict[str, Any] = {
        "version": DELTAFORGE_VERSION,
        "connector": "postgresql" if change.binlog is None else "mysql",
        "name": "shop-pipeline",
        "ts_ms": change.ts_ms,
        "db": change.schema if change.binlog is None else DATABASE,
        "table": change.table,
    }
    if change.binlog is None:
        source["schema"] = change.schema
    if change.op == "r":
        source["snapshot"] = "true"
    elif change.binlog is None:
        source.update(lsn=f"{change.lsn >> 32:X}/{change.lsn & 0xFFFFFFFF:X}", txId=change.tx_id)
    else:
        file, pos, _row_number = change.binlog
        source.update(server_id=1, file=file, pos=pos)
    event = {
        "before": _row(change.before),
        "after": _row(change.after),
        "source": source,
        "op": change.op,
        "ts_ms": change.ts_ms,
        "event_id": event_id,
        "schema_version": "a1b2c3",
        "schema_sequence": 1,
    }
    if envelope == "debezium":
        return orjson.dumps({"schema": None, "payload": event})
    return orjson.dumps(event)


# --------------------------------------------------------------------------------------------
# the same change as a platform event
# --------------------------------------------------------------------------------------------


def platform_event(change: RowChange) -> dict[str, Any]:
    """The platform change event stating ``change`` as the CDC decoders read it: the node
    ``<table>:<key>`` labelled by its table, its columns as properties."""
    element = node(change.element_id, [change.table], change.row, change.ts_ms)
    return change_event(_PLATFORM_OPS[change.op], element, change.ts_ms * 1_000_000)
