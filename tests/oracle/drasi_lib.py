"""Drasi itself (drasi-lib) as the oracle, side by side with drasi_ray's engine.

:func:`run_drasi` pushes changes through drasi-lib in a child process (it can crash at
interpreter exit, and a query it panics on never answers) and returns, per query and per
change, the diffs Drasi emitted. :func:`run_engine` runs the same changes through
:class:`~drasi_ray.query.engine.ContinuousQuery`; :mod:`tests.oracle.values` compares them.

A query must say which change it answers (``answers``): the child waits until the query
emitted a diff for that change or a later one, or left the "Running" state (Drasi stops a
query at its first evaluation error), or the timeout passed ("Silent": Drasi panicked in the
query's task, or the change really produced nothing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from drasi_ray.query.engine import ContinuousQuery
from tests.query.support import TinyStore

drasi = pytest.importorskip("drasi", reason="drasi-lib (the oracle) is not installed")

REPOSITORY = Path(__file__).resolve().parents[2]
SILENT = "Silent"


@dataclass(frozen=True, slots=True)
class Change:
    """One source change, in the terms both engines take."""

    op: str  # "insert" | "update" | "delete"
    id: str
    labels: tuple[str, ...]
    properties: Mapping[str, Any] = field(default_factory=dict)
    effective_from: int = 0
    start_id: str | None = None
    end_id: str | None = None

    def for_drasi(self) -> dict[str, Any]:
        change: dict[str, Any] = {
            "op": self.op,
            "id": self.id,
            "labels": list(self.labels),
            "properties": dict(self.properties),
            "effective_from": self.effective_from,
        }
        if self.start_id is not None:
            change["start_id"], change["end_id"] = self.start_id, self.end_id
        return change

    def platform_event(self) -> dict[str, Any]:
        """The change as a platform event (the scenario files' form)."""
        element: dict[str, Any] = {
            "id": self.id,
            "labels": list(self.labels),
            "properties": dict(self.properties),
        }
        if self.start_id is not None:
            element["startId"], element["endId"] = self.start_id, self.end_id
        code = {"insert": "i", "update": "u", "delete": "d"}[self.op]
        side = "before" if code == "d" else "after"
        table = "node" if self.start_id is None else "rel"
        source = {"db": "oracle", "table": table, "ts_ns": self.effective_from * 1_000_000}
        return {"op": code, "payload": {side: element, "source": source}}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one engine emitted: per query, one diff list per change, and the query's state
    (drasi-lib: "Running", "Error", "Silent"; the engine: "Running", or "Error" when it
    refused a row, with the messages in ``errors``)."""

    steps: dict[str, list[list[dict[str, Any]]]]
    statuses: dict[str, str]
    errors: dict[str, list[str]] = field(default_factory=dict)

    def answered(self, query_id: str) -> bool:
        return self.statuses.get(query_id) == "Running"


def run_drasi(
    queries: Mapping[str, str],
    changes: Sequence[Change],
    answers: Mapping[str, int] | None = None,
    archive: bool = False,
    timeout_s: float = 20.0,
) -> Outcome:
    """Run ``changes`` through drasi-lib. ``answers``: the change each query must answer
    (default: the last); ``archive``: keep element versions (the past functions need it)."""
    last = len(changes) - 1
    spec = {
        "queries": dict(queries),
        "changes": [change.for_drasi() for change in changes],
        "answers": {query_id: (answers or {}).get(query_id, last) for query_id in queries},
        "archive": archive,
        "timeout_s": timeout_s,
    }
    with tempfile.TemporaryDirectory(prefix="oracle-") as folder:
        spec_path, answer_path = Path(folder, "spec.json"), Path(folder, "answer.json")
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        subprocess.run(
            [sys.executable, "-m", "tests.oracle._child", str(spec_path), str(answer_path)],
            cwd=REPOSITORY,
            env={**os.environ, "RUST_LOG": "off"},
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=timeout_s + 60,
        )
        answer = json.loads(answer_path.read_text(encoding="utf-8"))
    statuses = dict(answer["statuses"])
    statuses.update({query_id: "Refused" for query_id in answer["refused"]})
    return Outcome(answer["steps"], statuses)


def run_engine(queries: Mapping[str, str], changes: Sequence[Change]) -> Outcome:
    """Run ``changes`` through drasi_ray's engine (a row it refuses marks the query
    "Error", as Drasi's first evaluation error stops its query)."""
    engines = {query_id: ContinuousQuery(query_id, text) for query_id, text in queries.items()}
    store = TinyStore()
    steps: dict[str, list[list[dict[str, Any]]]] = {query_id: [] for query_id in queries}
    errors: dict[str, list[str]] = {query_id: [] for query_id in queries}
    for change in changes:
        delta = store.event(change.platform_event())
        for query_id, engine in engines.items():
            steps[query_id].append(engine.apply(delta) if delta is not None else [])
            errors[query_id] += engine.take_evaluation_errors()
    statuses = {query_id: "Error" if errors[query_id] else "Running" for query_id in queries}
    return Outcome(steps, statuses, errors)
