"""Element history: the versions of graph elements a query has seen, for Drasi's past functions.

``drasi.getVersionByTimestamp(element, ts)`` and ``drasi.getVersionsByTimeRange(element,
from, to[, retrieve_initial_value])`` (:mod:`drasi_ray.query.past`) read an element's earlier
versions. Drasi keeps them in an archive index beside each query; here a query whose text
calls one of them keeps an :class:`ElementHistory` (a query that does not pays nothing), and
so does the coordinator on its behalf, durably (:mod:`drasi_ray.shards.state`), which is
what lets a restarted query actor get its history back with its bootstrap.

Semantics (Drasi's archive):

- A version is the whole element as a change left it (an update's merged properties
  included), keyed by its ``effective_from``; a later version with the same effective_from
  replaces it. Versions are recorded as the query receives them, the version a change creates
  before the change is evaluated (so the before row of an update sees it too).
- ``as_at(ts)``: the latest version with ``effective_from <= ts``, else none.
- ``between(start, end)``: the versions with ``start <= effective_from <= end``, oldest first;
  with ``from_previous`` the range starts at the version in effect at ``start`` instead.

Bounds (:class:`HistoryLimits`): at most ``max_versions`` versions per element, the oldest
dropped first; with ``retention_ms``, versions older than ``retention_ms`` before the element's
newest version are dropped too, except the one still in effect at that cutoff. A deleted
element's history is dropped with it (Drasi's archive keeps it: docs/conformance.md). With
several consumers, a change applied after a newer change of the same element (both in flight at
once on different consumers) leaves no version: the history records what the query saw.

Two serialised forms (orjson, never pickle), both built of version rows ``[kind, labels,
properties, startId, endId, effectiveFrom]``:

- durable: one hash field per version, ``[elementId, effectiveFrom]`` -> its row, so a change
  writes one field however long the history (:meth:`ElementHistory.take_writes`,
  :meth:`ElementHistory.load_versions`);
- shipped with a bootstrap: element id -> the array of its rows, oldest first
  (:meth:`ElementHistory.records`, :meth:`ElementHistory.load`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from drasi_ray.model.changes import Element, ElementKind, FrozenMap

DEFAULT_MAX_VERSIONS = 1000
"""Versions kept per element unless configured otherwise."""


@dataclass(frozen=True, slots=True)
class HistoryLimits:
    """How much history is kept per element (see the module docstring)."""

    max_versions: int = DEFAULT_MAX_VERSIONS
    retention_ms: int | None = None

    def __post_init__(self) -> None:
        if self.max_versions < 1:
            raise ValueError(f"max_versions must be at least 1, got {self.max_versions}")
        if self.retention_ms is not None and self.retention_ms < 0:
            raise ValueError(f"retention_ms must not be negative, got {self.retention_ms}")


class _Versions:
    """One element's versions, ordered by effective_from."""

    __slots__ = ("elements", "times")

    def __init__(self) -> None:
        self.times: list[int] = []
        self.elements: list[Element] = []

    def put(self, element: Element, limits: HistoryLimits) -> list[int]:
        """Add (or replace) the version at ``element``'s time; the times dropped to stay within
        ``limits`` (possibly the new one, if it is older than what is kept)."""
        time = element.effective_from
        position = bisect.bisect_left(self.times, time)
        if position < len(self.times) and self.times[position] == time:
            self.elements[position] = element
        else:
            self.times.insert(position, time)
            self.elements.insert(position, element)
        return self._bound(limits)

    def _bound(self, limits: HistoryLimits) -> list[int]:
        drop = len(self.times) - limits.max_versions
        if limits.retention_ms is not None:
            cutoff = self.times[-1] - limits.retention_ms
            in_effect = bisect.bisect_right(self.times, cutoff) - 1  # still needed at the cutoff
            drop = max(drop, in_effect)
        if drop <= 0:
            return []
        dropped = self.times[:drop]
        del self.times[:drop]
        del self.elements[:drop]
        return dropped

    def as_at(self, time: int) -> Element | None:
        position = bisect.bisect_right(self.times, time)
        return self.elements[position - 1] if position else None

    def between(self, start: int, end: int) -> list[Element]:
        low, high = bisect.bisect_left(self.times, start), bisect.bisect_right(self.times, end)
        return self.elements[low:high]

    def start_in_effect(self, time: int) -> int:
        """The effective_from of the version in effect at ``time`` (0 if none: Drasi's)."""
        position = bisect.bisect_right(self.times, time)
        return self.times[position - 1] if position else 0


@dataclass(slots=True)
class HistoryWrites:
    """What changed in a history since the last :meth:`ElementHistory.take_writes`, in its
    durable form: version fields to set (field -> row) and to delete."""

    puts: dict[bytes, bytes]
    deletes: set[bytes]

    def __bool__(self) -> bool:
        return bool(self.puts or self.deletes)


