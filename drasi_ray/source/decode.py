"""Decode Redis stream entries of the Drasi platform format (docs/semantics.md §1).

This is the boundary: raw entry fields go in, a :class:`~drasi_ray.model.changes.DecodedEntry` of
immutable changes comes out, or a :class:`~drasi_ray.model.errors.DecodeError` whose ``reason``
names the offending field. The consumer dead-letters a rejected entry with that reason and its raw
fields, then acks it.

Contract of :func:`decode_entry`:

- The entry's JSON is read from the first present field of ``data``, ``event``, ``payload``,
  ``message`` (bytes keys, as redis-py returns them with ``decode_responses=False``).
- The JSON is a CloudEvent object whose ``data`` is an array of events. Only ``data`` matters.
  An empty array is a valid entry with no changes.
- **All or nothing:** one malformed event rejects the whole entry, so a consumer never applies
  half an entry.
- Each event's version is ``(entry ms, entry seq, index in data)``; ``effective_from`` is
  ``ts_ns // 1_000_000`` (``ts_ns`` a non-negative integer; ``true`` is not an integer).
- Element data is ``payload.after`` for ``i``/``u`` and ``payload.before`` for ``d``.
  ``properties`` must be an object, except that a delete may omit it (a delete only needs the
  element's identity, and producers commonly send just ``id`` and ``labels``): then it is empty.
- Property values: integers beyond the signed 64-bit range become floats (as in Drasi), and so
  does a number written ``-0`` (-0.0: serde_json, which Drasi reads with, gives a float for a
  negative zero without a fraction; orjson and msgspec give the integer 0); lists
  and maps stay lists and maps (better than Drasi, which turns them into JSON text). Nested
  values are shared, not copied: treat them as read-only.
- ``reactivatorStart_ns`` / ``reactivatorEnd_ns`` are optional profiling data: a value that is
  not a non-negative integer is ignored rather than rejecting the change it describes.
- **Control entries:** when the first event's ``payload.source.db`` is ``drasi`` (any case),
  every event of the entry is a control event whose type is ``payload.source.table``.
  ``SourceSubscription`` gives a :class:`~drasi_ray.model.changes.SubscriptionControl`; one missing
  ``queryId`` or ``queryNodeId`` is skipped with a warning (Drasi's behaviour), not an error.
  Other types give :class:`~drasi_ray.model.changes.UnknownControl` (only their type is read, so a
  future type is never dead-lettered for its unknown fields); the caller logs them at info.

Speed: decoding is the per-event hot path. A well-formed change entry takes the typed path:
msgspec parses it straight into typed structs in C (a row of scalars, the usual row, is
checked there too: nothing is left to convert in Python), and the few checks the types cannot
express are repeated in Python. Every other entry (control events, anything malformed or
unusual) takes the checked path: ``orjson`` plus plain ``type(x) is T`` checks, which also
produce the exact reasons. A differential property test (tests/pure/test_decode.py) holds the
two paths to the same result on every input. Both build the change model's structs directly
(no intermediate form).
``bench.ingest`` section (m) measures the decoding against ``orjson.loads`` alone.

The encoders at the end (:func:`encode_cloud_event`, :func:`change_event`,
:func:`subscription_event`) produce this format, for producers, tests and the demo;
``decode_entry`` inverts them.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Annotated, Any, ClassVar, Final, Generic, Literal, TypeVar

import msgspec
import orjson

from drasi_ray.model.changes import (
    ControlEvent,
    DecodedEntry,
    Element,
    ElementChange,
    ElementKind,
    FrozenMap,
    Op,
    SubscriptionControl,
    Timing,
    UnknownControl,
    Version,
)
from drasi_ray.model.errors import DecodeError
from drasi_ray.model.value_kinds import I64_MAX, I64_MIN, as_element_value

__all__ = [
    "change_event",
    "decode_entry",
    "element_properties",
    "encode_cloud_event",
    "entry_problem",
    "subscription_event",
]

_log = logging.getLogger("drasi_ray.decode")

_ENTRY_FIELDS: Final = (b"data", b"event", b"payload", b"message")
_MINUS_ZERO: Final = re.compile(rb"-0\s*[,\]}]")
"""An integer ``-0`` in a JSON text. It starts with a literal, so the search is a fast scan
(a check per entry on the hot path); a false match (inside a string, or ``1e-0``) only costs
the slower read of :func:`_loads`, whose parser converts true integer ``-0`` tokens alone."""
_TABLES: Final = {
    "node": ElementKind.NODE,
    "rel": ElementKind.RELATION,
    "relation": ElementKind.RELATION,
}
_OPS: Final = {op.value: op for op in Op}
_U64_MAX: Final = 2**64 - 1
_NS_PER_MS: Final = 1_000_000
_SUBSCRIPTION: Final = "SourceSubscription"

_NO_DATA: Final = "no event data found in stream entry"
_BAD_DATA: Final = "missing or invalid 'data' array"
_BAD_EVENT: Final = "invalid event in 'data' array: not an object"
_BAD_OP: Final = "missing or invalid 'op' field"
_BAD_PAYLOAD: Final = "missing or invalid 'payload' field"
_BAD_SOURCE: Final = "missing or invalid 'payload.source' field"
_BAD_TABLE: Final = "missing or invalid 'payload.source.table' field"
_BAD_TS: Final = "missing or invalid 'payload.source.ts_ns' field"
_BAD_AFTER: Final = "missing or invalid 'payload.after' field"
_BAD_BEFORE: Final = "missing or invalid 'payload.before' field"
_BAD_ID: Final = "missing or invalid element 'id' field"
_BAD_LABELS: Final = "missing or invalid element 'labels' field"
_EMPTY_LABELS: Final = "labels array is empty"
_BAD_LABEL: Final = "invalid element 'labels' field: every label must be a string"
_BAD_PROPERTIES: Final = "missing or invalid element 'properties' field"
_BAD_START: Final = "missing or invalid 'startId'"
_BAD_END: Final = "missing or invalid 'endId'"


# --------------------------------------------------------------------------------------------
# decoding
# --------------------------------------------------------------------------------------------


def decode_entry(entry_id: str, fields: Mapping[bytes, bytes]) -> DecodedEntry:
    """Decode one stream entry into element changes or control events.

    Raises :class:`DecodeError` naming the offending field if the entry or any of its events is
    malformed; nothing of a rejected entry is returned.
    """
    changes = _typed_changes(entry_id, fields)
    if changes is not None:
        return DecodedEntry(entry_id, changes)
    return _checked_entry(entry_id, fields)


def entry_problem(
    fields: Mapping[bytes, bytes],
    max_payload_bytes: int,
    decode: Callable[[str, Mapping[bytes, bytes]], DecodedEntry] | None = None,
) -> str | None:
    """Why a consumer would dead-letter an entry of ``fields`` on its first delivery (too large,
    or the reason ``decode``, the source's decoder, by default :func:`decode_entry`, gives),
    else None: what ``drasi-ray publish`` and ``dlq replay`` check before they write."""
    size = sum(map(len, fields.values()))
    if size > max_payload_bytes:
        return f"entry of {size} bytes exceeds max_payload_bytes ({max_payload_bytes})"
    try:
        (decode or decode_entry)("1-0", fields)
    except DecodeError as exc:
        return exc.reason
    return None


def _checked_entry(entry_id: str, fields: Mapping[bytes, bytes]) -> DecodedEntry:
    """:func:`decode_entry` by the checked path alone (every entry, exact reasons)."""
    events = _read_events(fields)
    if not events:
        return DecodedEntry(entry_id)
    ms, seq = _entry_position(entry_id)
    if _is_control(events[0]):
        return DecodedEntry(entry_id, controls=_decode_controls(entry_id, events, ms, seq))
    return DecodedEntry(
        entry_id,
        tuple(_decode_change(event, (ms, seq, index)) for index, event in enumerate(events)),
    )


# --------------------------------------------------------------------------------------------
# the typed fast path (msgspec)
# --------------------------------------------------------------------------------------------


_Id = Annotated[str, msgspec.Meta(min_length=1)]
_Labels = Annotated[tuple[str, ...], msgspec.Meta(min_length=1)]  # a row's labels: a tuple
_TimestampNs = Annotated[int, msgspec.Meta(ge=0)]  # (msgspec bounds must fit in i64)
_I64 = Annotated[int, msgspec.Meta(ge=I64_MIN, le=I64_MAX)]
_FlatProperties = dict[str, str | float | _I64 | bool | None]
"""A row of scalars, every integer within i64: values as Drasi holds them, checked in C (the
usual row; :func:`element_properties` has nothing to convert in it)."""
_AnyProperties = dict[str, Any]
"""Any other row (nested lists and maps, integers beyond i64): converted in Python."""
P = TypeVar("P")


class _TypedSource(msgspec.Struct, gc=False):
    table: Literal["node", "rel", "relation"]
    ts_ns: _TimestampNs
    db: Any = None


class _TypedElement(msgspec.Struct, Generic[P], gc=False):
    """``after`` of an insert or update: ``properties`` required."""

    id: _Id
    labels: _Labels
    properties: P
    startId: str | None = None
    endId: str | None = None


class _TypedDeleted(msgspec.Struct, Generic[P], gc=False):
    """``before`` of a delete: ``properties`` may be omitted (then empty)."""

    id: _Id
    labels: _Labels
    properties: P | None = None
    startId: str | None = None
    endId: str | None = None


class _AfterPayload(msgspec.Struct, Generic[P], gc=False):
    source: _TypedSource
    element: _TypedElement[P] = msgspec.field(name="after")


class _BeforePayload(msgspec.Struct, Generic[P], gc=False):
    source: _TypedSource
    element: _TypedDeleted[P] = msgspec.field(name="before")


class _Insert(msgspec.Struct, Generic[P], tag="i", tag_field="op", gc=False):
    OP: ClassVar[Op] = Op.INSERT
    payload: _AfterPayload[P]
    reactivatorStart_ns: Any = None
    reactivatorEnd_ns: Any = None


class _Update(msgspec.Struct, Generic[P], tag="u", tag_field="op", gc=False):
    OP: ClassVar[Op] = Op.UPDATE
    payload: _AfterPayload[P]
    reactivatorStart_ns: Any = None
    reactivatorEnd_ns: Any = None


class _Delete(msgspec.Struct, Generic[P], tag="d", tag_field="op", gc=False):
    OP: ClassVar[Op] = Op.DELETE
    payload: _BeforePayload[P]
    reactivatorStart_ns: Any = None
    reactivatorEnd_ns: Any = None


class _TypedEnvelope(msgspec.Struct, Generic[P], gc=False):
    data: list[_Insert[P] | _Update[P] | _Delete[P]]


_FLAT = msgspec.json.Decoder(_TypedEnvelope[_FlatProperties])
_TYPED = msgspec.json.Decoder(_TypedEnvelope[_AnyProperties])
_RELATION: Final = ElementKind.RELATION


def _typed_changes(  # noqa: C901  (the per-entry fast path, inline on purpose)
    entry_id: str, fields: Mapping[bytes, bytes]
) -> tuple[ElementChange, ...] | None:
    """The changes of a well-formed change entry, parsed and type-checked by msgspec in C.

    An entry whose rows are all rows of scalars (:data:`_FlatProperties`, the usual entry) is
    done in one parse; any other (a nested value, an integer beyond i64) fails that parse and
    is parsed again with any values (:data:`_AnyProperties`), converted by
    :func:`element_properties`.

    ``None`` whenever the entry is anything else (a control entry, a malformed one, a shape
    the typed decoder does not take): the checked path then decides, with its exact reasons.
    It never accepts what the checked path rejects: the structs above state the checks of
    ``_decode_change`` as types (the op as the tag choosing which element is read and whether
    it needs ``properties``, non-empty ``id`` and ``labels``, the table names, the ``ts_ns``
    lower bound) and the rest is repeated here; a payload that is not valid UTF-8 (which msgspec
    does not check in fields it skips) is left to the checked path. So is a number written
    ``-0`` in a field that is read: msgspec gives the integer 0 where the checked path gives
    -0.0, so the text is searched for one (:data:`_MINUS_ZERO`) only when a field that is read
    holds an integer 0 or a nested value (any other field of the text is skipped or a string).
    """
    raw = fields.get(b"data")  # the usual field: spares the search of _payload_field
    if raw is None:
        found = _payload_field(fields)
        if found is None:
            return None
        raw = found[1]
    if type(raw) is not bytes or (not raw.isascii() and not _is_utf8(raw)):
        return None
    parsed = _parse(raw)
    if parsed is None:
        return None
    events, flat = parsed
    nested = False  # a row element_properties converted (when not flat)
    if events:
        db = events[0].payload.source.db
        if type(db) is str and len(db) == 5 and db.lower() == "drasi":  # a control entry
            return None
    ms, seq = _entry_position(entry_id)
    changes: list[ElementChange] = []
    append = changes.append
    zero = False  # an integer 0 was read where the text may say -0 (msgspec reads it as 0)
    for index, event in enumerate(events):
        source = event.payload.source
        data = event.payload.element
        kind = _TABLES[source.table]
        start_id, end_id = data.startId, data.endId
        if kind is _RELATION:
            if start_id is None or end_id is None:
                return None
        else:
            start_id = end_id = None
        properties = data.properties
        start_ns, end_ns = event.reactivatorStart_ns, event.reactivatorEnd_ns
        if start_ns is not None or end_ns is not None:
            start_ns, end_ns = _optional_ns(start_ns), _optional_ns(end_ns)
            zero = zero or start_ns == 0 or end_ns == 0
        ts_ns = source.ts_ns
        if ts_ns > _U64_MAX:
            return None
        if properties is None:
            values = FrozenMap()
        elif flat:  # as Drasi holds them already
            zero = zero or 0 in properties.values()
            values = FrozenMap(properties)
        else:
            read = element_properties(properties, False)  # a new map: nested values, or big ints
            nested = nested or read is not properties
            zero = zero or nested or 0 in properties.values()
            values = FrozenMap(read)
        zero = zero or ts_ns == 0
        element = Element(kind, data.id, data.labels, values, start_id, end_id, ts_ns // _NS_PER_MS)
        append(ElementChange(event.OP, element, (ms, seq, index), Timing(ts_ns, start_ns, end_ns)))
    if not flat:
        _SHAPE.nested = nested
    if zero and _MINUS_ZERO.search(raw):  # a -0: the float -0.0 (see _loads)
        return None
    return tuple(changes)


class _Shape:
    """Which typed parse :func:`_parse` tries first: rows of any values when the last entry
    parsed that way had a row that needed converting, else rows of scalars. A hint, never part
    of a result (both parses give the same changes): a source that sends nested rows does not
    pay a failed parse per entry, one that sends flat rows none at all."""

    __slots__ = ("nested",)

    def __init__(self) -> None:
        self.nested = False


_SHAPE: Final = _Shape()


def _parse(raw: bytes) -> tuple[list[Any], bool] | None:
    """The events of an entry by a typed parse, and whether its rows were read as rows of
    scalars (:data:`_FlatProperties`: nothing to convert); None when neither parse takes it."""
    if not _SHAPE.nested:
        try:
            return _FLAT.decode(raw).data, True
        except msgspec.ValidationError:  # a nested value or a big integer, or malformed
            pass
        except msgspec.DecodeError:  # not JSON: the other parse would say the same
            return None
    try:
        return _TYPED.decode(raw).data, False
    except msgspec.DecodeError:  # includes ValidationError
        return None


def _payload_field(fields: Mapping[bytes, bytes]) -> tuple[bytes, bytes] | None:
    """The first present payload field of the entry: ``(name, raw JSON)``."""
    for key in _ENTRY_FIELDS:
        raw = fields.get(key)
        if raw is not None:
            return key, raw
    return None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# the checked path (plain Python over orjson: exact reasons)
# --------------------------------------------------------------------------------------------


def _read_events(fields: Mapping[bytes, bytes]) -> list[Any]:
    """The ``data`` array of the entry's CloudEvent, from the first present payload field."""
    found = _payload_field(fields)
    if found is None:
        raise DecodeError(_NO_DATA)
    key, raw = found
    try:
        document = _loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"invalid JSON in field '{key.decode()}': {exc}") from exc
    if type(document) is not dict:
        raise DecodeError(_BAD_DATA)
    events = document.get("data")
    if type(events) is not list:
        raise DecodeError(_BAD_DATA)
    return events


