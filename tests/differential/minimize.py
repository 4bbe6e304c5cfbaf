"""Shrink a case that shows a divergence to a few changes that still show it.

Greedy delta debugging: try removing chunks of changes (halves, then quarters, ... then
single changes) and keep any removal after which the divergence remains. The candidates of
one round run in one oracle child (one Drasi instance each), so a round costs one start-up.
A shrunk case replays only the changes kept; ids and times are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tests.differential.compare import compare_query
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_oracle
from tests.oracle.model import Case, GraphChange, QueryRun, QuerySpec

Verdict = Callable[[QueryRun, QueryRun], bool]
"""Whether (Drasi's run, drasi_ray's run) still shows what is being shrunk."""


def diverges(case_name: str, query: QuerySpec) -> Verdict:
    """The default verdict: the runs diverge, or Drasi stopped running the query."""

    def verdict(drasi: QueryRun, drasi_ray: QueryRun) -> bool:
        if drasi.failure is not None:
            return True
        return bool(compare_query(case_name, query.id, drasi, drasi_ray, query.text))

    return verdict


@dataclass(frozen=True, slots=True)
class Shrunk:
    case: Case
    rounds: int


def shrink(case: Case, query: QuerySpec, verdict: Verdict | None = None) -> Shrunk:
    """The smallest sub-case of ``case`` found for which ``verdict`` still holds."""
    check = verdict or diverges(case.name, query)
    changes = list(case.changes)
    chunk = max(1, len(changes) // 2)
    rounds = 0
    while True:
        rounds += 1
        candidates = _without_chunks(case.name, changes, chunk)
        kept = _first_holding(candidates, query, check)
        if kept is not None:
            changes = list(kept.changes)
            chunk = min(chunk, max(1, len(changes) // 2))
            continue
        if chunk == 1:
            return Shrunk(Case(case.name, tuple(changes)), rounds)
        chunk = max(1, chunk // 2)


def _without_chunks(name: str, changes: Sequence[GraphChange], chunk: int) -> list[Case]:
    candidates = (
        Case(f"{name}-{start}-{chunk}", tuple(changes[:start]) + tuple(changes[start + chunk :]))
        for start in range(0, len(changes), chunk)
    )
    return [case for case in candidates if _consistent(case.changes)]


def _consistent(changes: Sequence[GraphChange]) -> bool:
    """Whether the changes keep the generator's promises: no insert of an element that
    exists, no relation written while an end node is missing, no node deleted before its
    relations (Drasi and drasi_ray differ there, and a shrunk case must not diverge for
    those other reasons)."""
    alive: set[str] = set()
    relations: dict[str, tuple[str, str]] = {}
    for change in changes:
        if change.op == "insert" and change.id in alive:
            return False
        if change.op == "delete":
            alive.discard(change.id)
            relations.pop(change.id, None)
            if any(change.id in ends for ends in relations.values()):
                return False
            continue
        if change.start_id is not None and change.end_id is not None:
            if change.start_id not in alive or change.end_id not in alive:
                return False
            relations[change.id] = (change.start_id, change.end_id)
        alive.add(change.id)
    return True


def _first_holding(candidates: list[Case], query: QuerySpec, check: Verdict) -> Case | None:
    if not candidates:
        return None
    drasi = run_oracle(candidates, [query])
    for candidate in candidates:
        ours = run_drasi_ray(candidate, [query]).queries[query.id]
        if check(drasi[candidate.name].queries[query.id], ours):
            return candidate
    return None
