"""The state of a query's stateful functions, and how it is persisted.

Drasi's future and stateful functions (``drasi.trueFor``, ``drasi.previousValue``, ...; see
:mod:`drasi_ray.query.future_functions`) remember things between changes. All of it lives in
one :class:`FunctionState` per query:

- the :class:`~drasi_ray.query.futures.FutureQueue` of scheduled re-evaluations;
- *values*: per (call site, result key), what a function keeps (the time since which a
  ``trueFor`` condition holds, the last two values of a ``previousValue``);
- *memos*: per (call site, row), the arguments a function was last applied to (as a digest)
  and what it returned then. A query actor that restarts rebuilds its rows from the element
  store; with the memos, each call returns what it returned before the restart (see
  :class:`~drasi_ray.query.evaluation.EvaluationMode`), so the rebuilt rows are the old rows and a
  pending ``trueFor`` fires once, when it is due.

Call sites are numbered in the order the engine compiles them
(:meth:`~drasi_ray.query.evaluation.EvaluationContext.register`), which depends only on the query
text, so the numbers mean the same thing after a restart. The state is plain data: a rebuilt
engine takes over the state of the one it replaces.

Persistence: :meth:`FunctionState.take_changes` returns the fields changed since the last call
(field name -> JSON bytes, None for a deleted field), ready for one Redis hash;
:meth:`FunctionState.load` restores them. Only JSON is stored, never pickle: values are encoded
by :func:`encode_value` (temporal values tagged; a graph element keeps only its properties).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import temporal
from drasi_ray.query.futures import FutureEntry, FutureQueue, QueueKey
from drasi_ray.query.values import AWAITING, hashable_key, is_list, to_output

MISSING: Any = object()
"""What :meth:`FunctionState.value` returns for a key that holds nothing."""

_QUEUE, _VALUE, _MEMO = "q", "v", "m"
"""First component of a persisted field name: a queue key, a value, a memo."""


@dataclass(frozen=True, slots=True)
class Memo:
    """What a call site last did for one row: the digest of its arguments, and its result
    (in the form the function chose to keep, see :func:`encode_value`)."""

    arguments: str
    result: Any


def digest(value: Any) -> str:
    """A short, stable text standing for ``value`` (a row key, a group key, arguments): equal
    values (by :func:`~drasi_ray.query.values.hashable_key`) give equal digests in every
    process, so digests can name persisted state."""
    text = repr(_canonical(value))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _canonical(value: Any) -> Any:
    """``value`` as plain nested tuples whose ``repr`` is stable: a whole float as an int
    (``5.0`` and ``5`` are one key), elements by kind and id, maps sorted."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, tuple):
        return tuple(_canonical(item) for item in value)
    if value is None or isinstance(value, (str, int, float)):
        return value
    try:
        key = hashable_key(value)
    except QueryEvaluationError:
        return repr(value)
    return repr(key) if key is value else _canonical(key)  # temporal values are their own key


# --------------------------------------------------------------------------- the state


