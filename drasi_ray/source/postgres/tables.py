"""A table as the reader knows it, and its rows as graph elements.

Each row is a node labelled with its table (:func:`~drasi_ray.model.postgres_specs.table_label`),
id ``<label>:<key>``: the key columns' values joined by ``_`` (Drasi's form), every column a
property (null included; a TOASTed value an update did not touch is left out, so the store keeps
the value it has). The key is, in this order: the configured ``table_keys``, the primary key,
the replica identity index, or, for a table with ``REPLICA IDENTITY FULL`` and no key, every
column (two equal rows are then one element). A configured key must be among the columns a
delete carries (the replica identity's), or the table must have ``REPLICA IDENTITY FULL``:
otherwise a delete could not name its row, and the reader refuses the table at start.

A declared relation (:class:`~drasi_ray.model.postgres_specs.RelationSpec`) gives each row of
its table whose columns are all non-null a relation ``<label>:<row id>`` to the referenced row's
node. An update that changes a row's key is a delete of the old element and an insert of the
new one (with their relations).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import orjson

from drasi_ray.model.changes import Element, ElementKind, FrozenMap, Op, node, relation
from drasi_ray.model.errors import DrasiRayError
from drasi_ray.model.postgres_specs import RelationSpec, qualified_table, table_label
from drasi_ray.source.postgres.pgoutput import UNCHANGED, ColumnValue
from drasi_ray.source.postgres.values import CONVERTERS, ValueReader

Row: TypeAlias = Mapping[str, ColumnValue]
"""A row by column name: each value's text, None (null) or UNCHANGED."""

ElementChange: TypeAlias = tuple[Op, Element]


class RowError(DrasiRayError):
    """A row the reader cannot turn into an element (a key column without a value)."""


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type_oid: int


@dataclass(frozen=True, slots=True)
class TableInfo:
    """A replicated table: its columns (in order), its key, and its replica identity."""

    schema: str
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    """The key columns; empty when every column is the key (REPLICA IDENTITY FULL, no key)."""
    key_origin: str
    """Where the key comes from: ``table_keys``, ``primary key``, ``replica identity`` or
    ``full row``."""
    label: str = field(init=False)
    """Its rows' label and id prefix (computed once: it is on every change)."""
    places: tuple[str, ...] = field(init=False)
    """``label.column`` per column, as warnings name a column."""
    converters: tuple[Callable[[str], Any] | None, ...] = field(init=False)
    """Each column's mapping (:data:`~.values.CONVERTERS`; None: read as text, warned)."""

    def __post_init__(self) -> None:
        label = table_label(self.schema, self.name)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "places", tuple(f"{label}.{c.name}" for c in self.columns))
        converters = tuple(CONVERTERS.get(column.type_oid) for column in self.columns)
        object.__setattr__(self, "converters", converters)

    @property
    def qualified(self) -> tuple[str, str]:
        return (self.schema, self.name)

    def with_columns(self, columns: tuple[Column, ...]) -> TableInfo:
        """The table after a schema change: the relation message's columns."""
        return TableInfo(self.schema, self.name, columns, self.key, self.key_origin)


def _node(row_id: str, label: str, properties: dict[str, Any]) -> Element:
    return Element(ElementKind.NODE, row_id, (label,), FrozenMap(properties))


