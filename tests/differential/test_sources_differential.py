"""Joins, middleware and two sources against drasi-lib, on a few fixed seeds.

Random two-source cases (tests/differential/generator.py) run the join and middleware
catalogue (tests/differential/catalogue_sources.py) through drasi-lib and through drasi_ray's
coordinator and engine; per change and per query the diffs must agree. The cases keep each
node's labels on update: a node that gains or loses a join key's label without its key value
changing is where Drasi keeps a stale link or misses one (tests/query/test_joins.py shows both
outputs), and drasi_ray deliberately does not. ``python -m bench.differential --sources`` runs
this at length (with label changes too).
"""

from __future__ import annotations

import pytest

from tests.differential.catalogue_sources import SOURCES_CATALOGUE
from tests.differential.compare import compare_runs
from tests.differential.generator import generate_two_source_case
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_oracle

SEEDS = (1000, 1001, 1002, 1003)


@pytest.mark.parametrize("seed", SEEDS)
def test_joins_and_middleware_agree_with_drasi(seed: int) -> None:
    case = generate_two_source_case(seed, 50, label_changes=False)
    drasi = run_oracle([case], SOURCES_CATALOGUE)
    ours = {case.name: run_drasi_ray(case, SOURCES_CATALOGUE)}
    outcome = compare_runs(drasi, ours)
    assert not outcome.skipped, [s.reason for s in outcome.skipped]
    assert outcome.compared_steps == len(SOURCES_CATALOGUE) * len(case.changes)
    assert not outcome.divergences, "\n".join(d.describe() for d in outcome.divergences[:3])
