"""How batches cross between actors: MessagePack in C, compressed when large.

One call carries one batch: an :class:`EntryPacket` (consumer -> store shard: decoded entries),
a :class:`HostPacket` around a :class:`DeltaPacket` (store shard -> query host: element deltas
and which query sees which) and a :class:`ResultBatch` (query host -> subscriber: results).
The store shard's service builds them and the query host's core unpacks them; the engine sees
only the change model's structs. Nothing here needs Ray: a packet is what pickles.

A packet whose property values are all JSON values (``json_values``: they were decoded from
JSON, or loaded from the JSON state) pickles as one MessagePack blob of the structs (msgspec
encodes and decodes them in C, field types kept), lz4-compressed above :data:`COMPRESS_ABOVE`.
Any other packet (a test's tuple-valued property, an integer beyond 64 bits, a lone surrogate)
pickles as its structs: MessagePack would turn a tuple into a list. A delta travels with its
``before`` only when it has no ``after`` (a delete): the query takes an element's previous
state from its own index (:meth:`drasi_ray.query.engine.ContinuousQuery.apply`), so shipping it
would double the bytes for nothing; received, such a delta has ``before=None``.

``bench.ingest`` section (m) measures these costs against Ray's own pickling.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

import lz4.block
import msgspec

from drasi_ray.model.changes import DecodedEntry, ElementDelta, FrozenMap, PipedChange
from drasi_ray.model.results import ControlResult, ControlSignal, Delivered, QueryResult
from drasi_ray.model.shards import BatchTag

T = TypeVar("T")

COMPRESS_ABOVE = 90 * 1024
"""Blobs larger than this (bytes) travel lz4-compressed: just under the 100 KiB
(``max_direct_call_object_size``) above which Ray passes a call's arguments through its object
store, which costs more per call than lz4 (docs/operations.md, "Machine facts"); a smaller
blob is sent as it is (compressing it would save no call cost)."""


def _frozen_map(kind: type, value: Any) -> Any:
    """msgspec's decode hook: element properties arrive as a dict and become a FrozenMap."""
    if kind is FrozenMap:
        return FrozenMap(value)
    raise NotImplementedError(f"no wire decoding for {kind}")


_ENCODER = msgspec.msgpack.Encoder()
_ENTRIES = msgspec.msgpack.Decoder(list[DecodedEntry], dec_hook=_frozen_map)
_DELTAS = msgspec.msgpack.Decoder(list[ElementDelta], dec_hook=_frozen_map)
_PIPED = msgspec.msgpack.Decoder(list[PipedChange], dec_hook=_frozen_map)


class _Packet(Sequence[T], Generic[T]):
    """An immutable sequence of structs and whether every property value is a JSON value."""

    __slots__ = ("items", "json_values")

    def __init__(self, items: Sequence[T], json_values: bool = False) -> None:
        self.items: tuple[T, ...] = tuple(items)
        self.json_values = json_values

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: Any) -> Any:
        return self.items[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.items == other.items

    def __hash__(self) -> int:
        return hash(self.items)

    def _wire_items(self) -> tuple[T, ...]:
        return self.items

    def __reduce__(self) -> tuple[Any, ...]:
        items = self._wire_items()
        if self.json_values:
            packed = _packed(items)
            if packed is not None:
                return (_unpack, (type(self).__name__, *packed))
        return (type(self), (items, False))


class EntryPacket(_Packet[DecodedEntry]):
    """A consumer's decoded entries on their way to a store shard."""

    __slots__ = ()


class DeltaPacket(_Packet[ElementDelta]):
    """Deltas on their way to a query actor (``before`` only for deletes, see the module)."""

    __slots__ = ()

    def _wire_items(self) -> tuple[ElementDelta, ...]:
        return tuple(
            delta
            if delta.before is None or delta.after is None
            else ElementDelta(
                None, delta.after, delta.version, delta.source_time_ms, delta.inserted
            )
            for delta in self.items
        )


class PipedPacket(_Packet[PipedChange]):
    """Applied changes on their way to queries that pipe their source."""

    __slots__ = ()


class HostPacket:
    """A shard's delivery of one batch to one query host: every delta once, and for each query
    of the host that must see some, which ones (indices into ``deltas``, in order; None: all
    of them). A delta several queries of the host see crosses, and is decoded, once. Queries
    that pipe the batch's source get the applied changes instead (``changes``, ``piped``).

    ``tag`` names the consumer batch when it touched several shards
    (:class:`~drasi_ray.model.shards.BatchTag`); such a packet may carry no delta at all (the
    host still waits for it: :mod:`drasi_ray.host.merge`).
    """

    __slots__ = ("changes", "deltas", "piped", "routes", "tag")

    def __init__(
        self,
        deltas: DeltaPacket,
        routes: Mapping[str, list[int] | None],
        tag: BatchTag | None = None,
        changes: PipedPacket | None = None,
        piped: Mapping[str, list[int] | None] | None = None,
    ) -> None:
        self.deltas = deltas
        self.routes = routes
        self.tag = tag
        self.changes = changes
        self.piped = piped or {}

    @property
    def queries(self) -> list[str]:
        """The queries this packet has something for."""
        return [*self.routes, *self.piped]

    def for_query(self, query_id: str) -> list[ElementDelta | PipedChange]:
        """What ``query_id`` must see, in order (empty if nothing)."""
        if query_id in self.routes:
            return _picked(self.deltas.items, self.routes[query_id])
        if query_id in self.piped and self.changes is not None:
            return _picked(self.changes.items, self.piped[query_id])
        return []

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, HostPacket)
            and self.deltas == other.deltas
            and dict(self.routes) == dict(other.routes)
            and self.tag == other.tag
            and self.changes == other.changes
            and dict(self.piped) == dict(other.piped)
        )

    def __hash__(self) -> int:
        return hash((self.deltas, self.tag))

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self.deltas, dict(self.routes), self.tag, self.changes, dict(self.piped))
        return (HostPacket, fields)


