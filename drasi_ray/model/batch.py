"""Batches as they cross between actors: compact to pickle, cheap to rebuild.

One Ray call carries one batch: :class:`EntryBatch` (consumer -> coordinator: decoded entries),
:class:`DeltaBatch` (coordinator -> query: element deltas), :class:`ElementBatch` (a bootstrap
snapshot) and :class:`ResultBatch` (query -> subscriber: results). Pickled object by object,
frozen dataclasses cost more than decoding them (``dataclasses.fields()`` per object, on both
sides); these classes pickle as a few flat columns of strings, numbers and property dicts,
which pickle at C speed, and rebuild the objects on the other side with the fast constructors
of :mod:`drasi_ray.model._construct` (an :class:`EntryBatch` only when read: the coordinator
applies its rows as they are). ``bench.ingest`` section (m) measures the costs.

A consumer's batch (built by :class:`EntryBatchBuilder` from decoded JSON) goes one step
further: its rows travel as one MessagePack blob (msgspec, in C) and are decoded back into the
same typed rows, which costs less than Ray's cloudpickle of the same columns; the consumer pays
that on every batch. The coordinator's :class:`DeltaBatch` does the same while its store holds
only JSON values. A blob over :data:`COMPRESS_ABOVE` bytes travels
lz4-compressed, which keeps a batch of a few thousand changes under the size at which Ray moves
a call's arguments through its object store.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import lz4.block
import msgspec

from drasi_ray.model._construct import (
    KIND_BY_VALUE,
    ChangeRow,
    change_from_row,
    make_delta,
    make_element,
    make_entry,
)
from drasi_ray.model.changes import (
    ControlEvent,
    DecodedEntry,
    Element,
    ElementDelta,
    FrozenMap,
)
from drasi_ray.model.results import ControlResult, ControlSignal, QueryResult, make_query_result


class _Batch(Sequence[Any]):
    __slots__ = ("_items",)

    def __init__(self, items: Sequence[Any]) -> None:
        self._items = tuple(items)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self._items == other._items

    def __hash__(self) -> int:
        return hash(self._items)


class EntryBatch(Sequence[DecodedEntry]):
    """An immutable sequence of decoded entries with a compact pickled form.

    Built from decoded entries, or (by the consumer, through :class:`EntryBatchBuilder`) from
    validated :data:`~drasi_ray.model._construct.ChangeRow` columns. It pickles as those columns and
    unpickles lazily: the entries are built only if the receiver iterates them
    (:meth:`entry_rows` reads the rows as they are).
    """

    __slots__ = ("_columns", "_items", "_json_values")

    def __init__(self, items: Sequence[DecodedEntry]) -> None:
        self._items: tuple[DecodedEntry, ...] | None = tuple(items)
        self._columns: _EntryColumns | None = None
        self._json_values = False

    @classmethod
    def of_columns(cls, columns: _EntryColumns, json_values: bool = False) -> EntryBatch:
        """A batch of ``columns``. ``json_values``: every property value is a JSON value (str,
        int, float, bool, None, list, str-keyed dict), so the rows may travel as MessagePack,
        which keeps exactly those types (it would turn a tuple into a list)."""
        batch = cls(())
        batch._items, batch._columns, batch._json_values = None, columns, json_values
        return batch

    @property
    def json_values(self) -> bool:
        """Whether every property value is known to be a JSON value (see :meth:`of_columns`)."""
        return self._json_values

    def _entries(self) -> tuple[DecodedEntry, ...]:
        if self._items is None:
            assert self._columns is not None
            self._items = _build_entries(self._columns)
        return self._items

    def __len__(self) -> int:
        if self._columns is not None:
            return len(self._columns[0])
        return len(self._entries())

    def __getitem__(self, index: Any) -> Any:
        return self._entries()[index]

    def __iter__(self) -> Iterator[DecodedEntry]:
        return iter(self._entries())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EntryBatch) and self._entries() == other._entries()

    def __hash__(self) -> int:
        return hash(self._entries())

    def entry_rows(self) -> Iterator[tuple[str, tuple[ControlEvent, ...], list[ChangeRow]]]:
        """Each entry as ``(entry id, control events, change rows)``, without building the
        changes (what the coordinator applies)."""
        entry_ids, counts, controls, changes = self._as_columns()
        position = 0
        for entry_id, count, entry_controls in zip(entry_ids, counts, controls, strict=True):
            yield entry_id, tuple(entry_controls or ()), changes[position : position + count]
            position += count

    def _as_columns(self) -> _EntryColumns:
        if self._columns is None:
            self._columns = _columns(self._entries())
        return self._columns

    def __reduce__(self) -> tuple[Any, ...]:
        columns = self._as_columns()
        if self._json_values:
            packed = _pack(columns)
            if packed is not None:
                return (_of_packed, packed)
        return (_of_columns, (columns,))  # a function: pickled by reference


class EntryBatchBuilder:
    """Collects decoded entries as columns (see :func:`drasi_ray.source.decode.decode_rows`).

    Contract: the rows are :func:`~drasi_ray.source.decode.decode_rows`' (property values decoded
    from JSON), which lets the batch travel as MessagePack (see :meth:`EntryBatch.of_columns`).
    """

    __slots__ = ("_changes", "_controls", "_counts", "_entry_ids")

    def __init__(self) -> None:
        self._entry_ids: list[str] = []
        self._counts: list[int] = []
        self._controls: list[Any] = []
        self._changes: list[ChangeRow] = []

    def add(
        self, entry_id: str, controls: tuple[ControlEvent, ...], changes: list[ChangeRow]
    ) -> None:
        """Append one entry: its control events, or its validated change rows."""
        self._entry_ids.append(entry_id)
        self._counts.append(len(changes))
        self._controls.append(controls or None)
        self._changes.extend(changes)

    def __len__(self) -> int:
        return len(self._entry_ids)

    def build(self) -> EntryBatch:
        columns = (self._entry_ids, self._counts, self._controls, self._changes)
        return EntryBatch.of_columns(columns, json_values=True)


class DeltaBatch(_Batch):
    """An immutable sequence of element deltas, as a query receives them.

    Its pickled form carries a delta's ``before`` only when there is no ``after`` (a delete):
    the receiving query takes an element's previous state from its own index (see
    :meth:`drasi_ray.query.engine.ContinuousQuery.apply`), so shipping it would double the
    bytes to pickle and the elements to rebuild for nothing. Unpickled, such a delta has
    ``before=None``.
    """

    __slots__ = ("_json_values",)

    def __init__(self, items: Sequence[ElementDelta], json_values: bool = False) -> None:
        """``json_values``: every property value is a JSON value, so the rows may travel as
        MessagePack (as :meth:`EntryBatch.of_columns` says)."""
        super().__init__(items)
        self._json_values = json_values

    def __iter__(self) -> Iterator[ElementDelta]:
        return iter(self._items)

    def __reduce__(self) -> tuple[Any, ...]:
        rows = [
            (
                _element_row(d.before) if d.after is None else None,
                _element_row(d.after),
                d.version,
                d.source_time_ms,
            )
            for d in self._items
        ]
        if self._json_values:
            packed = _packed(rows)
            if packed is not None:
                return (_rebuild_packed_deltas, packed)
        return (_rebuild_deltas, (rows,))


class ElementBatch(_Batch):
    """An immutable sequence of elements (a bootstrap snapshot) with a compact pickled form."""

    __slots__ = ()

    def __iter__(self) -> Iterator[Element]:
        return iter(self._items)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_elements, ([_element_row(e) for e in self._items],))


class ResultBatch(_Batch):
    """An immutable sequence of query results and control signals, as a subscriber's poll
    returns them, pickled as five flat columns.

    Ray serializes a returned list with MessagePack and hands each object MessagePack cannot
    carry to a cloudpickle pickler *of its own*, several times the cost of the columns of one
    batch, and the query actor would pay it for every result it hands to every subscriber.
    """

    __slots__ = ()

    def __iter__(self) -> Iterator[QueryResult | ControlResult]:
        return iter(self._items)

    def __reduce__(self) -> tuple[Any, ...]:
        columns: tuple[list[Any], ...] = ([], [], [], [], [])
        query_ids, sequences, timestamps, source_times_or_signals, diffs = columns
        for item in self._items:
            query_ids.append(item.query_id)
            sequences.append(item.sequence)
            timestamps.append(item.timestamp_ms)
            if isinstance(item, QueryResult):
                source_times_or_signals.append(item.source_time_ms)
                diffs.append(item.results)
            else:
                source_times_or_signals.append(item.signal.value)
                diffs.append(None)
        return (_rebuild_results, columns)


def _rebuild_results(
    query_ids: list[str],
    sequences: list[int],
    timestamps: list[int],
    source_times_or_signals: list[Any],
    diffs: list[tuple[dict[str, Any], ...] | None],
) -> ResultBatch:
    """A control signal is the row whose diffs are ``None``; its fourth column is the signal."""
    return ResultBatch(
        [
            ControlResult(query_id, sequence, at_ms, ControlSignal(fourth))
            if results is None
            else make_query_result(query_id, sequence, at_ms, fourth, results)
            for query_id, sequence, at_ms, fourth, results in zip(
                query_ids, sequences, timestamps, source_times_or_signals, diffs, strict=True
            )
        ]
    )


def _element_row(element: Element | None) -> tuple[Any, ...] | None:
    if element is None:
        return None
    return (
        element.kind.value,
        element.id,
        element.labels,
        dict(element.properties),
        element.start_id,
        element.end_id,
        element.effective_from,
    )


def _element(row: tuple[Any, ...] | None) -> Element | None:
    if row is None:
        return None
    kind, element_id, labels, properties, start, end, effective = row
    return make_element(
        KIND_BY_VALUE[kind], element_id, labels, FrozenMap(properties), start, end, effective
    )


def _rebuild_deltas(rows: list[tuple[Any, ...]]) -> DeltaBatch:
    return DeltaBatch(
        [make_delta(_element(b), _element(a), version, time) for b, a, version, time in rows]
    )


def _rebuild_packed_deltas(blob: bytes, compressed: bool) -> DeltaBatch:
    return _rebuild_deltas(_PACKED_DELTAS.decode(_unwrapped(blob, compressed)))


def _rebuild_elements(rows: list[tuple[Any, ...]]) -> ElementBatch:
    return ElementBatch([_element(row) for row in rows])


_EntryColumns = tuple[list[str], list[int], list[Any], list[ChangeRow]]


def _columns(entries: Sequence[DecodedEntry]) -> _EntryColumns:
    entry_ids: list[str] = []
    counts: list[int] = []
    controls: list[Any] = []
    changes: list[ChangeRow] = []
    for entry in entries:
        entry_ids.append(entry.entry_id)
        counts.append(len(entry.changes))
        controls.append(entry.controls or None)
        for change in entry.changes:
            element, timing = change.element, change.timing
            changes.append(
                (
                    change.op.value,
                    element.kind.value,
                    element.id,
                    element.labels,
                    dict(element.properties),
                    element.start_id,
                    element.end_id,
                    element.effective_from,
                    change.version,
                    timing.source_ns,
                    timing.reactivator_start_ns,
                    timing.reactivator_end_ns,
                )
            )
    return entry_ids, counts, controls, changes


def _of_columns(columns: _EntryColumns) -> EntryBatch:
    return EntryBatch.of_columns(columns)


_PACKER = msgspec.msgpack.Encoder()
_PACKED_ROWS = msgspec.msgpack.Decoder(tuple[list[str], list[int], list[ChangeRow]])
"""Decodes the blob of :func:`_pack` back into typed rows: tuples, labels and versions as
tuples, property values as they were (MessagePack keeps int, float, bool, None, str, list and
str-keyed dict apart)."""


_ElementRow = tuple[str, str, tuple[str, ...], dict[str, Any], str | None, str | None, int]
_PACKED_DELTAS = msgspec.msgpack.Decoder(
    list[tuple[_ElementRow | None, _ElementRow | None, tuple[int, int, int], int]]
)
"""Decodes a :class:`DeltaBatch`'s blob back into the rows of :func:`_element_row`."""


