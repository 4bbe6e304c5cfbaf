"""The versioned element store: what the graph of one source is (docs/semantics.md §2).

Plain semantics (Drasi's): an **insert** replaces the element whole; an **update** is an upsert
that merges, keeping properties absent from the update; a **delete** of an unknown element does
nothing.

Versions make those semantics independent of arrival order. Every change carries its
:data:`~drasi_ray.model.changes.Version` (stream entry id, then position in the entry), and the
store keeps, per element:

- ``reset``: the version of the latest insert or delete (the latest change that replaced or
  removed everything before it). A change not newer than ``reset`` can alter nothing, so it is
  dropped on sight: that is how redeliveries, duplicates and overtaken changes become no-ops.
  After a delete the record stays as a *tombstone* holding ``reset``, which blocks older changes
  arriving later.
- ``head``: the version of the newest insert/update, which set the labels, the kind, the relation
  endpoints and ``effective_from``.
- per property, its value and the version that set it. A property takes a value only from a
  newer version than the one that set it; an insert or delete removes the properties set by
  older versions.

The state is therefore a function of the *set* of changes applied, not of their order: for the
set S, the element exists iff some insert/update in S is newer than every delete in S; it then
has the labels, kind, endpoints and time of the newest insert/update, and for each property key
the value from the newest insert/update that carries the key and is not older than the newest
insert or delete in S. That is exactly what applying S in version order gives, so whatever the
interleaving of consumers (and however often a change is redelivered) the store converges to
the in-order result; a late older change can only fill in what in-order application would have
had. Applied in order, every change is newer than everything stored and the store performs
Drasi's plain upsert semantics step for step.

:meth:`ElementStore.apply` returns an :class:`~drasi_ray.model.changes.ElementDelta` only when the
visible element changed. "Changed" is strict: ``1``, ``1.0`` and ``true`` are different values
here even though Python's ``==`` says otherwise, so a type change is never lost.

Tombstones are kept until :meth:`ElementStore.forget_tombstones` is told that no change older
than a bound can arrive any more (the consumers work that bound out from the stream: see
:meth:`~drasi_ray.streams.backend.RedisStreamBackend.tombstone_bound`). Forgetting one sooner
would let an older change that arrives late resurrect a deleted element.

**Persisted record format** (:meth:`ElementStore.snapshot_element`, orjson with sorted keys,
never pickle; the same set of applied changes gives the same bytes, whatever their order). A
JSON array, positional because a shard writes one per changed element per batch::

    [4,
     reset,          # [ms, seq, index] of the latest insert/delete; null: none yet
     head,           # [ms, seq, index] of the newest insert/update (labels, kind, endpoints, time)
     alive,          # true | false (false: a tombstone, head fields then empty)
     kind,           # "node" | "relation" | null
     labels,         # ["Label", ...]
     startId, endId, # str | null
     effectiveFrom,  # ms, of the change at ``head``
     values,         # {"key": value, ...}
     older]          # {"key": [ms, seq, index], ...}: the version that set each value set
                     # by a change older than ``head``; every other value was set by
                     # ``head``. null when every value was (the usual record: an element
                     # whose latest change carried all of its properties)

Format 3 (the same, but the last field the version of every value, or null when every value
was set by ``head``), format 2 (that map always written) and format 1 (a JSON object with the
same fields and ``"properties": {"key": [value, version]}``) are still read.

Values are stored as JSON: a tuple nested in a property comes back as a list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

import orjson

from drasi_ray.model.changes import (
    Element,
    ElementChange,
    ElementDelta,
    ElementKind,
    FrozenMap,
    Op,
    Version,
)
from drasi_ray.model.errors import DrasiRayError

__all__ = ["ElementStore"]

_NEVER: Final[Version] = (-1, -1, -1)
"""Older than every real version: the reset/head of a record nothing has set yet."""

RECORD_FORMAT: Final = 4

_NONE_OLDER: Final[dict[str, Version]] = {}
"""The ``older`` of a record whose every value was set by its head (read, never written)."""

_INSERT: Final = Op.INSERT
_UPDATE: Final = Op.UPDATE
"""As module globals for :meth:`ElementStore.apply`: reading a member off its enum class costs
about nine times a global read in CPython 3.11."""


class _Record:
    """The versioned state of one element id (see the module docstring for the invariants)."""

    __slots__ = (
        "alive",
        "effective_from",
        "element",
        "end_id",
        "head",
        "kind",
        "labels",
        "older",
        "reset",
        "start_id",
        "values",
    )

    def __init__(self) -> None:
        self.reset: Version = _NEVER
        self.head: Version = _NEVER
        self.alive = False
        self.kind: ElementKind | None = None
        self.labels: tuple[str, ...] = ()
        self.start_id: str | None = None
        self.end_id: str | None = None
        self.effective_from = 0
        # ``older``: the version of each value set by a change older than ``head`` (every other
        # value was set by ``head``); None when every value was (the usual record, an element
        # whose latest change carried all of its properties): then no map at all.
        self.values: dict[str, Any] = {}
        self.older: dict[str, Version] | None = None
        self.element: Element | None = None  # the current visible element, built once per change

    def clear(self) -> None:
        """Forget all but ``reset``: a tombstone. Clearing the head too keeps the persisted
        record a function of the set of applied changes, whatever their order."""
        self.head = _NEVER
        self.alive = False
        self.kind = None
        self.labels = ()
        self.start_id = None
        self.end_id = None
        self.effective_from = 0
        self.values = {}
        self.older = None

    def set_head(self, element: Element, version: Version) -> None:
        """Take what the newest insert/update sets: kind, labels, endpoints and time."""
        self.head = version
        self.alive = True
        self.kind = element.kind
        self.labels = element.labels
        self.start_id = element.start_id
        self.end_id = element.end_id
        self.effective_from = element.effective_from

    def version_map(self) -> dict[str, Version]:
        """The version that set each value (a new map: :meth:`keep_versions` takes it back)."""
        versions = dict.fromkeys(self.values, self.head)
        if self.older:
            versions.update(self.older)
        return versions

    def keep_versions(self, versions: dict[str, Version]) -> None:
        """Keep the version that set each value (of :meth:`version_map`'s keys) as ``older``."""
        head = self.head
        self.older = {key: set_by for key, set_by in versions.items() if set_by != head} or None

    def insert(self, element: Element, version: Version) -> None:
        """Replace: only the insert's properties and those set by newer versions remain."""
        self.reset = version
        if version > self.head:  # newer than every value: the insert's properties alone
            self.values = dict(element.properties)
            self.older = None
            self.set_head(element, version)
            return
        kept_values, kept_versions = self.values, self.version_map()
        values: dict[str, Any] = dict(element.properties)
        versions = dict.fromkeys(values, version)
        for key, set_by in kept_versions.items():
            if set_by > version:  # an update newer than this insert, applied before it arrived
                values[key] = kept_values[key]
                versions[key] = set_by
        self.values = values
        self.keep_versions(versions)

    def update(self, element: Element, version: Version) -> bool:
        """Merge; returns whether anything was written (False: every part was set by newer)."""
        properties = element.properties
        values = self.values
        if version > self.head:  # newer than every part (none was set after head): all written
            values.update(properties)
            if len(values) == len(properties):  # it carried every key: each now set by it
                self.older = None
            else:  # the others keep the version that set them: the old head's if not older
                head, previous = self.head, self.older or _NONE_OLDER
                self.older = {
                    key: previous.get(key, head) for key in values if key not in properties
                }
            self.set_head(element, version)
            return True
        wrote = False
        versions = self.version_map()
        for key, value in properties.items():
            set_by = versions.get(key)
            if set_by is None or set_by < version:
                values[key] = value
                versions[key] = version
                wrote = True
        if wrote:
            self.keep_versions(versions)
        return wrote

    def delete(self, version: Version) -> None:
        """Remove everything set by older versions; the element survives only if newer exists."""
        self.reset = version
        if self.head < version:  # every part was set at or before head: all of it goes
            self.clear()
            return
        values, versions = self.values, self.version_map()
        removed = [key for key, set_by in versions.items() if set_by < version]
        for key in removed:
            del values[key]
            del versions[key]
        self.keep_versions(versions)

    def build(self, element_id: str) -> Element | None:
        if not self.alive or self.kind is None:
            return None
        return Element(
            self.kind,
            element_id,
            self.labels,
            FrozenMap(self.values),
            self.start_id,
            self.end_id,
            self.effective_from,
        )


class ElementStore:
    """The versioned element store of one source. Not thread-safe: one owner applies changes.

    ``apply`` is the only mutator besides ``load_element``; both mark the element id *dirty*
    so a persister can write exactly the records that changed (:meth:`take_dirty`).
    """

    __slots__ = ("_alive", "_dirty", "_records", "_tombstones")

    def __init__(self) -> None:
        self._records: dict[str, _Record] = {}
        self._dirty: set[str] = set()
        self._tombstones: set[str] = set()  # ids whose record holds no visible element
        self._alive = 0

    def apply(self, change: ElementChange) -> ElementDelta | None:
        """Apply one change by its version; the delta, or ``None`` if nothing visible changed.

        ``None`` covers redeliveries, duplicates, changes overtaken by a newer insert or delete,
        a delete of an unknown element, and late older changes that only fill in the version
        bookkeeping. The delta's ``after.effective_from`` is that of the newest change that set
        the element; its ``source_time_ms`` is the applied change's ``effective_from``.
        """
        element, version = change.element, change.version
        element_id = element.id
        record = self._records.get(element_id)
        if record is None:
            record = self._records[element_id] = _Record()
        elif version <= record.reset:
            return None
        op = change.op
        if op is _UPDATE:
            if not record.update(element, version):
                return None
        elif op is _INSERT:
            record.insert(element, version)
        else:
            record.delete(version)
        self._dirty.add(element_id)
        return self._settle(record, element_id, version, element.effective_from, op is _INSERT)

    def _settle(
        self,
        record: _Record,
        element_id: str,
        version: Version,
        source_time_ms: int,
        inserted: bool,
    ) -> ElementDelta | None:
        """Rebuild the visible element after a write; a delta if it differs from before."""
        before = record.element
        after = record.build(element_id)
        if before is None:
            if after is None:
                self._tombstones.add(element_id)
                return None
            self._alive += 1
            self._tombstones.discard(element_id)
        elif after is None:
            self._alive -= 1
            self._tombstones.add(element_id)
        elif same_element(before, after):
            return None
        record.element = after
        return ElementDelta(before, after, version, source_time_ms, inserted)

    def get(self, element_id: str) -> Element | None:
        """The element as it stands, or ``None`` if it does not exist (or is deleted)."""
        record = self._records.get(element_id)
        return None if record is None else record.element

    def head_version(self, element_id: str) -> Version | None:
        """The version of the newest insert or update of an existing element (None: none)."""
        record = self._records.get(element_id)
        return None if record is None or record.element is None else record.head

    def elements(self) -> Iterator[Element]:
        """Every existing element, as of the call (later applies do not disturb the iteration)."""
        current = [r.element for r in self._records.values() if r.element is not None]
        return iter(current)

    def __len__(self) -> int:
        """The number of existing elements (tombstones do not count)."""
        return self._alive

    def __contains__(self, element_id: object) -> bool:
        record = self._records.get(element_id) if isinstance(element_id, str) else None
        return record is not None and record.element is not None

    @property
    def tombstones(self) -> int:
        """The number of records kept for ids that hold no element (deleted, or never seen
        alive: a delete of an unknown element still blocks older changes)."""
        return len(self._tombstones)

    def forget_tombstones(self, bound: tuple[int, int]) -> list[str]:
        """Drop the tombstones whose latest insert or delete is older than stream position
        ``bound`` (``(ms, seq)`` of an entry id); returns their ids.

        Contract: the caller guarantees that no change from an entry older than ``bound`` can
        reach :meth:`apply` any more. A tombstone only blocks older changes, so it is then
        useless and forgetting it cannot change any result. Dirty records are kept (their
        tombstone is not persisted yet): the caller deletes the returned ids from the durable
        store, and a later call forgets the rest.
        """
        records, dirty = self._records, self._dirty
        forgotten = [
            element_id
            for element_id in self._tombstones
            if element_id not in dirty and records[element_id].reset[:2] < bound
        ]
        for element_id in forgotten:
            del records[element_id]
        self._tombstones.difference_update(forgotten)
        return forgotten

    def record_ids(self) -> list[str]:
        """Every id the store keeps a record for: its elements and its tombstones."""
        return list(self._records)

    def drop(self, element_ids: Iterable[str]) -> None:
        """Forget the records of ``element_ids`` (they moved to another store shard, which
        loaded them: :meth:`snapshot_element` then :meth:`load_element`). Nothing is marked
        dirty: the durable record stays as it is, now the other shard's."""
        records = self._records
        for element_id in element_ids:
            record = records.pop(element_id, None)
            if record is None:
                continue
            if record.element is not None:
                self._alive -= 1
            self._tombstones.discard(element_id)
            self._dirty.discard(element_id)

    def take_dirty(self) -> set[str]:
        """The ids whose record changed since the last call (including tombstones); clears it."""
        dirty = self._dirty
        self._dirty = set()
        return dirty

    def dirty_ids(self) -> frozenset[str]:
        """The ids whose record changed since the last :meth:`take_dirty` (not clearing it)."""
        return frozenset(self._dirty)

    def mark_clean(self, element_ids: Iterable[str]) -> None:
        """Unmark records whose durable copy is known to be current (e.g. a record a shard
        handed over during a rescale, loaded by its new owner)."""
        self._dirty.difference_update(element_ids)

    def mark_dirty(self, element_ids: Iterable[str]) -> None:
        """Mark records dirty again, e.g. after persisting what :meth:`take_dirty` gave failed.

        Ids the store has no record for are ignored: there is nothing to persist for them.
        """
        records = self._records
        self._dirty.update(element_id for element_id in element_ids if element_id in records)

    def snapshot_element(self, element_id: str) -> bytes:
        """The record of ``element_id`` in the persisted format (module docstring).

        Raises ``KeyError`` if the store has no record for it (never seen, not even deleted).
        """
        return _dump_record(self._records[element_id])

    def load_element(self, element_id: str, data: bytes) -> None:
        """Replace the record of ``element_id`` with a persisted one (e.g. after a restart).

        Raises :class:`DrasiRayError` naming the problem if ``data`` is not a valid record.
        """
        record = _load_record(element_id, data)
        old = self._records.get(element_id)
        self._alive += (record.element is not None) - (old is not None and old.element is not None)
        self._records[element_id] = record
        if record.element is None:
            self._tombstones.add(element_id)
        else:
            self._tombstones.discard(element_id)
        self._dirty.add(element_id)


# --------------------------------------------------------------------------------------------
# strict equality: 1, 1.0 and True are different property values
# --------------------------------------------------------------------------------------------


def same_element(a: Element, b: Element) -> bool:
    """Whether two elements are indistinguishable to a query, value types included."""
    return (
        a.effective_from == b.effective_from
        and a.labels == b.labels
        and a.kind is b.kind
        and a.id == b.id
        and a.start_id == b.start_id
        and a.end_id == b.end_id
        and same_map(a.properties, b.properties)
    )


def same_map(a: dict[str, Any], b: dict[str, Any]) -> bool:
    # Strictly the same implies ``==`` (dict equality compares identical values as equal), so
    # a difference under ``==`` settles it in C; only equal maps need their types checked.
    if a != b:
        return False
    for key, value in a.items():
        other = b[key]
        if value is not other and not same_value(value, other):
            return False
    return True


def same_value(a: Any, b: Any) -> bool:
    """``==`` that also requires equal types, at any depth (``1 == True`` is not the same)."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is list or kind is tuple:
        return len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, dict):
        return same_map(a, b)
    return bool(a == b)


# --------------------------------------------------------------------------------------------
# persistence
# --------------------------------------------------------------------------------------------


def _dump_record(record: _Record) -> bytes:
    head = record.head
    return orjson.dumps(
        (
            RECORD_FORMAT,
            None if record.reset == _NEVER else record.reset,
            None if head == _NEVER else head,
            record.alive,
            record.kind,  # an enum of str: orjson writes its value
            record.labels,
            record.start_id,
            record.end_id,
            record.effective_from,
            record.values,
            record.older,  # None when every value was set by head
        ),
        option=orjson.OPT_SORT_KEYS,
    )


class _RecordError(DrasiRayError):
    pass


def _load_record(element_id: str, data: bytes) -> _Record:
    try:
        doc = orjson.loads(data)
        if type(doc) is list and len(doc) == 11 and doc[0] in _POSITIONAL_FORMATS:
            record = _record_of(*doc[1:9])
            _load_properties(record, _values_and_versions(doc[0], doc[2], doc[9], doc[10]))
        elif type(doc) is dict and doc.get("format") == 1:
            record = _record_of(*(doc.get(name) for name in _FORMAT_1_FIELDS))
            _load_properties(record, _field(doc, "properties", dict))
        else:
            raise _RecordError(f"not an element record of format 1, 2 or {RECORD_FORMAT}")
    except (orjson.JSONDecodeError, ValueError, _RecordError) as exc:
        raise DrasiRayError(f"invalid element record for {element_id!r}: {exc}") from exc
    if record.alive and record.kind is None:
        raise DrasiRayError(f"invalid element record for {element_id!r}: alive without a kind")
    record.element = record.build(element_id)
    return record


_POSITIONAL_FORMATS: Final = (2, 3, RECORD_FORMAT)
_FORMAT_1_FIELDS: Final = (
    "reset", "head", "alive", "kind", "labels", "startId", "endId", "effectiveFrom"
)  # fmt: skip


def _record_of(
    reset: Any,
    head: Any,
    alive: Any,
    kind: Any,
    labels: Any,
    start_id: Any,
    end_id: Any,
    effective_from: Any,
) -> _Record:
    """A record with every field but the properties, each checked."""
    record = _Record()
    record.reset = _load_version(reset, "reset", allow_null=True)
    record.head = _load_version(head, "head", allow_null=True)
    record.alive = _typed(alive, "alive", bool)
    record.kind = None if kind is None else ElementKind(kind)
    record.labels = tuple(_strings(labels, "labels"))
    record.start_id = _optional_str(start_id, "startId")
    record.end_id = _optional_str(end_id, "endId")
    record.effective_from = _typed(effective_from, "effectiveFrom", int)
    return record


def _values_and_versions(form: int, head: Any, values: Any, versions: Any) -> dict[str, Any]:
    """The two maps of formats 2 to 4 as format 1's ``{key: [value, version]}``."""
    values = _typed(values, "values", dict)
    if form == RECORD_FORMAT:  # the versions of the values set before head
        older = {} if versions is None else _typed(versions, "older", dict)
        if not older.keys() <= values.keys():
            raise _RecordError("'older' names a key that has no value")
        versions = {key: older.get(key, head) for key in values}
    elif versions is None and form == 3:  # every value set by head
        versions = dict.fromkeys(values, head)
    if type(versions) is not dict or values.keys() != versions.keys():
        raise _RecordError("'values' and 'versions' must be maps with the same keys")
    return {key: [value, versions[key]] for key, value in values.items()}


def _load_properties(record: _Record, properties: dict[str, Any]) -> None:
    values: dict[str, Any] = {}
    versions: dict[str, Version] = {}
    for key, pair in properties.items():
        if type(pair) is not list or len(pair) != 2:
            raise _RecordError(f"property {key!r} is not a [value, version] pair")
        values[key] = pair[0]
        versions[key] = _load_version(pair[1], f"properties.{key}", allow_null=False)
    record.values = values
    record.keep_versions(versions)


def _load_version(value: Any, name: str, *, allow_null: bool) -> Version:
    if value is None and allow_null:
        return _NEVER
    if type(value) is list and len(value) == 3 and all(type(part) is int for part in value):
        return (value[0], value[1], value[2])
    raise _RecordError(f"invalid version in {name!r}")


def _field(doc: dict[str, Any], name: str, kind: type) -> Any:
    return _typed(doc.get(name), name, kind)


def _typed(value: Any, name: str, kind: type) -> Any:
    if type(value) is not kind:
        raise _RecordError(f"missing or invalid {name!r}")
    return value


def _strings(value: Any, name: str) -> list[str]:
    if type(value) is not list or any(type(item) is not str for item in value):
        raise _RecordError(f"missing or invalid {name!r}")
    return value


def _optional_str(value: Any, name: str) -> str | None:
    if value is not None and type(value) is not str:
        raise _RecordError(f"invalid {name!r}")
    return value
