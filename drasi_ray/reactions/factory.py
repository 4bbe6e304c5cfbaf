"""Building running reactions from their specs, and the set a query actor drives."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from drasi_ray.model.reaction_specs import (
    AnyReaction,
    CallbackReaction,
    JsonLinesReaction,
    LogReaction,
    PlatformReaction,
)
from drasi_ray.model.results import Delivered
from drasi_ray.reactions.base import Reaction, ReactionReport, ReactionWorker
from drasi_ray.reactions.callback import FunctionReaction
from drasi_ray.reactions.jsonl import JsonLinesFileReaction
from drasi_ray.reactions.log import LoggingReaction
from drasi_ray.reactions.platform import PlatformStreamReaction


def build_reaction(
    query_id: str, spec: AnyReaction, grouping_keys: Sequence[str] = ()
) -> Reaction[Any]:
    """The running reaction for ``spec``. A platform spec needs its ``redis_url`` resolved."""
    if isinstance(spec, PlatformReaction):
        if spec.redis_url is None:
            raise ValueError(f"query {query_id!r}: platform reaction has no redis_url")
        return PlatformStreamReaction(query_id, spec, spec.redis_url, grouping_keys)
    if isinstance(spec, JsonLinesReaction):
        return JsonLinesFileReaction(spec)
    if isinstance(spec, LogReaction):
        return LoggingReaction(query_id, spec)
    if isinstance(spec, CallbackReaction):
        return FunctionReaction(spec)
    raise TypeError(f"unknown reaction spec {type(spec).__name__}")


def resolve_specs(specs: Sequence[AnyReaction], default_redis_url: str | None) -> list[AnyReaction]:
    """Fill each platform reaction's missing ``redis_url`` with ``default_redis_url``."""
    resolved: list[AnyReaction] = []
    for spec in specs:
        if isinstance(spec, PlatformReaction) and spec.redis_url is None:
            spec = spec.model_copy(update={"redis_url": default_redis_url})
        resolved.append(spec)
    return resolved


class ReactionSet:
    """A query's reactions, each in its own :class:`ReactionWorker` (inside the query actor)."""

    def __init__(self, query_id: str, grouping_keys: Sequence[str] = ()) -> None:
        self.query_id = query_id
        self._grouping_keys = tuple(grouping_keys)
        self.workers: list[ReactionWorker] = []

    def add(self, spec: AnyReaction) -> ReactionWorker:
        """Build and start a reaction (needs a running event loop)."""
        reaction = build_reaction(self.query_id, spec, self._grouping_keys)
        name = f"{self.query_id}/{reaction.kind}-{len(self.workers)}"
        worker = ReactionWorker(name, reaction, spec)
        self.workers.append(worker)
        worker.start()
        return worker

    def offer(self, item: Delivered) -> None:
        """Hand ``item`` to every reaction without waiting (a result observer)."""
        for worker in self.workers:
            worker.offer(item)

    async def last_sequence(self) -> int:
        """The highest sequence any reaction already holds (0 if none knows)."""
        found = 0
        for worker in self.workers:
            try:
                sequence = await worker.reaction.last_sequence()
            except Exception as exc:  # an unreachable reaction must not stop the query
                worker.last_error = f"{type(exc).__name__}: {exc}"
                continue
            found = max(found, sequence or 0)
        return found

    async def remove(self, name: str, timeout_s: float) -> int:
        """Stop the reactions of the Reaction resource ``name`` (each writes what it holds,
        up to ``timeout_s``, then closes); how many there were."""
        leaving = [worker for worker in self.workers if worker.spec.name == name]
        self.workers = [worker for worker in self.workers if worker.spec.name != name]
        await asyncio.gather(*(worker.close(timeout_s) for worker in leaving))
        return len(leaving)

    async def flush(self, timeout_s: float) -> bool:
        results = await asyncio.gather(*(w.flush(timeout_s) for w in self.workers))
        return all(results)

    async def close(self, timeout_s: float) -> None:
        await asyncio.gather(*(w.close(timeout_s) for w in self.workers))

    def status(self) -> list[ReactionReport]:
        return [worker.status() for worker in self.workers]