def _loads(raw: bytes) -> Any:
    """``orjson.loads``, except that a number written ``-0`` is the float -0.0, as serde_json
    reads it (module docstring). orjson checks the text first, so both accept the same texts;
    only a text with such a number is read a second time, by the standard library."""
    document = orjson.loads(raw)
    if _MINUS_ZERO.search(raw):
        return json.loads(raw, parse_int=_int_or_minus_zero)
    return document


def _int_or_minus_zero(text: str) -> int | float:
    return -0.0 if text == "-0" else int(text)


def _entry_position(entry_id: str) -> tuple[int, int]:
    """``"<ms>-<seq>"`` -> ``(ms, seq)``, like :func:`parse_entry_id` (inlined: hot path)."""
    ms, _, seq = entry_id.partition("-")
    try:
        return int(ms), int(seq) if seq else 0
    except ValueError as exc:
        raise DecodeError(f"invalid stream entry id {entry_id!r}") from exc


def _is_control(event: Any) -> bool:
    """Whether ``event`` (the entry's first) marks a control entry: ``payload.source.db``."""
    if type(event) is not dict:
        return False
    payload = event.get("payload")
    if type(payload) is not dict:
        return False
    source = payload.get("source")
    if type(source) is not dict:
        return False
    db = source.get("db")
    return type(db) is str and len(db) == 5 and db.lower() == "drasi"