COMPRESS_ABOVE = 90 * 1024
"""Packed blobs larger than this (bytes) travel lz4-compressed: just under the 100 KiB
(``max_direct_call_object_size``) above which Ray passes a call's arguments through its object
store, which costs more per call than lz4 (README, "Machine facts"); a smaller blob is sent as
it is (compressing it would save no call cost)."""


def _packed(value: Any) -> tuple[bytes, bool] | None:
    """``(value as MessagePack, compressed?)``, or None when a value does not fit MessagePack
    (a lone surrogate in a string, an integer beyond 64 bits, a type it does not know): the
    caller pickles instead."""
    try:
        blob = _PACKER.encode(value)
    except (UnicodeEncodeError, OverflowError, TypeError):
        return None
    if len(blob) > COMPRESS_ABOVE:
        return lz4.block.compress(blob, store_size=True), True
    return blob, False


def _unwrapped(blob: bytes, compressed: bool) -> bytes:
    return lz4.block.decompress(blob) if compressed else blob


def _pack(columns: _EntryColumns) -> tuple[bytes, bool, list[Any] | None] | None:
    """``(blob of the ids, counts and rows, compressed?, the controls column or None if it is
    empty)``, or None when :func:`_packed` refuses them. Controls are rare and pickled as they
    are."""
    entry_ids, counts, controls, changes = columns
    packed = _packed((entry_ids, counts, changes))
    if packed is None:
        return None
    return *packed, (controls if any(controls) else None)


def _of_packed(blob: bytes, compressed: bool, controls: list[Any] | None) -> EntryBatch:
    entry_ids, counts, changes = _PACKED_ROWS.decode(_unwrapped(blob, compressed))
    if controls is None:
        controls = [None] * len(entry_ids)
    return EntryBatch.of_columns((entry_ids, counts, controls, changes), json_values=True)


def _build_entries(columns: _EntryColumns) -> tuple[DecodedEntry, ...]:
    entry_ids, counts, controls, changes = columns
    entries: list[DecodedEntry] = []
    position = 0
    for entry_id, count, entry_controls in zip(entry_ids, counts, controls, strict=True):
        built = tuple(map(change_from_row, changes[position : position + count]))
        position += count
        if entry_controls:
            entries.append(DecodedEntry(entry_id, built, tuple(entry_controls)))
        else:
            entries.append(make_entry(entry_id, built))
    return tuple(entries)
