"""The differential test at length: drasi_ray against Drasi's own engine (drasi-lib).

``python -m bench.differential`` generates ``--cases`` random cases (seeds ``--first-seed`` on)
of ``--changes`` changes each (tests/differential/generator.py), runs every catalogue query
(tests/differential/catalogue.py) over each through drasi-lib and through drasi_ray's engine
path (tests/differential/subject.py), compares per change and per query the diffs as
multisets and the final result sets, and prints queries x cases x changes, the divergences
per query, and the queries Drasi could not run (skipped). ``--show N`` prints the first N
divergences in full; ``--shrink`` shrinks the first divergence of each query to a minimal
case (tests/differential/minimize.py) and prints it. Exit status 1 if anything diverged.

With ``--sources`` it runs the join and middleware catalogue (tests/differential/
catalogue_sources.py) over two-source cases (``generate_two_source_case``) instead. With
``--gql`` it runs the GQL catalogue (tests/differential/catalogue_gql.py) through drasi-lib
with ``language="gql"``, and also compares each GQL query's drasi_ray output with its Cypher
twin's (tests/differential/test_gql_differential.py is that with a few fixed seeds).

The CI part (tests/differential/test_differential.py) is this with a few fixed seeds.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Sequence

from bench.common import command_line, format_table, print_lines
from bench.results import Recorder
from tests.differential.catalogue import CATALOGUE
from tests.differential.catalogue_gql import GQL_CATALOGUE, TWINS
from tests.differential.catalogue_sources import SOURCES_CATALOGUE
from tests.differential.compare import Comparison, Divergence, compare_runs
from tests.differential.generator import generate_case, generate_two_source_case
from tests.differential.minimize import shrink
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_oracle
from tests.oracle.model import Case, CaseRun, QuerySpec


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.differential", description=__doc__)
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--changes", type=int, default=60)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--queries", default="", help="comma-separated catalogue ids (all)")
    parser.add_argument("--show", type=int, default=0, help="print the first N divergences")
    parser.add_argument("--shrink", action="store_true", help="shrink one case per query")
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    parser.add_argument(
        "--sources", action="store_true", help="joins, middleware and two sources instead"
    )
    parser.add_argument(
        "--no-label-changes", action="store_true", help="(--sources) updates keep the labels"
    )
    parser.add_argument(
        "--gql", action="store_true", help="the GQL catalogue, and each query's Cypher twin"
    )
    return parser.parse_args(argv)


def _selected(names: str, catalogue: tuple[QuerySpec, ...]) -> tuple[QuerySpec, ...]:
    if not names:
        return catalogue
    wanted = set(names.split(","))
    return tuple(query for query in catalogue if query.id in wanted)


def _summary(
    queries: Sequence[QuerySpec], cases: Sequence[Case], outcome: Comparison, seconds: float
) -> list[str]:
    changes = sum(len(case.changes) for case in cases)
    diverging = outcome.diverging_queries()
    by_query = Counter(d.query_id for d in outcome.divergences)
    steps = Counter((d.query_id, d.case, d.step) for d in outcome.divergences)
    lines = [
        f"{len(queries)} queries x {len(cases)} cases x {changes // max(1, len(cases))} changes "
        f"= {outcome.compared_steps} query-steps compared in {seconds:.1f} s; "
        f"{len(diverging)} queries diverged ({len(steps)} diverging steps or final results), "
        f"{len(outcome.skipped)} query runs skipped (Drasi could not run them).",
    ]
    if by_query:
        kinds = {
            q: Counter(d.kind for d in outcome.divergences if d.query_id == q) for q in by_query
        }
        rows = [
            (q, n, ", ".join(f"{k} {c}" for k, c in kinds[q].items()))
            for q, n in sorted(by_query.items())
        ]
        lines += ["", *format_table(("query", "divergences", "kinds"), rows)]
    if outcome.skipped:
        skipped = Counter((s.query_id, s.reason[:90]) for s in outcome.skipped)
        rows = [(q, n, reason) for (q, reason), n in sorted(skipped.items())]
        lines += ["", *format_table(("skipped query", "case runs", "Drasi's failure"), rows)]
    return lines


def _shrunk(
    divergences: Sequence[Divergence], cases: Sequence[Case], queries: Sequence[QuerySpec]
) -> list[str]:
    by_name = {case.name: case for case in cases}
    texts = {query.id: query for query in queries}
    lines: list[str] = []
    seen: set[str] = set()
    for divergence in divergences:
        if divergence.query_id in seen:
            continue
        seen.add(divergence.query_id)
        result = shrink(by_name[divergence.case], texts[divergence.query_id])
        lines.append(f"{divergence.query_id}: {texts[divergence.query_id].text}")
        lines += [f"  {json.dumps(change.to_json())}" for change in result.case.changes]
    return lines


def record_figures(
    recorder: Recorder,
    queries: Sequence[QuerySpec],
    cases: Sequence[Case],
    outcome: Comparison,
    seconds: float,
) -> None:
    """How many queries diverged from drasi-lib, out of how many compared, what was run and
    how long it took; the runs Drasi could not run, by query and Drasi's failure."""
    changes = sum(len(case.changes) for case in cases)
    size = f"{len(queries)} queries x {len(cases)} cases, {changes:,} changes"
    recorder.add(
        "queries whose diffs diverged from drasi-lib's",
        float(len(outcome.diverging_queries())),
        "queries",
        detail=f"{size}, {outcome.compared_steps:,} query-steps compared in {seconds:.0f} s",
    )
    skipped = Counter((s.query_id, s.reason) for s in outcome.skipped)
    reasons = "; ".join(f"{query} x{count}: {reason}" for (query, reason), count in skipped.items())
    recorder.add(
        "query runs drasi-lib could not run (skipped)",
        float(len(outcome.skipped)),
        "runs",
        detail=f"{size}" + (f"; {reasons}" if reasons else ""),
    )


