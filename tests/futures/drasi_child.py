"""Run timed plans through Drasi (drasi-lib), in a child process: ``python -m
tests.futures.drasi_child PLANS.json OUT.json``.

Each plan (see :mod:`tests.futures.plans`) gets its own Drasi engine; all run at once against
one wall-clock base time. Drasi's future queue fires on its own wall clock, so this process
waits for the plan's times to come: it is the oracle's clock, not a test sleeping. It writes its
observations to OUT.json before stopping the engines (drasi-lib can crash at interpreter
exit; the parent reads the file, not the exit code).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import drasi

SETTLE_MS = 700
"""How long after a plan's last step its late results (due re-evaluations) are collected."""
LEAD_MS = 400
"""Time between the end of setting up every engine and the base time of the plans."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _resolve(value: Any, base: int) -> Any:
    """Replace ``{"$at": ms}`` placeholders by ``base + ms``."""
    if isinstance(value, dict):
        if set(value) == {"$at"}:
            return base + int(value["$at"])
        return {key: _resolve(item, base) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, base) for item in value]
    return value


class _Run:
    def __init__(self, plan: dict[str, Any], number: int) -> None:
        self.plan = plan
        self.name = f"oracle{number}"
        self.arrivals: list[tuple[int, str, list[dict[str, Any]]]] = []
        self.engine: Any = None

    async def setup(self) -> None:
        engine = self.engine = await drasi.Drasi.create(self.name)
        await engine.start()
        await engine.add_python_source("s")
        queries = self.plan["queries"]
        for query_id, text in queries.items():
            await engine.add_query(query_id, text, ["s"])
        await engine.add_python_reaction("r", list(queries), self._arrived)
        for query_id in queries:
            await engine.wait_for_query(query_id)

    def _arrived(self, event: dict[str, Any]) -> None:
        self.arrivals.append((_now_ms(), event["query_id"], event["results"]))

    async def run(self, base: int) -> dict[str, Any]:
        starts: list[int] = []
        for step in self.plan["steps"]:
            await _sleep_until(base + step["at"])
            starts.append(_now_ms())
            change = step.get("change")
            if change is not None:
                await self.engine.push_change("s", _change(change, step, base))
        await _sleep_until(base + self.plan["steps"][-1]["at"] + SETTLE_MS)
        results = {q: await self.engine.get_query_results(q) for q in self.plan["queries"]}
        status = {q: await self.engine.get_query_status(q) for q in self.plan["queries"]}
        return {
            "windows": self._windows(starts),
            "results": results,
            "status": status,
            "late_ms": [
                start - (base + step["at"])
                for start, step in zip(starts, self.plan["steps"], strict=True)
            ],
        }

    def _windows(self, starts: list[int]) -> list[dict[str, list[Any]]]:
        windows: list[dict[str, list[Any]]] = [
            {q: [] for q in self.plan["queries"]} for _ in starts
        ]
        for arrived, query_id, diffs in self.arrivals:
            index = (
                max(i for i, start in enumerate(starts) if start <= arrived)
                if arrived >= starts[0]
                else 0
            )
            windows[index][query_id].extend(_normal(diff) for diff in diffs)
        return windows


def _change(change: dict[str, Any], step: dict[str, Any], base: int) -> dict[str, Any]:
    pushed = {key: _resolve(value, base) for key, value in change.items()}
    pushed["effective_from"] = base + step.get("effective", step["at"])
    return pushed


def _normal(diff: dict[str, Any]) -> dict[str, Any]:
    """Drasi's diff as drasi_ray writes it (no row signatures, no ``data`` on updates)."""
    kind = diff["type"]
    if kind in ("ADD", "DELETE"):
        return {"type": kind, "data": diff["data"]}
    return {"type": kind, "before": diff.get("before"), "after": diff["after"]}


async def _sleep_until(when_ms: int) -> None:
    delay = when_ms - _now_ms()
    if delay > 0:
        await asyncio.sleep(delay / 1000)


async def _main(plans: list[dict[str, Any]], out: Path) -> None:
    runs = [_Run(plan, number) for number, plan in enumerate(plans)]
    for run in runs:
        await run.setup()
    base = _now_ms() + LEAD_MS
    observed = await asyncio.gather(*(run.run(base) for run in runs))
    out.write_text(json.dumps(list(observed)))
    for run in runs:
        await run.engine.stop()


def main() -> None:
    plans = json.loads(Path(sys.argv[1]).read_text())
    asyncio.run(_main(plans, Path(sys.argv[2])))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
