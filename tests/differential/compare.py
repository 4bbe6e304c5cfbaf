"""Comparing two engines' runs: per change and per query the diffs as multisets, and the final
result sets.

Values compare as JSON values: numbers by value (floats to a relative 1e-9: the engines may
add in different orders), and, because Drasi's output shows it (``5`` against ``5.0``), an
Integer and a Float of equal value are told apart too. Such a difference is reported with
``kind="type"``, a difference of value with ``kind="diffs"`` / ``kind="results"``, so a report
says which it is. ``true`` never equals ``1``.

Where Drasi's own output is not determined, the comparison is looser, and says so. Drasi
runs the MATCH rows one change reaches in hash-map order, so when a change reaches several
rows of a query that aggregates, the order decides the intermediate rows a part after an
aggregating WITH reports, which row's snapshot gives a ``before`` its number type, and the
order of a ``collect`` list. At such a change the step's net effect is compared (the rows its
diffs take out and put in, updates chained through intermediate rows cancelling out), lists as
multisets and numbers by value (``kind="net"``); from then on that query's lists compare as
multisets, since a ``collect`` keeps the order it was given, and an update that only reorders
a list is left out (whether an engine reports it depends on the order it had).

A query Drasi refused or stopped running (a panic, an error) is not compared: its outcome is
a :class:`Skipped`, counted apart, since there is nothing of Drasi's to compare with.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.oracle.model import CaseRun, Diff, QueryRun

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


def same_value(left: Any, right: Any, strict_types: bool, loose_lists: bool = False) -> bool:
    """JSON values equal: numbers by value (and by kind if ``strict_types``); lists in order,
    or as multisets if ``loose_lists``."""
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
            same_value(left[k], right[k], strict_types, loose_lists) for k in left
        )
    if isinstance(left, list) and isinstance(right, list):
        if loose_lists:
            return same_multiset(left, right, strict_types, loose_lists)
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


def same_multiset(
    left: Iterable[Any], right: Iterable[Any], strict_types: bool, loose_lists: bool = False
) -> bool:
    remaining = list(right)
    for item in left:
        for position, candidate in enumerate(remaining):
            if same_value(item, candidate, strict_types, loose_lists):
                del remaining[position]
                break
        else:
            return False
    return not remaining


def _normal_diffs(diffs: Sequence[Diff], loose_lists: bool = False) -> list[Any]:
    """The diffs in :func:`normal_diff` form; with ``loose_lists``, without the updates that
    only reorder a list (whether an engine reports one depends on the order it had)."""
    normal = [d for d in map(normal_diff, diffs) if d is not None]
    if loose_lists:
        normal = [d for d in normal if not _reorders_only(d)]
    return [list(d) for d in normal]


def _reorders_only(diff: tuple[str, Any, Any]) -> bool:
    _, before, after = diff
    return before is not None and after is not None and same_value(before, after, False, True)


def net_effect(diffs: Sequence[Diff]) -> tuple[list[Any], list[Any]]:
    """The rows ``diffs`` take out and put in, a row put in and taken out again cancelling
    (lists as multisets, numbers by value)."""
    taken: list[Any] = []
    put: list[Any] = []
    for normal in map(normal_diff, diffs):
        if normal is None:
            continue
        _, before, after = normal
        if before is not None:
            taken.append(before)
        if after is not None:
            put.append(after)
    for row in list(put):
        for position, candidate in enumerate(taken):
            if same_value(row, candidate, strict_types=False, loose_lists=True):
                del taken[position]
                put.remove(row)
                break
    return taken, put


def _same_net_effect(theirs: Sequence[Diff], ours: Sequence[Diff]) -> bool:
    their_taken, their_put = net_effect(theirs)
    our_taken, our_put = net_effect(ours)
    return same_multiset(their_taken, our_taken, False, True) and same_multiset(
        their_put, our_put, False, True
    )


def compare_query(
    case: str, query_id: str, drasi: QueryRun, drasi_ray: QueryRun, text: str = ""
) -> list[Divergence]:
    """Every divergence of one query over one case (Drasi's run did not fail). ``text`` is
    the query's: the final result sets of a non-aggregating OPTIONAL MATCH are not compared
    (see :func:`results_comparable`)."""
    if drasi_ray.failure is not None:
        return [Divergence(case, query_id, None, "refused", "accepted", drasi_ray.failure)]
    found: list[Divergence] = []
    loose_lists = False
    for step, (theirs, ours) in enumerate(zip(drasi.steps, drasi_ray.steps, strict=True)):
        if _order_decides(drasi_ray, step):
            loose_lists = True
            if not _same_net_effect(theirs, ours):
                found.append(Divergence(case, query_id, step, "net", theirs, ours))
            continue
        kind = _difference(
            _normal_diffs(theirs, loose_lists),
            _normal_diffs(ours, loose_lists),
            "diffs",
            loose_lists,
        )
        if kind is not None:
            found.append(Divergence(case, query_id, step, kind, theirs, ours))
    if not results_comparable(text, drasi_ray):
        return found
    kind = _difference(drasi.results, drasi_ray.results, "results", loose_lists)
    if kind is not None:
        found.append(Divergence(case, query_id, None, kind, drasi.results, drasi_ray.results))
    return found


def results_comparable(text: str, run: QueryRun) -> bool:
    """Whether Drasi's final result set is the query's: not for a non-aggregating OPTIONAL
    MATCH, whose null rows Drasi keeps in its result set after their matches replaced them
    (drasi-lib keys that set by a row signature the null row and its matches do not share;
    docs/conformance.md, tests/differential/known.py)."""
    return run.aggregating or "OPTIONAL" not in text.upper()


def _order_decides(run: QueryRun, step: int) -> bool:
    """Whether Drasi's hash-map order decides its output at ``step`` (module docstring)."""
    return run.aggregating and step < len(run.rows) and run.rows[step] >= 2


def _difference(
    theirs: Sequence[Any], ours: Sequence[Any], kind: str, loose_lists: bool
) -> str | None:
    if not same_multiset(theirs, ours, False, loose_lists):
        return kind
    if not loose_lists and not same_multiset(theirs, ours, True):
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


def compare_runs(
    drasi: Mapping[str, CaseRun],
    drasi_ray: Mapping[str, CaseRun],
    texts: Mapping[str, str] | None = None,
) -> Comparison:
    """Compare every case both engines ran (by case name); ``texts``: each query's text."""
    outcome = Comparison([], [])
    for case_name, theirs in drasi.items():
        ours = drasi_ray[case_name]
        for query_id, their_run in theirs.queries.items():
            if their_run.failure is not None:
                outcome.skipped.append(Skipped(case_name, query_id, their_run.failure))
                continue
            our_run = ours.queries[query_id]
            text = (texts or {}).get(query_id, "")
            found = compare_query(case_name, query_id, their_run, our_run, text)
            outcome.divergences.extend(found)
            outcome.compared_queries += 1
            outcome.compared_steps += len(their_run.steps)
    return outcome