def _decode_change(event: Any, version: Version) -> ElementChange:
    """One data event -> its :class:`ElementChange`. Raises :class:`DecodeError`."""
    payload = _payload(event)
    op = _op(event)
    source = payload.get("source")
    if type(source) is not dict:
        raise DecodeError(_BAD_SOURCE)
    kind = _table_kind(source.get("table"))
    ts_ns = source.get("ts_ns")
    if type(ts_ns) is not int or ts_ns < 0:
        raise DecodeError(_BAD_TS)
    data = _element_data(op, payload)
    element_id = data.get("id")
    if type(element_id) is not str or not element_id:
        raise DecodeError(_BAD_ID)
    labels = _labels(data.get("labels"))
    properties = element_properties(data.get("properties"), op is Op.DELETE)
    start_id = end_id = None
    if kind is _RELATION:
        start_id = data.get("startId")
        if type(start_id) is not str:
            raise DecodeError(_BAD_START)
        end_id = data.get("endId")
        if type(end_id) is not str:
            raise DecodeError(_BAD_END)
    start_ns = event.get("reactivatorStart_ns")
    end_ns = event.get("reactivatorEnd_ns")
    if start_ns is not None or end_ns is not None:  # profiling data is rare: skip the checks
        start_ns = _optional_ns(start_ns)
        end_ns = _optional_ns(end_ns)
    element = Element(
        kind, element_id, labels, FrozenMap(properties), start_id, end_id, ts_ns // _NS_PER_MS
    )
    return ElementChange(op, element, version, Timing(ts_ns, start_ns, end_ns))


