"""bench/CURRENT.md is what ``python -m bench.current`` makes of bench/results.jsonl.

The results file holds one JSON line per measured figure (bench/results.py); CURRENT.md keeps
the latest line of each figure. A benchmark run that appends figures without regenerating
CURRENT.md fails here, so the table of current figures cannot go stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import current, results, run

FIELDS = {
    "bench",
    "what",
    "value",
    "unit",
    "peer",
    "peer_value",
    "ratio",
    "detail",
    "machine",
    "date",
    "commit",
    "command",
}


def line(what: str, value: float, date: str, **extra: Any) -> dict[str, Any]:
    return {
        "bench": "ingest",
        "what": what,
        "value": value,
        "unit": "events/s",
        "peer": None,
        "peer_value": None,
        "ratio": None,
        "detail": "",
        "machine": "2 cores; load 1m 1.0 before, 1.2 after",
        "date": date,
        "commit": "abc1234",
        "command": "python -m bench.ingest",
        **extra,
    }


def test_current_md_is_generated_from_the_results() -> None:
    expected = current.render(results.read(results.RESULTS_JSONL))
    assert current.CURRENT_MD.read_text(encoding="utf-8") == expected, (
        "bench/CURRENT.md is stale: run `python -m bench.current`"
    )


def test_every_results_line_has_every_field() -> None:
    lines = list(results.read(results.RESULTS_JSONL))
    assert lines, "bench/results.jsonl has no figures"
    for number, entry in enumerate(lines, 1):
        assert set(entry) == FIELDS, f"line {number}: {sorted(set(entry) ^ FIELDS)}"
        assert entry["command"].startswith("python -m bench"), number


def test_the_latest_line_of_each_figure_wins_in_first_appearance_order() -> None:
    lines = [
        line("b", 1.0, "2026-11-25T01:00:00+00:00"),
        line("a", 2.0, "2026-11-25T01:00:00+00:00"),
        line("b", 3.0, "2026-11-25T02:00:00+00:00"),
    ]
    assert [(f["what"], f["value"]) for f in current.latest(lines)] == [("b", 3.0), ("a", 2.0)]


def test_a_row_shows_value_peer_ratio_machine_date_and_command() -> None:
    text = current.render(
        [line("c", 98_000.0, "2026-11-25T01:02:03+00:00", peer="loop", peer_value=150_000.0,
              ratio=0.6533, detail="200,000 events")]
    )  # fmt: skip
    row = next(r for r in text.splitlines() if r.startswith("| c "))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells == [
        "c (200,000 events)",
        "98,000 events/s",
        "loop: 150,000 events/s",
        "0.65x",
        "m1",
        "2026-11-25 01:02 UTC, abc1234",
        "`python -m bench.ingest`",
    ]
    assert "- m1: 2 cores; load 1m 1.0 before, 1.2 after" in text


def test_the_recorder_appends_one_stamped_line_per_figure(tmp_path: Path) -> None:
    recorder = results.Recorder("ingest", "python -m bench.ingest --events 10")
    recorder.add("peer", 200.0, "events/s")
    recorder.add("ours", 100.0, "events/s", peer="peer", peer_value=200.0)
    path = tmp_path / "results.jsonl"
    recorder.write(path)
    written = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]
    assert [(w["what"], w["ratio"]) for w in written] == [("peer", None), ("ours", 0.5)]
    assert all(set(w) == FIELDS and "load 1m" in w["machine"] for w in written)


def test_the_suite_runner_does_not_run_the_generator_as_a_benchmark() -> None:
    assert not {"current", "results"} & set(run.discover())
