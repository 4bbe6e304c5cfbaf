"""Drasi's tutorials' queries, read from their resource files, give Drasi's own results.

Each tutorial's queries (tests/resources, as the tutorials publish them) run over the rows its
databases start with and the changes its steps make (tests/differential/tutorials.py),
through drasi-lib and through drasi_ray's shard and engine: per change and per query the
diffs agree, and so do the final result sets. The queries whose results move with the wall
clock (tutorials.TIMED) are not compared here.
"""

from __future__ import annotations

import pytest

from tests.differential.compare import compare_runs
from tests.differential.subject import run_drasi_ray
from tests.differential.tutorials import TIMED, TUTORIALS, Tutorial
from tests.oracle.cases import run_oracle


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=lambda tutorial: tutorial.name)
def test_the_tutorials_queries_give_drasis_results(tutorial: Tutorial) -> None:
    case = tutorial.case()
    specs = tutorial.oracle_specs()
    assert specs and all(spec.id not in TIMED for spec in specs)
    drasi = run_oracle([case], specs)
    ours = run_drasi_ray(case, specs)
    outcome = compare_runs(drasi, {case.name: ours})
    assert not outcome.skipped, [skip.reason for skip in outcome.skipped]
    assert outcome.compared_steps == len(specs) * len(case.changes)
    assert not outcome.divergences, "\n".join(d.describe() for d in outcome.divergences[:3])
    quiet = [spec.id for spec in specs if not any(ours.queries[spec.id].steps)]
    assert not quiet, f"queries the changes never moved (a check that cannot fail): {quiet}"
