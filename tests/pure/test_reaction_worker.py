"""The reaction worker in process: what it does with a result its reaction cannot write."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node
from drasi_ray.model.reaction_specs import JsonLinesReaction
from drasi_ray.model.results import QueryResult
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.reactions.base import ReactionWorker
from drasi_ray.reactions.jsonl import JsonLinesFileReaction


def _results(values: list[int]) -> list[QueryResult]:
    """One result per node, through a real query: ``v`` is the node's ``x`` squared."""
    query = ContinuousQuery("q", "MATCH (n:N) RETURN n.x * n.x AS v")
    results = []
    for number, x in enumerate(values, start=1):
        element = node(str(number), ["N"], {"x": x})
        diffs = query.apply(ElementDelta(None, element, ZERO_VERSION, 0))
        results.append(QueryResult("q", number, 0, 0, tuple(diffs)))
    return results


def test_a_result_json_cannot_hold_is_dropped_alone_not_with_its_batch(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    spec = JsonLinesReaction(path=str(path))
    worker = ReactionWorker("q/jsonl", JsonLinesFileReaction(spec), spec)

    async def run() -> None:
        worker.start()
        for result in _results([2, 2**40, 3]):  # (2**40)**2 does not fit in 64 bits
            worker.offer(result)
        assert await worker.flush(10)
        await worker.close(1)

    asyncio.run(run())
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert [line["sequence"] for line in lines] == [1, 3]
    assert [line["results"][0]["data"]["v"] for line in lines] == [4, 9]
    status = worker.status()
    assert (status.delivered, status.dropped) == (2, 1)
    assert status.last_error is not None
    assert "render" in status.last_error and "Integer" in status.last_error
