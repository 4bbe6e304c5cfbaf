"""The full PostgreSQL chaos run: 20,000 row changes, the reader killed, PostgreSQL and Redis
restarted (issue #29).

    python -m bench.postgres_chaos                   # 20,000 row changes, 6 kills, 2 + 2 restarts
    python -m bench.postgres_chaos --changes 5000    # shorter
    python -m bench.postgres_chaos --no-record       # print only

Runs :mod:`drasi_ray.testing.postgres_chaos` (its own PostgreSQL and Redis, the local Ray) and
appends its figures to bench/results.jsonl (unless ``--no-record``). Exit status 1 if anything
was lost, duplicated or mismatched.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bench.common import command_line, load_average, print_lines
from bench.results import Recorder
from drasi_ray.testing.postgres_chaos import PostgresChaos, PostgresChaosSettings


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    changes = int(args[args.index("--changes") + 1]) if "--changes" in args else 20_000
    recorder = Recorder("postgres_chaos", command_line("bench.postgres_chaos", argv))
    load_before = load_average()
    report = PostgresChaos(PostgresChaosSettings(changes=changes)).run()
    print_lines(
        [
            *report.lines(),
            f"{'verdict':>22}: {'PASSED' if report.passed else 'FAILED'}",
            f"{'load average':>22}: {load_before:.1f} before, {load_average():.1f} after",
        ]
    )
    if "--no-record" not in args:
        detail = (
            f"{report.row_changes:,} row changes in {report.transactions:,} transactions, "
            f"{report.reader_kills} reader kills, {report.postgres_restarts} PostgreSQL and "
            f"{report.redis_restarts} Redis restarts, {report.resent_skipped} re-sent "
            f"transactions skipped, {report.diffs_compared:,} result diffs compared, "
            f"{report.wall_s:.0f} s"
        )
        recorder.add("row changes lost", float(report.lost), "changes", detail=detail)
        recorder.add(
            "row changes on the stream twice", float(report.duplicated), "changes", detail=detail
        )
        recorder.add(
            "result rows and result diffs differing from the replay of the committed changes",
            float(report.mismatched_rows + report.mismatched_diffs),
            "rows and diffs",
            detail=detail,
        )
        recorder.write()
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
