"""Test support for the engine: a tiny in-memory element store and diff comparison.

The store follows docs/semantics.md §2 for in-order application: insert replaces, update upserts
and merges properties (absent keys keep their stored value), delete removes; a change that
alters nothing yields no delta. Deltas say whether the change was an insert, as the real
store's do (Drasi reports OPTIONAL MATCH rows differently for an insert and an upsert).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta, ElementKind, FrozenMap


class TinyStore:
    """Turns platform change events (or direct element operations) into ElementDeltas."""

    def __init__(self) -> None:
        self.elements: dict[str, Element] = {}

    def event(self, event: Mapping[str, Any]) -> ElementDelta | None:
        """Apply one platform event ``{op, payload: {after|before, source}}``."""
        op = event["op"]
        payload = event["payload"]
        data = payload["before"] if op == "d" else payload["after"]
        table = payload["source"]["table"]
        time_ms = payload["source"]["ts_ns"] // 1_000_000
        kind = ElementKind.NODE if table == "node" else ElementKind.RELATION
        element = Element(
            kind,
            data["id"],
            tuple(data["labels"]),
            FrozenMap(data.get("properties") or {}),
            data.get("startId"),
            data.get("endId"),
            time_ms,
        )
        if op == "d":
            return self.delete(element.id, time_ms)
        if op == "i":
            return self.put(element)
        return self.upsert(element)

    def put(self, element: Element, inserted: bool = True) -> ElementDelta | None:
        """Insert ``element`` (replacing one of its id); ``inserted=False``: an upsert."""
        before = self.elements.get(element.id)
        if before == element:
            return None
        self.elements[element.id] = element
        return ElementDelta(before, element, ZERO_VERSION, element.effective_from, inserted)

    def upsert(self, element: Element) -> ElementDelta | None:
        before = self.elements.get(element.id)
        if before is not None:
            merged = FrozenMap({**before.properties, **element.properties})
            element = Element(
                element.kind,
                element.id,
                element.labels,
                merged,
                element.start_id,
                element.end_id,
                element.effective_from,
            )
        return self.put(element, inserted=False)

    def delete(self, element_id: str, time_ms: int | None = None) -> ElementDelta | None:
        """Remove the element; the delta's time is the delete's (default: the element's)."""
        before = self.elements.pop(element_id, None)
        if before is None:
            return None
        when = before.effective_from if time_ms is None else time_ms
        return ElementDelta(before, None, ZERO_VERSION, when)


# --------------------------------------------------------------------------- comparison


def same(left: Any, right: Any) -> bool:
    """Value equality for expectations: numbers by value (floats to 1e-9 relative)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        if isinstance(left, float) and math.isnan(left):
            return isinstance(right, float) and math.isnan(right)
        return math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(map(same, left, right))
    return bool(left == right)


def same_multiset(actual: Iterable[Any], expected: Iterable[Any]) -> bool:
    """True if both hold the same items, counted, under :func:`same`."""
    remaining = list(expected)
    for item in actual:
        for position, candidate in enumerate(remaining):
            if same(item, candidate):
                del remaining[position]
                break
        else:
            return False
    return not remaining


def apply_diffs(
    rows: list[dict[str, Any]],
    diffs: Iterable[Mapping[str, Any]],
    group_keys: Sequence[str] = (),
) -> None:
    """Apply result diffs to a result multiset, in place.

    Aggregation diffs replace the row of their group (identified by the ``group_keys``
    columns); a non-null ``before`` must equal that row when the group is present.
    Raises AssertionError when a diff does not fit the multiset.
    """
    for diff in diffs:
        kind = diff["type"]
        if kind == "ADD":
            rows.append(dict(diff["data"]))
        elif kind == "DELETE":
            _remove(rows, diff["data"])
        elif kind == "UPDATE":
            _remove(rows, diff["before"])
            rows.append(dict(diff["after"]))
        else:
            _replace_group(rows, diff, group_keys)


def _remove(rows: list[dict[str, Any]], row: Mapping[str, Any]) -> None:
    for position, candidate in enumerate(rows):
        if same(candidate, row):
            del rows[position]
            return
    raise AssertionError(f"diff removes a row not in the result: {row}")


def _replace_group(
    rows: list[dict[str, Any]], diff: Mapping[str, Any], group_keys: Sequence[str]
) -> None:
    after = diff["after"]
    for position, candidate in enumerate(rows):
        if all(same(candidate[k], after[k]) for k in group_keys):
            if diff["before"] is not None:
                assert same(candidate, diff["before"]), (candidate, diff)
            rows[position] = dict(after)
            return
    rows.append(dict(after))
