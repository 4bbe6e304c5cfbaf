"""The change log: applied changes accumulated as Arrow blocks, spilled to Parquet past a size.

Rows arrive as :class:`~drasi_ray.shards.records.ChangeRecord` structs and are appended to
plain Python lists, one per column (cheap: no per-row objects). :meth:`ChangeLog.seal` turns the
open rows into one Arrow table, column-wise, and hands it to a :class:`BlockStore` (Ray's object
store in the actor, a list in unit tests). Once the sealed blocks together exceed
``spill_bytes``, they are written to one Parquet file and released, so memory stays bounded.

Schema: the :data:`BASE_SCHEMA` columns, then one typed column ``prop_<key>`` per property key
whose values are *uniform* across the whole log: all numbers (as float64), all strings, or all
booleans (``None`` does not break uniformity). A key that ever mixes types, that is not an
identifier, that collides with another key ignoring case (Spark resolves names case-blind), or
that comes after the first ``max_typed_columns`` keys, has no typed column: the ``properties``
JSON text always holds every value. Blocks sealed before a key turned out non-uniform are
conformed (the column dropped) when the log is snapshotted or spilled, so every block handed
on and every spilled file agrees with :meth:`ChangeLog.schema`, up to columns they lack (nulls).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain
from pathlib import Path
from typing import Any, Final, Generic, Protocol, TypeVar

import msgspec
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from drasi_ray.shards.records import ChangeRecord

__all__ = ["BASE_SCHEMA", "TYPED_PREFIX", "BlockStore", "ChangeLog", "LogSnapshot", "conform"]

TYPED_PREFIX: Final = "prop_"
TIMESTAMP: Final = pa.timestamp("ms", tz="UTC")

BASE_SCHEMA: Final = pa.schema(
    [
        ("source_id", pa.string()),
        ("stream_id", pa.string()),
        ("version_ms", pa.int64()),
        ("version_seq", pa.int64()),
        ("change_index", pa.int32()),
        ("op", pa.string()),
        ("kind", pa.string()),
        ("element_id", pa.string()),
        ("labels", pa.list_(pa.string())),
        ("effective_from", TIMESTAMP),
        ("properties", pa.string()),
        ("start_id", pa.string()),
        ("end_id", pa.string()),
        ("present", pa.bool_()),
    ]
)

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_MIXED: Final = object()
"""Marks a key whose values, within one block, are not of one typed-column kind."""

H = TypeVar("H")


class BlockStore(Protocol[H]):
    """Where sealed Arrow tables live: ``put`` returns a handle, ``get`` reads it back."""

    def put(self, table: pa.Table) -> H: ...

    def get(self, handle: H) -> pa.Table: ...


@dataclass(slots=True)
class _Block(Generic[H]):
    handle: H
    schema: pa.Schema
    rows: int
    nbytes: int
    consolidated: bool = False


@dataclass(frozen=True, slots=True)
class LogSnapshot(Generic[H]):
    """Everything the log holds, ready to hand to Spark: in-store blocks plus spilled files.

    ``epoch`` changes whenever the content does, so a reader can cache per epoch.
    """

    blocks: tuple[H, ...]
    spilled: tuple[str, ...]
    schema: pa.Schema
    rows: int
    epoch: int


@dataclass(slots=True)
class _OpenRows:
    """The rows appended since the last seal, one Python list per column."""

    source_id: list[str] = field(default_factory=list)
    stream_id: list[str] = field(default_factory=list)
    version_ms: list[int] = field(default_factory=list)
    version_seq: list[int] = field(default_factory=list)
    change_index: list[int] = field(default_factory=list)
    op: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    element_id: list[str] = field(default_factory=list)
    labels: list[tuple[str, ...]] = field(default_factory=list)
    effective_from: list[int] = field(default_factory=list)
    properties: list[dict[str, Any]] = field(default_factory=list)
    start_id: list[str | None] = field(default_factory=list)
    end_id: list[str | None] = field(default_factory=list)
    present: list[bool] = field(default_factory=list)

    def extend(self, source_id: str, records: Sequence[ChangeRecord]) -> None:
        """Transpose ``records`` onto the column lists (one ``zip`` instead of a row loop)."""
        if not records:
            return
        columns = list(zip(*map(msgspec.structs.astuple, records), strict=True))
        self.source_id.extend([source_id] * len(records))
        for target, values in zip(self._record_columns(), columns, strict=True):
            target.extend(values)

    def _record_columns(self) -> tuple[list[Any], ...]:
        """The column lists in :class:`ChangeRecord` field order."""
        return (
            self.stream_id,
            self.version_ms,
            self.version_seq,
            self.change_index,
            self.op,
            self.kind,
            self.element_id,
            self.labels,
            self.effective_from,
            self.properties,
            self.start_id,
            self.end_id,
            self.present,
        )

    def __len__(self) -> int:
        return len(self.stream_id)

    def to_table(self, typed: dict[str, pa.DataType]) -> pa.Table:
        """The open rows as one Arrow table: base columns, then ``typed`` property columns."""
        arrays = [
            pa.array(self.source_id, pa.string()),
            pa.array(self.stream_id, pa.string()),
            pa.array(self.version_ms, pa.int64()),
            pa.array(self.version_seq, pa.int64()),
            pa.array(self.change_index, pa.int32()),
            pa.array(self.op, pa.string()),
            pa.array(self.kind, pa.string()),
            pa.array(self.element_id, pa.string()),
            _labels_array(self.labels),
            pa.array(self.effective_from, pa.int64()).cast(TIMESTAMP),
            pa.array([_json(props) for props in self.properties], pa.string()),
            pa.array(self.start_id, pa.string()),
            pa.array(self.end_id, pa.string()),
            pa.array(self.present, pa.bool_()),
        ]
        fields = list(BASE_SCHEMA)
        for key, kind in typed.items():
            arrays.append(pa.array([props.get(key) for props in self.properties], kind))
            fields.append(pa.field(TYPED_PREFIX + key, kind))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _content(source_id: str, record: ChangeRecord) -> tuple[Any, ...]:
    """What makes two records the same change whatever their positions."""
    digest = hash(
        orjson.dumps(
            record.properties,
            option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
            default=repr,
        )
    )
    return (
        source_id, record.element_id, record.op, record.effective_from, record.labels, digest,
        record.start_id, record.end_id,
    )  # fmt: skip


def _json(properties: dict[str, Any]) -> str:
    # Sorted keys: the same state always gives the same text (comparable across rows).
    return orjson.dumps(properties, option=orjson.OPT_SORT_KEYS, default=str).decode()


_KIND_OF_TYPE: Final[dict[type, pa.DataType]] = {
    bool: pa.bool_(),
    int: pa.float64(),
    float: pa.float64(),
    str: pa.string(),
}
"""Python value type -> typed-column type; other types (lists, maps) stay JSON only."""


def _block_kinds(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Per property key: its one typed-column type within these rows, or ``_MIXED``."""
    seen: dict[str, set[type]] = {}
    for properties in rows:
        for key, value in properties.items():
            types = seen.get(key)
            if types is None:
                seen[key] = {type(value)}
            else:
                types.add(type(value))
    kinds: dict[str, Any] = {}
    for key, types in seen.items():
        found = {_KIND_OF_TYPE.get(kind, _MIXED) for kind in types if kind is not type(None)}
        if found:
            kinds[key] = found.pop() if len(found) == 1 else _MIXED
    return kinds