def key_text(value: Any) -> str:
    """A key column's value in an element id, as Drasi writes it (JSON text, unquoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    return orjson.dumps(value).decode()


class RowMapper:
    """Rows of the replicated tables as element changes (see the module docstring)."""

    def __init__(
        self,
        tables: Mapping[tuple[str, str], TableInfo],
        relations: Sequence[RelationSpec],
        values: ValueReader,
    ) -> None:
        self.tables = dict(tables)
        self.values = values
        self._relations: dict[str, list[RelationSpec]] = {}  # by the label of their table
        for spec in relations:
            label = table_label(*qualified_table(spec.table))
            self._relations.setdefault(label, []).append(spec)

    def properties(self, table: TableInfo, row: Row) -> dict[str, Any]:
        """Every column's value (null included), but the unchanged TOAST values."""
        get = row.get
        properties: dict[str, Any] = {}
        for column, convert, place in zip(
            table.columns, table.converters, table.places, strict=True
        ):
            value = get(column.name)
            if value is None:
                properties[column.name] = None
            elif isinstance(value, str):
                try:
                    properties[column.name] = convert(value)  # type: ignore[misc]
                except (TypeError, ValueError):  # no mapping (None), or a value it cannot read
                    properties[column.name] = self.values.read(column.type_oid, value, place)
        return properties

    def element_id(self, table: TableInfo, properties: Mapping[str, Any], row: Row) -> str:
        names = table.key or tuple(column.name for column in table.columns)
        parts = []
        for name in names:
            if row.get(name) is UNCHANGED or name not in row:
                raise RowError(
                    f"table {table.label}: key column {name!r} came without its value; "
                    f"set REPLICA IDENTITY FULL on it (ALTER TABLE {table.label} REPLICA "
                    "IDENTITY FULL)"
                )
            parts.append(key_text(properties.get(name)))
        return f"{table.label}:{'_'.join(parts)}"

    def insert(self, table: TableInfo, row: Row) -> list[ElementChange]:
        properties = self.properties(table, row)
        row_id = self.element_id(table, properties, row)
        changes: list[ElementChange] = [(Op.INSERT, _node(row_id, table.label, properties))]
        if table.label in self._relations:
            changes += self._relation_changes(table, row_id, properties, Op.INSERT)
        return changes

    def update(self, table: TableInfo, old: Row | None, new: Row) -> list[ElementChange]:
        """An update; one that changes the key is a delete of the old element and an insert
        of the new one. ``old`` is the old key or row when pgoutput sent it."""
        properties = self.properties(table, new)
        row_id = self.element_id(table, properties, new)
        if old is not None:
            old_properties = self.properties(table, old)
            old_id = self.element_id(table, old_properties, old)
            if old_id != row_id:
                return self._delete(table, old_id, old_properties) + self.insert(table, new)
        changes: list[ElementChange] = [(Op.UPDATE, _node(row_id, table.label, properties))]
        if table.label in self._relations:
            changes += self._relation_changes(table, row_id, properties, Op.UPDATE)
        return changes

    def delete(self, table: TableInfo, old: Row) -> list[ElementChange]:
        properties = self.properties(table, old)
        return self._delete(table, self.element_id(table, properties, old), properties)

    def _delete(
        self, table: TableInfo, row_id: str, properties: Mapping[str, Any]
    ) -> list[ElementChange]:
        known = {name: value for name, value in properties.items() if value is not None}
        changes: list[ElementChange] = [(Op.DELETE, node(row_id, (table.label,), known))]
        for spec in self._relations.get(table.label, ()):
            changes.append(
                (Op.DELETE, relation(f"{spec.label}:{row_id}", (spec.label,), row_id, ""))
            )
        return changes

    def _relation_changes(
        self, table: TableInfo, row_id: str, properties: Mapping[str, Any], op: Op
    ) -> Iterator[ElementChange]:
        for spec in self._relations.get(table.label, ()):
            relation_id = f"{spec.label}:{row_id}"
            if any(name not in properties for name in spec.columns):
                continue  # an update that left the columns alone (unchanged TOAST values)
            values = [properties[name] for name in spec.columns]
            if any(value is None for value in values):
                yield Op.DELETE, relation(relation_id, (spec.label,), row_id, "")
                continue
            target = table_label(*qualified_table(spec.references))
            end_id = f"{target}:{'_'.join(key_text(value) for value in values)}"
            yield op, relation(relation_id, (spec.label,), row_id, end_id)

    def row_of(self, table: TableInfo, values: Sequence[ColumnValue]) -> dict[str, ColumnValue]:
        """A tuple in the table's column order, by column name."""
        return {column.name: value for column, value in zip(table.columns, values, strict=False)}