def _payload(event: Any) -> dict[str, Any]:
    if type(event) is not dict:
        raise DecodeError(_BAD_EVENT)
    payload = event.get("payload")
    if type(payload) is not dict:
        raise DecodeError(_BAD_PAYLOAD)
    return payload


def _op(event: dict[str, Any]) -> Op:
    """The event's operation (its code ``i``, ``u`` or ``d``)."""
    code = event.get("op")
    if type(code) is not str:
        raise DecodeError(_BAD_OP)
    op = _OPS.get(code)
    if op is None:
        raise DecodeError(f"unknown operation type '{code}'")
    return op


def _table_kind(table: Any) -> ElementKind:
    """The element kind of a ``payload.source.table``."""
    if type(table) is not str:
        raise DecodeError(_BAD_TABLE)
    kind = _TABLES.get(table)
    if kind is None:
        raise DecodeError(f"unknown table type '{table}'")
    return kind


def _element_data(op: Op, payload: dict[str, Any]) -> dict[str, Any]:
    """``after`` for inserts and updates, ``before`` for deletes."""
    if op is Op.DELETE:
        data = payload.get("before")
        if type(data) is not dict:
            raise DecodeError(_BAD_BEFORE)
    else:
        data = payload.get("after")
        if type(data) is not dict:
            raise DecodeError(_BAD_AFTER)
    return data


