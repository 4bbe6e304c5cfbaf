"""Drasi's ``coll.distinct`` over an Integer and an equal Float: a per-process coin toss.

Drasi keeps ``[2, 2.0]`` as two values in nearly every run, but its set of seen values hashes
the two kinds apart while equality can still match them, so in a small, random share of lists
(a different share in each process) the Float is dropped. drasi_ray keeps both, always: the
outcome Drasi gives most of the time and the only one a user can rely on. The random generator
of the differential test therefore never puts an Integer and an equal Float in one list
(tests/differential/generator.py); this test pins both behaviours instead.
"""

from __future__ import annotations

from tests.differential.probes import changes
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_oracle
from tests.oracle.model import Case, CaseRun, QuerySpec

PAIRS = 2000
"""Lists per case. The share Drasi collapses varies (about 1 list in 600 to 1 in 75 in the
runs seen), so three cases of 2,000 make a run without any collapse unlikely beyond doubt."""

CASES = 3

QUERY = QuerySpec("distinct_pairs", "MATCH (a:A) RETURN a.k AS k, coll.distinct(a.l) AS d")


def _case(number: int) -> Case:
    lists = [("insert", f"a{k}", "A", {"k": k, "l": [k, float(k)]}) for k in range(PAIRS)]
    return Case(f"distinct_pairs_{number}", changes(*lists))


def _collapsed(run: CaseRun) -> list[int]:
    """The keys whose distinct list lost a value."""
    rows = run.queries[QUERY.id].results
    assert len(rows) == PAIRS
    return sorted(row["k"] for row in rows if len(row["d"]) != 2)


def test_drasi_sometimes_collapses_an_integer_and_an_equal_float_drasi_ray_never() -> None:
    cases = [_case(number) for number in range(CASES)]
    drasi = run_oracle(cases, [QUERY])
    # a case drasi-lib did not finish (it happens, rarely, to long cases) says nothing here
    finished = [run for run in drasi.values() if run.queries[QUERY.id].failure is None]
    assert finished
    collapsed = sum(len(_collapsed(run)) for run in finished)
    assert 0 < collapsed < len(finished) * PAIRS // 10
    assert _collapsed(run_drasi_ray(cases[0], [QUERY])) == []
