"""Comparing what drasi-lib and drasi_ray emit: values with their types (an Integer is not a
Float here, unlike the scenario comparisons), diffs as multisets."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def same_typed(left: Any, right: Any, rel_tol: float = 0.0, by_value: bool = False) -> bool:
    """Equal values of equal types (Integer 5 is not Float 5.0, unless ``by_value``); floats
    equal exactly, or to ``rel_tol`` relative."""
    if by_value and _number(left) and _number(right):
        left, right = float(left), float(right)
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        if math.isnan(left):
            return math.isnan(right)
        return left == right or math.isclose(left, right, rel_tol=rel_tol, abs_tol=0.0)
    if isinstance(left, Mapping):
        return left.keys() == right.keys() and all(
            same_typed(left[key], right[key], rel_tol, by_value) for key in left
        )
    if isinstance(left, list):
        return len(left) == len(right) and all(
            same_typed(a, b, rel_tol, by_value) for a, b in zip(left, right, strict=True)
        )
    return bool(left == right)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same_diffs(
    left: Sequence[Mapping[str, Any]],
    right: Sequence[Mapping[str, Any]],
    rel_tol: float = 0.0,
    by_value: bool = False,
) -> bool:
    """The two diff lists hold the same diffs, as multisets, compared by :func:`same_typed`
    (drasi-lib's ``data`` field of an UPDATE, a copy of ``after``, is ignored)."""
    remaining = [_comparable(diff) for diff in right]
    for diff in left:
        wanted = _comparable(diff)
        match = next(
            (i for i, d in enumerate(remaining) if same_typed(wanted, d, rel_tol, by_value)),
            None,
        )
        if match is None:
            return False
        remaining.pop(match)
    return not remaining


def _comparable(diff: Mapping[str, Any]) -> dict[str, Any]:
    if diff["type"] == "UPDATE":
        return {"type": "UPDATE", "before": diff["before"], "after": diff["after"]}
    return dict(diff)
