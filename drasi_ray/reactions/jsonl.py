"""The JSON-lines reaction: one JSON object per result, appended to a file.

A batch is written with one ``write`` and flushed. A retry first truncates the file back to
where the failed attempt started, so a batch is never half-written twice.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from drasi_ray.model import encoding
from drasi_ray.model.reaction_specs import JsonLinesReaction
from drasi_ray.model.results import Delivered, QueryResult
from drasi_ray.reactions.base import Reaction


def result_line(item: Delivered) -> dict[str, Any]:
    """The JSON object written for one result or control signal."""
    if isinstance(item, QueryResult):
        return {
            "kind": "change",
            "queryId": item.query_id,
            "sequence": item.sequence,
            "timestampMs": item.timestamp_ms,
            "sourceTimeMs": item.source_time_ms,
            "results": list(item.results),
        }
    return {
        "kind": "control",
        "queryId": item.query_id,
        "sequence": item.sequence,
        "timestampMs": item.timestamp_ms,
        "signal": item.signal.value,
    }


class JsonLinesFileReaction(Reaction[bytes]):
    """Appends results to ``spec.path`` (on the node running the query actor)."""

    kind = "jsonl"

    def __init__(self, spec: JsonLinesReaction) -> None:
        self.path = Path(spec.path)
        self._start: int | None = None  # file size before the batch in hand

    def render(self, items: Sequence[Delivered]) -> bytes:
        return b"".join(encoding.dumps(result_line(item)) + b"\n" for item in items)

    async def write(self, rendered: bytes, retry: bool) -> None:
        await asyncio.to_thread(self._append, rendered, retry)

    def _append(self, rendered: bytes, retry: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if retry and self._start is not None and self.path.exists():
            os.truncate(self.path, self._start)
        with self.path.open("ab") as handle:
            self._start = handle.tell()
            handle.write(rendered)
            handle.flush()
        self._start = None
