"""Run the whole benchmark suite: every module of ``bench/`` that exposes ``main(argv)``.

``python -m bench`` (or ``python -m bench.run``) imports each module of the package in name
order, skips those without a ``main`` (shared helpers), runs each with no arguments (its own
defaults) in this one process, and prints a table: module, exit status, wall time. A module
that raises is reported as failed and the others still run. ``--only a,b`` / ``--skip a,b`` pick
modules by name. Benchmarks added later (query_engine, analytics, chaos, ...) are found the same
way: nothing here lists them.

Each module appends its own section to ``bench/RESULTS.md``; a local Ray started here is shared
by all of them (``bench.common.start_ray`` leaves a running Ray alone).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import ray

import bench
from bench.common import format_table, print_lines, start_ray, timed

NOT_BENCHMARKS = frozenset({"__main__", "run", "common"})

Main = Callable[[list[str] | None], int]


@dataclass(frozen=True)
class Outcome:
    module: str
    status: str
    seconds: float


def discover(only: Sequence[str] = (), skip: Sequence[str] = ()) -> list[tuple[str, Main]]:
    """``(name, main)`` of every benchmark module in ``bench/``, sorted by name."""
    found = []
    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda i: i.name):
        name = info.name
        if name in NOT_BENCHMARKS or name in skip or (only and name not in only):
            continue
        entry = _main_of(importlib.import_module(f"bench.{name}"))
        if entry is not None:
            found.append((name, entry))
    return found


def _main_of(module: ModuleType) -> Main | None:
    entry = getattr(module, "main", None)
    return entry if callable(entry) else None


def run_one(name: str, entry: Main) -> Outcome:
    """Run one benchmark's ``main([])``; a failure is reported, not raised."""
    print(f"\n=== bench.{name} ===", flush=True)
    status = "ok"
    with timed() as timer:
        try:
            code = entry([])
            status = "ok" if code == 0 else f"exit {code}"
        except Exception:
            traceback.print_exc()
            status = "failed"
    return Outcome(name, status, timer.seconds)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def main(argv: list[str] | None = None) -> int:
    """Run every discovered benchmark; exit 1 if any failed."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated module names to run")
    parser.add_argument("--skip", default="", help="comma-separated module names to skip")
    args = parser.parse_args(argv)
    benchmarks = discover(_names(args.only), _names(args.skip))
    started = start_ray()
    try:
        outcomes = [run_one(name, entry) for name, entry in benchmarks]
    finally:
        if started:
            ray.shutdown()
    rows = [(o.module, o.status, f"{o.seconds:.1f}") for o in outcomes]
    print_lines(["", *format_table(("benchmark", "status", "seconds"), rows)])
    return 0 if all(o.status == "ok" for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