class ElementHistory:
    """The versions of the elements one query sees, bounded by ``limits``.

    :meth:`observe` takes each element change in the order the query receives them. An owner
    that keeps the history durable asks :meth:`take_writes` what to write.
    """

    def __init__(self, limits: HistoryLimits | None = None, durable: bool = False) -> None:
        """``durable``: keep track of the writes :meth:`take_writes` hands out (an owner that
        never takes them must not ask for this: they would pile up)."""
        self.limits = limits or HistoryLimits()
        self.durable = durable
        self._versions: dict[str, _Versions] = {}
        self._puts: dict[tuple[str, int], Element] = {}
        self._deletes: set[tuple[str, int]] = set()

    def __len__(self) -> int:
        return len(self._versions)

    def observe(self, element_id: str, after: Element | None) -> None:
        """Record the version ``after`` of ``element_id``, or forget the element (None: it was
        deleted, or the query no longer sees it)."""
        if after is None:
            versions = self._versions.pop(element_id, None)
            if versions is not None and self.durable:
                self._deleted(element_id, versions.times)
            return
        versions = self._versions.get(element_id)
        if versions is None:
            versions = self._versions[element_id] = _Versions()
        dropped = versions.put(after, self.limits)
        if not self.durable:
            return
        field = (element_id, after.effective_from)
        self._deletes.discard(field)
        self._puts[field] = after
        self._deleted(element_id, dropped)

    def _deleted(self, element_id: str, times: Iterable[int]) -> None:
        for time in times:
            field = (element_id, time)
            self._puts.pop(field, None)
            self._deletes.add(field)

    def take_writes(self) -> HistoryWrites:
        """The durable writes that bring a stored copy up to date, forgotten here once taken
        (hand them back with :meth:`retry_writes` if writing them failed)."""
        puts = {_field(field): orjson.dumps(_version_row(e)) for field, e in self._puts.items()}
        writes = HistoryWrites(puts, {_field(field) for field in self._deletes})
        self._puts, self._deletes = {}, set()
        return writes

    def retry_writes(self, writes: HistoryWrites) -> None:
        """Take back ``writes`` that failed, unless newer ones superseded them."""
        for raw in writes.deletes:
            field = _unfield(raw)
            if field not in self._puts:
                self._deletes.add(field)
        for raw in writes.puts:
            element_id, time = field = _unfield(raw)
            element = self.as_at(element_id, time)
            if element is None or element.effective_from != time or field in self._deletes:
                continue
            self._puts.setdefault(field, element)

    def as_at(self, element_id: str, time: int) -> Element | None:
        versions = self._versions.get(element_id)
        return None if versions is None else versions.as_at(time)

    def between(self, element_id: str, start: int, end: int, from_previous: bool) -> list[Element]:
        versions = self._versions.get(element_id)
        if versions is None:
            return []
        if from_previous:
            start = versions.start_in_effect(start)
        return list(versions.between(start, end))

    # ------------------------------------------------------------------ serialised forms

    def load_versions(self, fields: Iterable[tuple[bytes, bytes]]) -> None:
        """Take the durable form back (version field, row), as a restarted owner does."""
        for raw, row in fields:
            element_id, _time = _unfield(raw)
            versions = self._versions.get(element_id)
            if versions is None:
                versions = self._versions[element_id] = _Versions()
            versions.put(_version_element(element_id, orjson.loads(row)), self.limits)

    def record_of(self, element_id: str) -> bytes | None:
        """The persisted record of ``element_id``'s history, None if it has none."""
        versions = self._versions.get(element_id)
        if versions is None:
            return None
        return orjson.dumps([_version_row(element) for element in versions.elements])

    def records(self, element_ids: Iterable[str]) -> dict[str, bytes]:
        """The records of those of ``element_ids`` that have a history."""
        found = ((element_id, self.record_of(element_id)) for element_id in element_ids)
        return {element_id: record for element_id, record in found if record is not None}

    def load(self, records: Mapping[str, bytes]) -> None:
        """Take the histories of ``records`` (element id -> :meth:`record_of` bytes)."""
        for element_id, record in records.items():
            versions = self._versions[element_id] = _Versions()
            for row in orjson.loads(record):
                versions.put(_version_element(element_id, row), self.limits)


def history_element(raw: bytes) -> str:
    """The element id of a durable version field (a store shard loads the ones it owns)."""
    return _unfield(raw)[0]


def _field(field: tuple[str, int]) -> bytes:
    return orjson.dumps(field)


def _unfield(raw: bytes) -> tuple[str, int]:
    element_id, time = orjson.loads(raw)
    return element_id, time


def _version_row(element: Element) -> list[Any]:
    return [
        element.kind.value,
        list(element.labels),
        element.properties,
        element.start_id,
        element.end_id,
        element.effective_from,
    ]


def _version_element(element_id: str, row: list[Any]) -> Element:
    kind, labels, properties, start_id, end_id, effective_from = row
    return Element(
        ElementKind(kind),
        element_id,
        tuple(labels),
        FrozenMap(properties),
        start_id,
        end_id,
        effective_from,
    )