def _picked(items: Sequence[T], indices: list[int] | None) -> list[Any]:
    return list(items) if indices is None else [items[index] for index in indices]


_DECODERS: dict[str, tuple[Any, Any]] = {
    EntryPacket.__name__: (EntryPacket, _ENTRIES),
    DeltaPacket.__name__: (DeltaPacket, _DELTAS),
    PipedPacket.__name__: (PipedPacket, _PIPED),
}


def _packed(items: Sequence[Any]) -> tuple[bytes, bool] | None:
    """``(items as MessagePack, compressed?)``, or None when a value does not fit MessagePack
    (a lone surrogate in a string, an integer beyond 64 bits, a type it does not know): the
    caller pickles instead."""
    try:
        blob = _ENCODER.encode(items)
    except (UnicodeEncodeError, OverflowError, TypeError):
        return None
    if len(blob) > COMPRESS_ABOVE:
        return lz4.block.compress(blob, store_size=True), True
    return blob, False


def _unpack(kind: str, blob: bytes, compressed: bool) -> _Packet[Any]:
    packet_type, decoder = _DECODERS[kind]
    items = decoder.decode(lz4.block.decompress(blob) if compressed else blob)
    packet: _Packet[Any] = packet_type(items, json_values=True)
    return packet


class ResultBatch(Sequence[Delivered]):
    """An immutable sequence of query results and control signals, as a subscriber's poll
    returns them, pickled as five flat columns in one MessagePack blob.

    Ray serializes a returned list with MessagePack and hands each object MessagePack cannot
    carry to a cloudpickle pickler *of its own*, several times the cost of the columns of one
    batch, and the query actor would pay it for every result it hands to every subscriber.
    Result rows hold JSON values (:func:`~drasi_ray.query.values.to_output`), which MessagePack
    carries as they are, in C, at a third of pickle's cost; a batch with a value it cannot
    carry (an integer beyond 64 bits, a lone surrogate, an object it has no encoding for)
    pickles its columns instead. Rows must hold JSON values only, as ``to_output`` makes
    them: a tuple would arrive as a list, and a value MessagePack writes as text (a Decimal, a
    datetime) as that text.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Sequence[Delivered]) -> None:
        self._items = tuple(items)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: Any) -> Any:
        return self._items[index]

    def __iter__(self) -> Iterator[Delivered]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResultBatch) and self._items == other._items

    def __hash__(self) -> int:
        return hash(self._items)

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
        packed = _packed(columns)
        if packed is not None:
            return (_unpack_results, packed)
        return (_rebuild_results, columns)


_RESULT_COLUMNS = msgspec.msgpack.Decoder(
    tuple[list[str], list[int], list[int], list[Any], list[tuple[dict[str, Any], ...] | None]]
)


def _unpack_results(blob: bytes, compressed: bool) -> ResultBatch:
    columns = _RESULT_COLUMNS.decode(lz4.block.decompress(blob) if compressed else blob)
    return _rebuild_results(*columns)


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
            else QueryResult(query_id, sequence, at_ms, fourth, results)
            for query_id, sequence, at_ms, fourth, results in zip(
                query_ids, sequences, timestamps, source_times_or_signals, diffs, strict=True
            )
        ]
    )
