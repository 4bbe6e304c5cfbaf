"""Comparing two engines' runs: per change and per query the diffs as multisets, and the final
result sets.

Values compare as JSON values: numbers by value (floats to a relative 1e-9: the engines may
add in different orders), and, because Drasi's output shows it (``5`` against ``5.0``), an
Integer and a Float of equal value are told apart too. Such a difference is reported with
``kind="type"``, a difference of value with ``kind="diffs"`` / ``kind="results"``, so a report
says which it is. ``true`` never equals ``1``.

A query Drasi refused or stopped running (a panic, an error) is not compared: its outcome is
a :class:`Skipped`, counted apart, since there is nothing of Drasi's to compare with.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.differential.model import CaseRun, Diff, QueryRun, Row

REL_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class Divergence:
    """One place the engines disagree. ``step`` is the change's index (None: the final
    results, or the whole query for ``kind="refused"``)."""

    case: str
    query_id: str
    step: int | None
    kind: str
    drasi: Any
    drasi_ray: Any

    def describe(self) -> str:
        where = "final results" if self.step is None else f"change {self.step}"
        return (
            f"{self.query_id} / {self.case} / {where} ({self.kind}):\n"
            f"  drasi     {_text(self.drasi)}\n"
            f"  drasi_ray {_text(self.drasi_ray)}"
        )


@dataclass(frozen=True, slots=True)
class Skipped:
    """A query of a case that was not compared, and why (Drasi's failure)."""

    case: str
    query_id: str
    reason: str


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def same_value(left: Any, right: Any, strict_types: bool) -> bool:
    """JSON values equal: numbers by value (and by kind if ``strict_types``)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        if strict_types and type(left) is not type(right):
            return False
        if isinstance(left, float) and math.isnan(left):
            return isinstance(right, float) and math.isnan(right)
        return math.isclose(left, right, rel_tol=REL_TOLERANCE, abs_tol=1e-12)
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(
            same_value(left[k], right[k], strict_types) for k in left
        )
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            same_value(a, b, strict_types) for a, b in zip(left, right, strict=True)
        )
    return type(left) is type(right) and bool(left == right)


def normal_diff(diff: Mapping[str, Any]) -> tuple[str, Any, Any] | None:
    """``(type, before, after)`` of one diff of either engine; None for Drasi's ``noop``."""
    kind = diff["type"]
    if kind == "ADD":
        return ("ADD", None, diff["data"])
    if kind == "DELETE":
        return ("DELETE", diff["data"], None)
    if kind in ("UPDATE", "aggregation"):
        return (kind, diff.get("before"), diff["after"])
    if kind == "noop":
        return None
    raise ValueError(f"unknown diff type {kind!r}")


def same_multiset(left: Iterable[Any], right: Iterable[Any], strict_types: bool) -> bool:
    remaining = list(right)
    for item in left:
        for position, candidate in enumerate(remaining):
            if same_value(item, candidate, strict_types):
                del remaining[position]
                break
        else:
            return False
    return not remaining


def _normal_diffs(diffs: Sequence[Diff]) -> list[Any]:
    return [list(d) for d in map(normal_diff, diffs) if d is not None]


def compare_query(
    case: str, query_id: str, drasi: QueryRun, drasi_ray: QueryRun
) -> list[Divergence]:
    """Every divergence of one query over one case (Drasi's run did not fail)."""
    if drasi_ray.failure is not None:
        return [Divergence(case, query_id, None, "refused", "accepted", drasi_ray.failure)]
    found: list[Divergence] = []
    for step, (theirs, ours) in enumerate(zip(drasi.steps, drasi_ray.steps, strict=True)):
        kind = _difference(_normal_diffs(theirs), _normal_diffs(ours), "diffs")
        if kind is not None:
            found.append(Divergence(case, query_id, step, kind, theirs, ours))
    kind = _difference(drasi.results, drasi_ray.results, "results")
    if kind is not None:
        found.append(Divergence(case, query_id, None, kind, drasi.results, drasi_ray.results))
    return found


def _difference(theirs: Sequence[Any], ours: Sequence[Any], kind: str) -> str | None:
    if not same_multiset(theirs, ours, strict_types=False):
        return kind
    if not same_multiset(theirs, ours, strict_types=True):
        return "type"
    return None


@dataclass(slots=True)
class Comparison:
    """The outcome of comparing runs: divergences, skipped queries and the counts compared."""

    divergences: list[Divergence]
    skipped: list[Skipped]
    compared_queries: int = 0
    compared_steps: int = 0

    def diverging_queries(self) -> list[str]:
        return sorted({d.query_id for d in self.divergences})


def compare_runs(drasi: Mapping[str, CaseRun], drasi_ray: Mapping[str, CaseRun]) -> Comparison:
    """Compare every case both engines ran (by case name)."""
    outcome = Comparison([], [])
    for case_name, theirs in drasi.items():
        ours = drasi_ray[case_name]
        for query_id, their_run in theirs.queries.items():
            if their_run.failure is not None:
                outcome.skipped.append(Skipped(case_name, query_id, their_run.failure))
                continue
            our_run = ours.queries[query_id]
            outcome.divergences.extend(compare_query(case_name, query_id, their_run, our_run))
            outcome.compared_queries += 1
            outcome.compared_steps += len(their_run.steps)
    return outcome


def result_rows(rows: Sequence[Row]) -> list[Row]:
    """``rows`` sorted by their JSON text (for stable reports)."""
    return sorted(rows, key=_text)
