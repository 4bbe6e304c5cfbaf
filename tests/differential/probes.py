"""Small hand-made cases run through both engines: how each reports one query over a few
changes, for the tests that pin where the two differ (deviations, refusals).

:func:`run_probes` runs every probe in one oracle child (each in its own Drasi instance) and
through drasi_ray, and gives each probe's :class:`Outcome`: per change the diffs in
:func:`~tests.differential.compare.normal_diff` form, the final results, and whether the
engine refused the query or stopped running it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.differential.compare import normal_diff
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_jobs
from tests.oracle.model import Case, GraphChange, QueryRun, QuerySpec

BASE_MS = 1_700_000_000_000


@dataclass(frozen=True, slots=True)
class Probe:
    """One query over a few changes, named for the test that runs it; ``language``: the
    query's (``cypher`` or ``gql``)."""

    name: str
    query: str
    changes: tuple[GraphChange, ...]
    language: str = "cypher"
    joins: tuple[Mapping[str, Any], ...] = ()
    """The query's synthetic joins, in Drasi's config shape."""

    @property
    def case(self) -> Case:
        return Case(self.name, self.changes)

    @property
    def spec(self) -> QuerySpec:
        return QuerySpec("q", self.query, self.joins, language=self.language)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one engine made of a probe: per change its diffs as ``(type, before, after)``
    (no row signatures, no order), the final results, and its failure if any."""

    steps: tuple[tuple[tuple[str, Any, Any], ...], ...]
    results: tuple[Any, ...]
    failure: str | None

    @property
    def refused(self) -> bool:
        return self.failure is not None and self.failure.startswith("refused")

    @property
    def stopped(self) -> bool:
        """Drasi stopped running the query (an error or a panic) after accepting it."""
        return self.failure is not None and not self.refused

    def step(self, number: int) -> list[tuple[str, Any, Any]]:
        return list(self.steps[number])


def changes(*specs: tuple[Any, ...]) -> tuple[GraphChange, ...]:
    """Changes from ``(op, id, labels, properties)`` or ``(op, id, label, properties, start,
    end)`` tuples (``labels`` as ``A:B``), one second apart."""
    made: list[GraphChange] = []
    for number, spec in enumerate(specs):
        op, element_id, labels, properties = spec[:4]
        start, end = (spec[4], spec[5]) if len(spec) > 4 else (None, None)
        time = BASE_MS + 1000 * number
        made.append(
            GraphChange(op, element_id, tuple(labels.split(":")), properties, time, start, end)
        )
    return tuple(made)


def _outcome(run: QueryRun) -> Outcome:
    steps = tuple(tuple(d for d in map(normal_diff, step) if d is not None) for step in run.steps)
    return Outcome(steps, tuple(run.results), run.failure)


def run_probes(probes: Iterable[Probe]) -> dict[str, tuple[Outcome, Outcome]]:
    """``{probe name: (Drasi's outcome, drasi_ray's outcome)}``."""
    chosen: Sequence[Probe] = list(probes)
    jobs = [(probe.case, (probe.spec,)) for probe in chosen]
    drasi = run_jobs(jobs, timeout_s=20.0)
    outcomes: dict[str, tuple[Outcome, Outcome]] = {}
    for probe in chosen:
        theirs = drasi[probe.name].queries["q"]
        ours = run_drasi_ray(probe.case, [probe.spec]).queries["q"]
        outcomes[probe.name] = (_outcome(theirs), _outcome(ours))
    return outcomes
