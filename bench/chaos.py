"""The full chaos run: 100,000 changes under SIGKILLs and Redis restarts (issue: reliability).

    python -m bench.chaos                      # 100,000 changes, kill every ~2 s, 2 restarts
    python -m bench.chaos --changes 20000      # shorter
    python -m bench.chaos --no-record          # print only
    python -m bench.chaos --streams 3          # the source over 3 streams (one per partition)

Runs :mod:`drasi_ray.testing.chaos` (which starts its own Redis with AOF and uses the local Ray) and
appends its figures to bench/results.jsonl (unless ``--no-record``). Exit status 1 if anything
was lost or mismatched.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bench.common import command_line, load_average, print_lines
from bench.results import Recorder
from drasi_ray.testing.chaos import Chaos, ChaosSettings


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    changes = int(args[args.index("--changes") + 1]) if "--changes" in args else 100_000
    streams = int(args[args.index("--streams") + 1]) if "--streams" in args else 1
    recorder = Recorder("chaos", command_line("bench.chaos", argv))
    load_before = load_average()
    report = Chaos(ChaosSettings(changes=changes, streams=streams)).run()
    over = "" if streams == 1 else f", a source over {streams} streams"
    lines = [
        *report.lines(),
        f"{'verdict':>22}: {'PASSED' if report.passed else 'FAILED'}",
        f"{'load average':>22}: {load_before:.1f} before, {load_average():.1f} after (2 cores)",
    ]
    print_lines(lines)
    if "--no-record" not in args:
        detail = (
            f"{report.published:,} published, {report.kills} kills, "
            f"{report.redis_restarts} Redis restarts, {report.wall_s:.0f} s"
        )
        recorder.add(f"changes lost{over}", float(report.lost), "changes", detail=detail)
        recorder.add(
            f"result rows differing from the in-order replay{over}",
            float(report.mismatched_rows),
            "rows",
            detail=detail,
        )
        recorder.add(
            f"entries dead-lettered{over}",
            float(report.dead_lettered),
            "entries",
            peer="malformed entries published",
            peer_value=float(report.malformed),
            detail=detail,
        )
        recorder.write()
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
