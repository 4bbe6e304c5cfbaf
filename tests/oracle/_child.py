"""The child process that drives drasi-lib for :mod:`tests.oracle.drasi_lib`.

Run as ``python -m tests.oracle._child <spec.json> <answer.json>``. It pushes the spec's
changes into one Drasi instance, waits until every query answered the change it must answer
(or stopped running, or the spec's timeout passed), writes what each query emitted, attributed
to the change that caused it, and exits at once: drasi-lib can crash at interpreter exit.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from typing import Any

import drasi

POLL_S = 0.02
LIVE = ("Running", "Starting")
"""States of a query that may still answer."""


async def _drasi(spec: dict[str, Any]) -> Any:
    if not spec["archive"]:
        return await drasi.Drasi.create("oracle")
    store = {"kind": "rocksdb", "path": tempfile.mkdtemp(prefix="oracle-"), "enable_archive": True}
    return await drasi.Drasi.create("oracle", index_store=store)


async def _add_queries(engine: Any, queries: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    started, refused = [], {}
    for query_id, text in queries.items():
        try:
            await engine.add_query(query_id, text, ["s"])
            started.append(query_id)
        except Exception as error:  # drasi-lib refuses the query: that is an answer too
            refused[query_id] = str(error)
    return started, refused


def _step_of(stamps: list[int], sent_ns: int) -> int:
    return max(index for index, stamp in enumerate(stamps) if stamp <= sent_ns)


async def _settle(
    engine: Any, events: list[Any], stamps: list[int], answers: dict[str, int], timeout_s: float
) -> dict[str, str]:
    """Wait until each query emitted for its answering change ("Running": it answered) or
    stopped (its state then, e.g. "Error")."""
    deadline = time.monotonic() + timeout_s
    waiting = dict(answers)
    statuses: dict[str, str] = {}
    while waiting and time.monotonic() < deadline:
        for query_id, step in list(waiting.items()):
            answered = any(
                event["query_id"] == query_id
                and _step_of(stamps, event["profiling"]["source_send_ns"]) >= step
                for event in events
            )
            status = "Running" if answered else await engine.get_query_status(query_id)
            if answered or status not in LIVE:
                statuses[query_id] = status
                del waiting[query_id]
        await asyncio.sleep(POLL_S)
    for query_id in waiting:
        statuses[query_id] = "Silent"
    return statuses


async def run(spec: dict[str, Any]) -> dict[str, Any]:
    engine = await _drasi(spec)
    await engine.add_python_source("s")
    await engine.start()
    started, refused = await _add_queries(engine, spec["queries"])
    events: list[Any] = []
    await engine.add_python_reaction("r", started, events.append)
    stamps = []
    for change in spec["changes"]:
        stamps.append(time.time_ns())
        await engine.push_change("s", change)
    answers = {query_id: spec["answers"][query_id] for query_id in started}
    statuses = await _settle(engine, events, stamps, answers, spec["timeout_s"])
    steps: dict[str, list[list[Any]]] = {q: [[] for _ in stamps] for q in started}
    for event in events:
        step = _step_of(stamps, event["profiling"]["source_send_ns"])
        for diff in event["results"]:
            diff.pop("row_signature", None)
            steps[event["query_id"]][step].append(diff)
    return {"steps": steps, "statuses": statuses, "refused": refused}


def main() -> None:
    spec_path, answer_path = sys.argv[1], sys.argv[2]
    with open(spec_path, encoding="utf-8") as spec_file:
        spec = json.load(spec_file)
    answer = asyncio.run(run(spec))
    with open(answer_path, "w", encoding="utf-8") as answer_file:
        json.dump(answer, answer_file)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
