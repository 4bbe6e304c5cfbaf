"""Run the whole benchmark suite: every module of ``bench/`` that exposes ``main(argv)``.

``python -m bench`` (or ``python -m bench.run``) imports each module of the package in name
order, skips those without a ``main`` (shared helpers), runs each with no arguments (its own
defaults) in this one process, and prints a table: module, exit status, wall time. A module
that raises is reported as failed and the others still run. ``--only a,b`` / ``--skip a,b`` pick
modules by name. Benchmarks added later (query_engine, analytics, chaos, ...) are found the same
way: nothing here lists them.

Each module appends its own figures to ``bench/results.jsonl``; a local Ray started here is
shared by all of them (``bench.common.start_ray`` leaves a running Ray alone). At the end
``bench/CURRENT.md`` is regenerated from the results (:mod:`bench.current`).
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
from bench import current
from bench.common import format_table, print_lines, start_ray, timed

NOT_BENCHMARKS = frozenset({"__main__", "run", "common", "results", "current"})

Main = Callable[[list[str] | None], int]


@dataclass(frozen=True)
class Outcome:
    module: str
    status: str
    seconds: float


def discover(only: Sequence[str] = (), skip: Sequence[str] = ()) -> list[str]:
    """Names of the candidate modules of ``bench/``, sorted (helpers are weeded out on import)."""
    names = sorted(info.name for info in pkgutil.iter_modules(bench.__path__))
    return [
        name
        for name in names
        if name not in NOT_BENCHMARKS and name not in skip and (not only or name in only)
    ]


def _main_of(module: ModuleType) -> Main | None:
    entry = getattr(module, "main", None)
    return entry if callable(entry) else None


def run_one(name: str) -> Outcome | None:
    """Import ``bench.<name>`` and run its ``main([])``; None if it has no ``main``.

    A module that fails to import or raises is reported as failed, not raised.
    """
    with timed() as timer:
        try:
            entry = _main_of(importlib.import_module(f"bench.{name}"))
            if entry is None:
                return None
            print(f"\n=== bench.{name} ===", flush=True)
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
    names = discover(_names(args.only), _names(args.skip))
    started = start_ray()
    try:
        outcomes = [outcome for name in names if (outcome := run_one(name)) is not None]
    finally:
        if started:
            ray.shutdown()
    current.main([])
    rows = [(o.module, o.status, f"{o.seconds:.1f}") for o in outcomes]
    print_lines(["", *format_table(("benchmark", "status", "seconds"), rows)])
    return 0 if all(o.status == "ok" for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