def _labels(labels: Any) -> tuple[str, ...]:
    if type(labels) is not list:
        raise DecodeError(_BAD_LABELS)
    if not labels:
        raise DecodeError(_EMPTY_LABELS)
    for label in labels:
        if type(label) is not str:
            raise DecodeError(_BAD_LABEL)
    return tuple(labels)


def element_properties(properties: Any, is_delete: bool) -> dict[str, Any]:
    """The element's property map, its values as Drasi holds them (an integer beyond i64 a
    float); a delete may omit it (see the module docstring). Shared with the CDC formats'
    decoders (:mod:`drasi_ray.source.cdc`), which read a row's columns the same way."""
    if type(properties) is not dict:
        if properties is None and is_delete:
            return {}
        raise DecodeError(_BAD_PROPERTIES)
    for value in properties.values():
        kind = type(value)
        if kind is str or kind is float:  # the common values, settled with two identity tests
            continue
        if kind is list or kind is dict or (kind is int and not I64_MIN <= value <= I64_MAX):
            # orjson gives floats below i64 min and above u64 max, msgspec ints: both floats
            return {key: as_element_value(item) for key, item in properties.items()}
    return properties


def _optional_ns(value: Any) -> int | None:
    return value if type(value) is int and 0 <= value <= _U64_MAX else None