class FunctionState:
    """Everything a query's stateful functions remember (see the module docstring)."""

    def __init__(self) -> None:
        self.queue = FutureQueue()
        self._values: dict[tuple[int, str], Any] = {}
        self._memos: dict[tuple[int, str], Memo] = {}
        self._dirty_values: set[tuple[int, str]] = set()
        self._dirty_memos: set[tuple[int, str]] = set()
        self.restored = False

    # ------------------------------------------------------------------ values

    def value(self, site: int, key: str) -> Any:
        """What ``site`` keeps for result key ``key`` (a :func:`digest`), or :data:`MISSING`."""
        return self._values.get((site, key), MISSING)

    def set_value(self, site: int, key: str, value: Any) -> None:
        """Keep ``value`` for (``site``, ``key``); :data:`MISSING` forgets it."""
        slot = (site, key)
        if value is MISSING:
            if self._values.pop(slot, MISSING) is MISSING:
                return
        elif self._values.get(slot, MISSING) == value:
            return
        else:
            self._values[slot] = value
        self._dirty_values.add(slot)

    # ------------------------------------------------------------------ memos

    def memo(self, site: int, row: str) -> Memo | None:
        return self._memos.get((site, row))

    def remember(self, site: int, row: str, memo: Memo) -> None:
        slot = (site, row)
        if self._memos.get(slot) != memo:
            self._memos[slot] = memo
            self._dirty_memos.add(slot)

    def forget(self, site: int, row: str) -> None:
        """Drop the memo of a row that is gone."""
        if self._memos.pop((site, row), None) is not None:
            self._dirty_memos.add((site, row))

    # ------------------------------------------------------------------ persistence

    def take_changes(self) -> dict[str, bytes | None]:
        """The persisted fields changed since the last call: name -> JSON bytes, or None for a
        field to delete. Empty when nothing changed."""
        changes: dict[str, bytes | None] = {}
        for key in self.queue.take_dirty():
            entries = self.queue.entries(key)
            rows = [[e.due_ms, e.original_ms, e.anchor_id] for e in entries]
            changes[_field(_QUEUE, key)] = orjson.dumps(rows) if rows else None
        for slot in self._dirty_values:
            value = self._values.get(slot, MISSING)
            changes[_field(_VALUE, slot)] = (
                None if value is MISSING else orjson.dumps(encode_value(value))
            )
        for slot in self._dirty_memos:
            memo = self._memos.get(slot)
            changes[_field(_MEMO, slot)] = (
                None if memo is None else orjson.dumps([memo.arguments, encode_value(memo.result)])
            )
        self._dirty_values.clear()
        self._dirty_memos.clear()
        return changes

    def load(self, fields: Mapping[str, bytes]) -> None:
        """Restore persisted fields (as :meth:`take_changes` wrote them), unmarked as changed.
        Sets :attr:`restored` when there was anything to restore."""
        entries: list[FutureEntry] = []
        for name, raw in fields.items():
            kind, site, key = _parse_field(name)
            data = orjson.loads(raw)
            if kind == _QUEUE:
                entries.extend(
                    FutureEntry(site, key, anchor, original, due) for due, original, anchor in data
                )
            elif kind == _VALUE:
                self._values[(site, key)] = decode_value(data)
            elif kind == _MEMO:
                self._memos[(site, key)] = Memo(data[0], decode_value(data[1]))
        self.queue.load(entries)
        self.restored = self.restored or bool(fields)


def _field(kind: str, slot: QueueKey) -> str:
    return f"{kind}:{slot[0]}:{slot[1]}"


def _parse_field(name: str) -> tuple[str, int, str]:
    kind, site, key = name.split(":", 2)
    return kind, int(site), key


# --------------------------------------------------------------------------- value codec


def encode_value(value: Any) -> Any:
    """``value`` as JSON-able data that :func:`decode_value` turns back into it. Temporal
    values, ``Awaiting``, non-finite floats and maps are tagged; a graph element is kept as the
    map of its properties (its identity is not needed by any stateful function)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if is_list(value):
        return [encode_value(item) for item in value]
    if isinstance(value, Element):
        return encode_value(to_output(value))
    if isinstance(value, Mapping):
        return {"$map": {str(key): encode_value(item) for key, item in value.items()}}
    if value is AWAITING:
        return {"$awaiting": True}
    return _encode_temporal(value)


def _encode_temporal(value: Any) -> Any:
    if isinstance(value, temporal.Duration):
        return {"$duration": [value.months, value.days, value.seconds, value.nanoseconds]}
    if isinstance(value, (dt.datetime, dt.time)):
        kind = "datetime" if isinstance(value, dt.datetime) else "time"
        return {f"${kind}": value.replace(tzinfo=None).isoformat(), "tz": _zone(value.tzinfo)}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    raise QueryEvaluationError(f"cannot keep a value of type {type(value).__name__}")


def _zone(zone: dt.tzinfo | None) -> Any:
    """A time zone as data: None, an IANA name, or a fixed offset in seconds."""
    if zone is None:
        return None
    if isinstance(zone, ZoneInfo):
        return zone.key
    offset = zone.utcoffset(None)
    return 0 if offset is None else int(offset.total_seconds())


def _unzone(data: Any) -> dt.tzinfo | None:
    if data is None:
        return None
    if isinstance(data, str):
        return ZoneInfo(data)
    return dt.timezone(dt.timedelta(seconds=data))


def decode_value(data: Any) -> Any:
    """The inverse of :func:`encode_value`."""
    if isinstance(data, list):
        return [decode_value(item) for item in data]
    if not isinstance(data, dict):
        return data
    if "$map" in data:
        return {key: decode_value(item) for key, item in data["$map"].items()}
    if "$float" in data:
        return float(data["$float"])
    if "$awaiting" in data:
        return AWAITING
    if "$duration" in data:
        return temporal.Duration(*data["$duration"])
    if "$date" in data:
        return dt.date.fromisoformat(data["$date"])
    if "$datetime" in data:
        return dt.datetime.fromisoformat(data["$datetime"]).replace(tzinfo=_unzone(data["tz"]))
    if "$time" in data:
        return dt.time.fromisoformat(data["$time"]).replace(tzinfo=_unzone(data["tz"]))
    raise QueryEvaluationError(f"cannot read kept value {data!r}")
