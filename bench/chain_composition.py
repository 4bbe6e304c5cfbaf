"""Query chaining's composition test at length (issue #33; tests/differential/composition.py).

    python -m bench.chain_composition                         # in process, then end to end
    python -m bench.chain_composition --cases 200 --changes 150 --restarts 5
    python -m bench.chain_composition --e2e-runs 0            # in process only
    python -m bench.chain_composition --no-record             # print only

In process: for each of ``--cases`` seeds (from ``--first-seed``), every catalogue upstream
(Cypher and, unless ``--no-gql``, GQL) paired with two downstreams drawn for that seed (about
390 pairs), over a two-source case of
``--changes`` changes with ``--restarts`` upstreams rebuilt mid-stream; after every change the
chains, the chain sources' stores and the downstreams' diffs are checked, and at the end each
downstream against itself over the upstream's final rows. End to end (``--e2e-runs``, on a
private Redis and a local Ray): the 9 pairs of tests/pipeline/test_chain_composition.py over
``--e2e-changes`` changes, each run with 3 consumers per source and the upstreams' query host,
the downstreams' query host and the coordinator SIGKILLed mid-stream. Appends its figures to
bench/results.jsonl; exit status 1 if any pair diverged.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from bench.common import bench_env, command_line, print_lines
from bench.results import Recorder
from drasi_ray.testing.drills import sigkill
from tests.differential.composition import ChainReport, InProcessChain, draw_pairs
from tests.differential.generator import generate_two_source_case
from tests.pipeline.chain_app import ChainApp, ChainOutcome
from tests.pipeline.test_chain_composition import UPSTREAMS


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.chain_composition", description=__doc__)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--changes", type=int, default=120)
    parser.add_argument("--restarts", type=int, default=4)
    parser.add_argument("--first-seed", type=int, default=50_000)
    parser.add_argument("--e2e-runs", type=int, default=1)
    parser.add_argument("--e2e-changes", type=int, default=600)
    parser.add_argument("--no-gql", action="store_true", help="leave the GQL upstreams out")
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    return parser.parse_args(argv)


def in_process(args: argparse.Namespace) -> tuple[int, int, ChainReport, list[str], float]:
    """(pairs per case, pairs diverging, the summed report, first errors, seconds)."""
    total = ChainReport()
    failing: set[str] = set()
    errors: list[str] = []
    pairs_per_case = 0
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.cases):
        pairs = draw_pairs(seed, gql=not args.no_gql)
        pairs_per_case = max(pairs_per_case, len(pairs))
        case = generate_two_source_case(seed, args.changes)
        report = InProcessChain(pairs).run(case, restarts=args.restarts, seed=seed)
        for field in ("changes", "node_changes", "chain_entries", "restarts", "downstream_diffs"):
            setattr(total, field, getattr(total, field) + getattr(report, field))
        total.history_dependent.extend(report.history_dependent)
        for error in report.errors:
            failing.update(pair.downstream.id for pair in pairs if pair.downstream.id in error)
        errors.extend(f"seed {seed}: {error}" for error in report.errors[:3])
    return pairs_per_case, len(failing), total, errors[:10], time.perf_counter() - started


def end_to_end(url: str, seed: int, changes: int) -> tuple[ChainOutcome, float]:
    """One end-to-end run with kills (3 consumers per source)."""
    pairs = [p for p in draw_pairs(seed, per_upstream=1) if p.upstream.id in UPSTREAMS]
    run = ChainApp(pairs, url, consumers=3)
    started = time.perf_counter()
    run.start()
    chunks = max(1, changes // 40)
    victims = {
        chunks // 4: run.upstream_host,
        chunks // 2: run.downstream_host,
        3 * chunks // 4: run.app.coordinator_actor,
    }

    def kill(chunk: int) -> None:
        if chunk in victims and sigkill(victims[chunk]()) is not None:
            run.outcome.kills.append(f"chunk {chunk}")

    try:
        run.publish(generate_two_source_case(seed, changes, node_pool=20), between=kill)
        outcome = run.verify(replay=False, timeout_s=300)
    finally:
        run.stop()
    return outcome, time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    recorder = Recorder("chain-composition", command_line("bench.chain_composition", argv))
    pairs, failing, report, errors, seconds = in_process(args)
    size = f"{pairs} pairs x {args.cases} cases x {args.changes} changes"
    lines = [
        f"in process: {size}: {failing} pairs diverged; {report.node_changes:,} node changes "
        f"in {report.chain_entries:,} chain entries, {report.downstream_diffs:,} downstream "
        f"diffs, {report.restarts} upstream rebuilds, {seconds:.0f} s; "
        f"{len(report.history_dependent)} pair runs where Drasi's result owes to its history "
        f"(drasi-lib over the chain's changes agreed): {sorted(set(report.history_dependent))}",
        *errors,
    ]
    recorder.add(
        "pairs whose chained downstream diverged from its composition, in process",
        float(failing),
        "pairs",
        detail=f"{size}, {report.restarts} upstream rebuilds, "
        f"{report.node_changes:,} node changes, {seconds:.0f} s; "
        f"{len(report.history_dependent)} pair runs judged by drasi-lib over the chain's changes",
    )
    print_lines(lines)  # now: the end-to-end runs take a while
    lines = []
    e2e_failing = 0
    if args.e2e_runs:
        with bench_env() as server:
            for run in range(args.e2e_runs):
                outcome, wall = end_to_end(server.url, args.first_seed + run, args.e2e_changes)
                e2e_failing += bool(outcome.errors)
                lines.append(
                    f"end to end, 3 consumers, kills {outcome.kills}: {outcome.pairs} pairs x "
                    f"{outcome.changes} changes, {outcome.chain_entries} chain entries, "
                    f"{len(outcome.errors)} problems, {len(outcome.history_dependent)} judged "
                    f"by drasi-lib, {wall:.0f} s"
                )
                lines.extend(outcome.errors[:5])
        recorder.add(
            "end-to-end runs whose chains diverged, with both hosts and the coordinator killed",
            float(e2e_failing),
            "runs",
            detail=f"{args.e2e_runs} runs x 9 pairs x {args.e2e_changes} changes, 3 consumers",
        )
    print_lines(lines)
    if not args.no_record:
        recorder.write()
    return 1 if failing or e2e_failing else 0


if __name__ == "__main__":
    raise SystemExit(main())