# --------------------------------------------------------------------------------------------
# control events
# --------------------------------------------------------------------------------------------


def _decode_controls(
    entry_id: str, events: list[Any], ms: int, seq: int
) -> tuple[ControlEvent, ...]:
    controls: list[ControlEvent] = []
    for index, event in enumerate(events):
        control = _decode_control(entry_id, event, (ms, seq, index))
        if control is not None:
            controls.append(control)
    return tuple(controls)


def _decode_control(entry_id: str, event: Any, version: Version) -> ControlEvent | None:
    """One control event; ``None`` for a subscription without its ids (logged as a warning).

    The type is read before anything else: an unknown type's schema is unknown, so only its
    envelope (``payload.source.table``) is required, and it is skipped, never dead-lettered.
    """
    payload = _payload(event)
    source = payload.get("source")
    if type(source) is not dict:
        raise DecodeError(_BAD_SOURCE)
    control_type = source.get("table")
    if type(control_type) is not str:
        raise DecodeError(_BAD_TABLE)
    if control_type != _SUBSCRIPTION:
        return UnknownControl(control_type, version)
    op = _op(event)
    data = payload.get("before" if op is Op.DELETE else "after")
    data = data if type(data) is dict else {}
    query_id = data.get("queryId")
    query_node_id = data.get("queryNodeId")
    if type(query_id) is not str or type(query_node_id) is not str:
        _log.warning(
            "skipping %s control event %s[%d]: missing or invalid 'queryId' or 'queryNodeId'",
            _SUBSCRIPTION,
            entry_id,
            version[2],
        )
        return None
    node_labels = _label_filter(data.get("nodeLabels"), "nodeLabels")
    relation_labels = _label_filter(data.get("relLabels"), "relLabels")
    return SubscriptionControl(op, query_id, query_node_id, node_labels, relation_labels, version)