def _labels_array(labels: list[tuple[str, ...]]) -> pa.Array:
    """``list<string>`` built from flat values and offsets (10x faster than nested lists)."""
    offsets = [0, *accumulate(map(len, labels))]
    values = pa.array(list(chain.from_iterable(labels)), pa.string())
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: missing ones as nulls, others dropped."""
    rows = table.num_rows
    names = set(table.schema.names)
    arrays = [
        table.column(column.name).cast(column.type)
        if column.name in names
        else pa.nulls(rows, column.type)
        for column in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


class ChangeLog(Generic[H]):
    """Accumulates change records; seals them into Arrow blocks; spills past ``spill_bytes``.

    Not thread-safe: the owner serialises calls (the analytics actor holds a lock).
    Spilled files go to a private directory created inside ``spill_dir`` (None: the system's
    temporary directory) and removed by :meth:`close`: they are a buffer, not an export.
    """

    def __init__(
        self,
        store: BlockStore[H],
        *,
        spill_bytes: int,
        spill_dir: str | None = None,
        max_typed_columns: int = 64,
    ) -> None:
        self._store = store
        self._spill_bytes = spill_bytes
        if spill_dir is not None:
            Path(spill_dir).mkdir(parents=True, exist_ok=True)
        self._spill_dir = Path(tempfile.mkdtemp(prefix="drasi-ray-changelog-", dir=spill_dir))
        self._max_typed = max_typed_columns
        self._open = _OpenRows()
        self._blocks: list[_Block[H]] = []
        self._types: dict[str, pa.DataType | None] = {}  # None: not uniform, no typed column
        self._spilled: list[tuple[str, int]] = []  # (path, rows)
        self._epoch = 0
        self.appended = 0
        # What identifies a change already logged: its position (element and version: a
        # redelivery) and its content (element, op, time and state: the same event written
        # twice by a producer, at two positions). ~200 bytes per change, as the log lives.
        self._positions: set[tuple[str, str, int, int, int]] = set()
        self._contents: set[tuple[Any, ...]] = set()
        self.duplicates = 0

    # -- appending ----------------------------------------------------------------------

    def append(
        self,
        source_id: str,
        records: Sequence[ChangeRecord],
        unapplied: Sequence[ChangeRecord] = (),
    ) -> int:
        """Add the records of one batch, each change once. ``records`` the store applied are
        rows unless their position was logged (a redelivery). ``unapplied`` ones (the store
        took nothing visible from them) are rows too, a change overtaken by a newer change of
        its element (another consumer's batch applied first) included, unless their position
        or their content (element, op, time, state: the same event written twice) was logged.
        Dropped ones are counted in ``duplicates``. Returns how many rows are open."""
        positions, contents = self._positions, self._contents
        fresh = []
        for record, applied in [*((r, True) for r in records), *((r, False) for r in unapplied)]:
            position = (
                source_id, record.element_id, record.version_ms, record.version_seq,
                record.change_index,
            )  # fmt: skip
            content = _content(source_id, record)
            if position in positions or (not applied and content in contents):
                continue
            positions.add(position)
            contents.add(content)
            fresh.append(record)
        self.duplicates += len(records) + len(unapplied) - len(fresh)
        self._open.extend(source_id, fresh)
        self.appended += len(fresh)
        return len(self._open)

    @property
    def open_rows(self) -> int:
        return len(self._open)

    def seal(self) -> int:
        """Turn the open rows into one block (spilling if over budget); returns rows sealed."""
        rows = len(self._open)
        if rows == 0:
            return 0
        typed = self._register(_block_kinds(self._open.properties))
        table = self._open.to_table(typed)
        self._open = _OpenRows()
        self._blocks.append(_Block(self._store.put(table), table.schema, rows, table.nbytes))
        self._epoch += 1
        if self.bytes_in_store > self._spill_bytes:
            self.spill()
        return rows

    def _register(self, kinds: dict[str, Any]) -> dict[str, pa.DataType]:
        """Merge one block's key kinds into the log's; the typed columns this block gets."""
        lower = {key.lower(): key for key in self._types}
        for key, kind in kinds.items():
            if key in self._types:
                if kind is _MIXED or kind != self._types[key]:
                    self._types[key] = None
                continue
            if not _IDENTIFIER.match(key) or len(self._types) >= self._max_typed:
                continue
            twin = lower.get(key.lower())
            self._types[key] = None if kind is _MIXED or twin is not None else kind
            if twin is not None:
                self._types[twin] = None
            lower[key.lower()] = key
        return {key: kind for key in sorted(kinds) if (kind := self._types.get(key)) is not None}

    # -- reading ------------------------------------------------------------------------

    def schema(self) -> pa.Schema:
        """The log's schema: base columns plus every uniform property's typed column."""
        typed = [
            pa.field(TYPED_PREFIX + key, kind)
            for key, kind in sorted(self._types.items())
            if kind is not None
        ]
        return pa.schema(list(BASE_SCHEMA) + typed)

    def snapshot(self, max_blocks: int) -> LogSnapshot[H]:
        """Seal, consolidate to at most ``max_blocks`` conformed blocks, and describe the log.

        Blocks sealed since the last snapshot are merged into one (Spark makes one partition
        per block, and many small partitions are slow); if that leaves more than
        ``max_blocks``, everything in store is merged into one block.
        """
        self.seal()
        schema = self.schema()
        pending = [b for b in self._blocks if not b.consolidated or b.schema != schema]
        if pending:
            self._merge(pending, schema)
        if len(self._blocks) > max_blocks:
            self._merge(list(self._blocks), schema)
        return LogSnapshot(
            blocks=tuple(block.handle for block in self._blocks),
            spilled=tuple(path for path, _ in self._spilled),
            schema=schema,
            rows=self.rows,
            epoch=self._epoch,
        )

    def _merge(self, blocks: list[_Block[H]], schema: pa.Schema) -> None:
        tables = [conform(self._store.get(block.handle), schema) for block in blocks]
        # One chunk per column: pyspark's Python workers turn each block into pandas, and
        # pandas 3 keeps a multi-chunk string column as chunks that pyspark cannot send back.
        merged = pa.concat_tables(tables).combine_chunks()
        for block in blocks:
            self._blocks.remove(block)
        rows = merged.num_rows
        handle = self._store.put(merged)
        self._blocks.append(_Block(handle, schema, rows, merged.nbytes, consolidated=True))
        self._epoch += 1

    # -- spilling -----------------------------------------------------------------------

    def spill(self) -> str | None:
        """Write every in-store block to one Parquet file and release them; the file's path."""
        if not self._blocks:
            return None
        schema = self.schema()
        path = self._spill_dir / f"changes-{len(self._spilled):06d}.parquet"
        with pq.ParquetWriter(path, schema) as writer:
            for block in self._blocks:
                writer.write_table(conform(self._store.get(block.handle), schema))
        rows = sum(block.rows for block in self._blocks)
        self._spilled.append((str(path), rows))
        self._blocks = []
        self._epoch += 1
        return str(path)

    # -- accounting ---------------------------------------------------------------------

    @property
    def rows(self) -> int:
        """Rows sealed so far (in store or spilled); open rows are not counted."""
        return self.rows_in_store + sum(rows for _, rows in self._spilled)

    @property
    def rows_in_store(self) -> int:
        return sum(block.rows for block in self._blocks)

    @property
    def bytes_in_store(self) -> int:
        return sum(block.nbytes for block in self._blocks)

    def stats(self) -> dict[str, Any]:
        return {
            "appended": self.appended,
            "duplicates": self.duplicates,
            "open_rows": self.open_rows,
            "rows": self.rows,
            "blocks": len(self._blocks),
            "rows_in_store": self.rows_in_store,
            "bytes_in_store": self.bytes_in_store,
            "spilled_files": len(self._spilled),
            "spilled_rows": sum(rows for _, rows in self._spilled),
            "spilled_bytes": sum(Path(path).stat().st_size for path, _ in self._spilled),
            "spill_dir": str(self._spill_dir),
        }

    def close(self) -> None:
        """Release every block and remove the spilled files."""
        self._blocks = []
        self._open = _OpenRows()
        shutil.rmtree(self._spill_dir, ignore_errors=True)
