"""A few queries over a few changes through both engines, for the tests of single features.

:func:`run_drasi` runs the changes through drasi-lib (:mod:`tests.oracle.cases`: one Drasi
instance, every query, each diff attributed to its change) and :func:`run_engine` through
drasi_ray's :class:`~drasi_ray.query.engine.ContinuousQuery`; each gives an :class:`Outcome`,
per query one diff list per change in drasi_ray's shape, and the query's state.
:mod:`tests.oracle.values` compares them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from drasi_ray.query.engine import ContinuousQuery
from tests.oracle.cases import RUNNING, run_jobs, status_of
from tests.oracle.model import Case, Diff, GraphChange, QuerySpec, plain_diff
from tests.query.support import TinyStore

pytest.importorskip("drasi", reason="drasi-lib (the oracle) is not installed")

CASE = "engines"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one engine emitted: per query, one diff list per change, and the query's state
    (drasi-lib: "Running", "Refused", "Error", or "Silent" when it did not finish, a panic in
    its task; the engine: "Running", or "Error" when it refused a row, with the messages in
    ``errors``)."""

    steps: dict[str, list[list[Diff]]]
    statuses: dict[str, str]
    errors: dict[str, list[str]] = field(default_factory=dict)

    def answered(self, query_id: str) -> bool:
        return self.statuses.get(query_id) == RUNNING


def run_drasi(
    queries: Mapping[str, str],
    changes: Sequence[GraphChange],
    archive: bool = False,
    timeout_s: float = 20.0,
) -> Outcome:
    """Run ``changes`` through drasi-lib. ``archive``: keep element versions (the past
    functions need it)."""
    specs = tuple(QuerySpec(query_id, text) for query_id, text in queries.items())
    run = run_jobs([(Case(CASE, tuple(changes)), specs)], timeout_s, archive)[CASE]
    steps = {
        query_id: [[plain_diff(diff) for diff in step] for step in query_run.steps]
        for query_id, query_run in run.queries.items()
    }
    statuses = {query_id: status_of(r.failure) for query_id, r in run.queries.items()}
    return Outcome(steps, statuses)


def run_engine(queries: Mapping[str, str], changes: Sequence[GraphChange]) -> Outcome:
    """Run ``changes`` through drasi_ray's engine (a row it refuses marks the query
    "Error", as Drasi's first evaluation error stops its query)."""
    engines = {query_id: ContinuousQuery(query_id, text) for query_id, text in queries.items()}
    store = TinyStore()
    steps: dict[str, list[list[Any]]] = {query_id: [] for query_id in queries}
    errors: dict[str, list[str]] = {query_id: [] for query_id in queries}
    for change in changes:
        delta = store.event(change.platform_event())
        for query_id, engine in engines.items():
            steps[query_id].append(engine.apply(delta) if delta is not None else [])
            errors[query_id] += engine.take_evaluation_errors()
    statuses = {query_id: "Error" if errors[query_id] else RUNNING for query_id in queries}
    return Outcome(steps, statuses, errors)