def _catalogue(args: argparse.Namespace) -> tuple[str, tuple[QuerySpec, ...]]:
    """The run's bench name (each mode is its own figure: none replaces another's) and its
    catalogue."""
    if args.sources:
        return "differential-sources", SOURCES_CATALOGUE
    if args.gql:
        return "differential-gql", GQL_CATALOGUE
    return "differential", CATALOGUE


def _twin_divergences(
    queries: Sequence[QuerySpec], cases: Sequence[Case], ours: dict[str, CaseRun]
) -> Comparison:
    """drasi_ray's GQL runs against its runs of each query's Cypher twin."""
    twins = [TWINS[query.id] for query in queries if query.id in TWINS]
    theirs = {case.name: run_drasi_ray(case, twins) for case in cases}
    gql = {
        name: CaseRun(name, {twin.id: run.queries[twin.id] for twin in twins})
        for name, run in ours.items()
    }
    return compare_runs(theirs, gql, {query.id: query.text for query in queries})


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    bench, catalogue = _catalogue(args)
    recorder = Recorder(bench, command_line("bench.differential", argv))
    queries = _selected(args.queries, catalogue)
    seeds = range(args.first_seed, args.first_seed + args.cases)
    if args.sources:
        keep = not args.no_label_changes
        cases = [generate_two_source_case(seed, args.changes, label_changes=keep) for seed in seeds]
    else:
        cases = [generate_case(seed, args.changes) for seed in seeds]
    started = time.perf_counter()
    drasi = run_oracle(cases, queries)
    ours = {case.name: run_drasi_ray(case, queries) for case in cases}
    outcome = compare_runs(drasi, ours, {query.id: query.text for query in queries})
    seconds = time.perf_counter() - started
    lines = _summary(queries, cases, outcome, seconds)
    twins = _twin_divergences(queries, cases, ours) if args.gql else None
    if twins is not None:
        lines.append(
            f"Cypher twins: {twins.compared_queries} query runs compared, "
            f"{len(twins.diverging_queries())} GQL queries differ from their twin "
            f"{twins.diverging_queries() or ''}"
        )
    print_lines(lines)
    if args.show:
        shown = [*outcome.divergences, *(twins.divergences if twins else [])]
        print_lines([d.describe() for d in shown[: args.show]])
    if args.shrink:
        print_lines(_shrunk(outcome.divergences, cases, queries))
    if not args.no_record:
        record_figures(recorder, queries, cases, outcome, seconds)
        if twins is not None:
            recorder.add(
                "GQL queries whose drasi_ray output differed from their Cypher twin's",
                float(len(twins.diverging_queries())),
                "queries",
                detail=f"{twins.compared_queries} query runs compared",
            )
        recorder.write()
    return 1 if outcome.divergences or (twins and twins.divergences) else 0


if __name__ == "__main__":
    raise SystemExit(main())