def _label_filter(labels: Any, name: str) -> tuple[str, ...]:
    """An optional label list of a subscription: absent or null means none."""
    if labels is None:
        return ()
    if type(labels) is not list or any(type(label) is not str for label in labels):
        raise DecodeError(f"invalid '{name}' array: must be a list of strings")
    return tuple(labels)


# --------------------------------------------------------------------------------------------
# encoding (producers, tests, the demo)
# --------------------------------------------------------------------------------------------


def encode_cloud_event(
    events: Sequence[Mapping[str, Any]], *, source: str = "drasi-ray", topic: str | None = None
) -> bytes:
    """Wrap platform events in a CloudEvent, as JSON bytes for the ``data`` field of XADD.

    ``topic`` is included only when given. ``id`` is a fresh UUID and ``time`` the current UTC
    time: neither matters to the decoder, which orders changes by the stream entry id.
    """
    document: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "source": source,
        "type": "com.dapr.event.sent",
        "specversion": "1.0",
        "datacontenttype": "application/json",
        "time": datetime.now(timezone.utc),
    }
    if topic is not None:
        document["topic"] = topic
    document["data"] = [event if type(event) is dict else dict(event) for event in events]
    return orjson.dumps(document, option=orjson.OPT_UTC_Z)


def change_event(
    op: Op | str, element: Element, ts_ns: int, db: str = "drasi-ray"
) -> dict[str, Any]:
    """The platform event saying ``op`` happened to ``element`` at ``ts_ns`` (nanoseconds).

    ``decode_entry`` turns it back into an :class:`ElementChange` whose element equals
    ``element`` with ``effective_from = ts_ns // 1_000_000``. Relations use table ``rel``.
    """
    code = Op(op)
    data: dict[str, Any] = {
        "id": element.id,
        "labels": list(element.labels),
        "properties": dict(element.properties),
    }
    if element.kind is ElementKind.RELATION:
        data["startId"] = element.start_id
        data["endId"] = element.end_id
    table = "node" if element.kind is ElementKind.NODE else "rel"
    return {
        "op": code.value,
        "payload": {
            "before" if code is Op.DELETE else "after": data,
            "source": {"db": db, "table": table, "ts_ns": ts_ns},
        },
    }


def subscription_event(
    op: Op | str,
    query_id: str,
    query_node_id: str = "default",
    node_labels: Sequence[str] = (),
    relation_labels: Sequence[str] = (),
    ts_ns: int = 0,
) -> dict[str, Any]:
    """A ``SourceSubscription`` control event (``i`` subscribe, ``u`` change, ``d`` leave)."""
    code = Op(op)
    data = {
        "queryId": query_id,
        "queryNodeId": query_node_id,
        "nodeLabels": list(node_labels),
        "relLabels": list(relation_labels),
    }
    return {
        "op": code.value,
        "payload": {
            "before" if code is Op.DELETE else "after": data,
            "source": {"db": "Drasi", "table": _SUBSCRIPTION, "ts_ns": ts_ns},
        },
    }
