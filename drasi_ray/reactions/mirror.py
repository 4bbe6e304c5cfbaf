"""A copy of a query's result set kept current from its diffs: what the SSE server serves.

A :class:`ResultMirror` starts from a snapshot (the rows and the sequence of the last result
they include) and applies each later result's diffs, giving every row a key of its own so a
client is told *which* row changed (``add``, ``update``, ``delete`` by key) instead of
matching rows by content itself. Rows are held in their JSON form (as the result stream
carries them), so a snapshot's rows and a diff's rows compare equal when they are.

Which row a diff is about: for a non-aggregating query, an equal row (``DELETE`` its row,
``UPDATE`` its ``before``); for an aggregating one, the row of the same group (the values of
the grouping keys), which an aggregation diff adds when the group is new to the results. A
diff that names a row the mirror does not hold raises :class:`OutOfSync`: the caller takes a
new snapshot (nothing is guessed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from drasi_ray.model import encoding

Row = dict[str, Any]


class OutOfSync(Exception):
    """A diff names a row the mirror does not hold: take a new snapshot."""


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row's change: ``op`` is add, update or delete; ``row`` its new value (None for a
    delete)."""

    op: str
    key: int
    row: Row | None

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "key": self.key, "row": self.row}


def json_row(row: Mapping[str, Any]) -> Row:
    """``row`` as the result stream carries it (JSON types only)."""
    value: Row = orjson.loads(encoding.dumps(dict(row)))
    return value


def _content(row: Mapping[str, Any]) -> bytes:
    return encoding.dumps(dict(row), sort_keys=True)


class ResultMirror:
    """One query's current rows, by key (module docstring). ``grouping_keys`` is None for a
    non-aggregating query."""

    def __init__(self, grouping_keys: Sequence[str] | None) -> None:
        self._grouping = None if grouping_keys is None else tuple(grouping_keys)
        self.rows: dict[int, Row] = {}
        self.sequence = 0
        self._index: dict[bytes, list[int]] = {}
        self._next_key = 1

    def reset(self, rows: Iterable[Mapping[str, Any]], sequence: int) -> None:
        """Start over from a snapshot: ``rows`` as of result ``sequence``."""
        self.rows = {}
        self._index = {}
        self.sequence = sequence
        for row in rows:
            self._add(json_row(row))

    def apply(self, sequence: int, diffs: Iterable[Mapping[str, Any]]) -> list[RowChange]:
        """Apply one result's diffs (dicts as :func:`~drasi_ray.model.results.
        diffs_from_platform_event` gives them); the row changes, in order."""
        changes = [self._apply_one(diff) for diff in diffs]
        self.sequence = sequence
        return changes

    def _apply_one(self, diff: Mapping[str, Any]) -> RowChange:
        kind = diff["type"]
        if kind == "ADD":
            return RowChange("add", self._add(diff["data"]), diff["data"])
        if kind == "DELETE":
            key = self._take(diff["data"])
            del self.rows[key]
            return RowChange("delete", key, None)
        after = diff["after"]
        if kind == "aggregation":
            identity = self._group(after)
            keys = self._index.get(identity)
            if not keys:
                return RowChange("add", self._add(after), after)
            key = keys[0]
        else:
            key = self._take(diff["before"])
            self._index.setdefault(self._identity(after), []).append(key)
        self.rows[key] = after
        return RowChange("update", key, after)

    def _identity(self, row: Mapping[str, Any]) -> bytes:
        return _content(row) if self._grouping is None else self._group(row)

    def _group(self, row: Mapping[str, Any]) -> bytes:
        return encoding.dumps([row.get(name) for name in self._grouping or ()])

    def _add(self, row: Row) -> int:
        key = self._next_key
        self._next_key += 1
        self.rows[key] = row
        self._index.setdefault(self._identity(row), []).append(key)
        return key

    def _take(self, row: Mapping[str, Any]) -> int:
        """Remove an equal row's key from the index (the row stays in :attr:`rows`)."""
        identity = self._identity(row)
        keys = self._index.get(identity)
        if not keys:
            raise OutOfSync(f"no row {encoding.dumps(dict(row)).decode()} in the results")
        key = keys.pop()
        if not keys:
            del self._index[identity]
        return key

    def snapshot(self) -> list[tuple[int, Row]]:
        """Every row with its key, in key order."""
        return list(self.rows.items())
