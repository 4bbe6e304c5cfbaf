"""How a consumer actor hands a batch to the store shards: split by owner, one call per shard.

A batch's changes are split by the shard that owns each element
(:func:`~drasi_ray.model.shards.split_by_shard`) and each involved shard gets its part in one
call, on a direct line, all parts at once; the batch is applied (and may be acked) once every
one of them returned. A batch that touched several shards is tagged
(:class:`~drasi_ray.model.shards.BatchTag`) so the query hosts can apply its parts together.

Control events go to the coordinator instead, in stream order with the changes around them: the
changes before a control entry are applied first, then the coordinator applies the control and
gives every shard the new subscription table, then the changes after it are sent.

The shard count comes from the coordinator; a shard that refuses a part because the shards were
rescaled (:class:`~drasi_ray.model.errors.ShardMapChangedError`) makes the dispatcher take the
new count before the batch is sent again. A rescale pauses every dispatcher first
(:meth:`ShardDispatcher.pause`: the batch in hand finishes, the next waits).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Sequence
from typing import Any

import ray

from drasi_ray.actors import names
from drasi_ray.actors.line import Line
from drasi_ray.actors.wire import EntryPacket
from drasi_ray.model.backoff import Backoff, outlasting
from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.errors import ShardMapChangedError
from drasi_ray.model.shards import BatchTag, split_by_shard
from drasi_ray.shards.core import BatchReport

logger = logging.getLogger("drasi_ray.dispatch")

_UNAVAILABLE = (ray.exceptions.ActorUnavailableError,)


class ShardDispatcher:
    """A consumer's way to the store shards (module docstring). Use it in the actor's loop."""

    def __init__(self, namespace: str, consumer_name: str) -> None:
        self._namespace = namespace
        self._coordinator = ray.get_actor(names.COORDINATOR, namespace=namespace)
        self._incarnation = f"{consumer_name}#{uuid.uuid4().hex[:12]}"
        self._numbers = itertools.count()
        self._handles: list[Any] = []
        self._lines: list[Line] = []
        self._open = asyncio.Event()
        self._open.set()
        self._active = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def shards(self) -> int:
        """The shard count batches are split for (0: to be asked from the coordinator)."""
        return len(self._lines)

    async def dispatch(self, source_id: str, entries: Sequence[DecodedEntry]) -> BatchReport:
        """Apply one batch: changes on their shards, control events on the coordinator."""
        await self._open.wait()
        self._active += 1
        self._idle.clear()
        try:
            return await self._dispatch(source_id, entries)
        finally:
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    async def _dispatch(self, source_id: str, entries: Sequence[DecodedEntry]) -> BatchReport:
        if not self._lines:
            await self._take_shard_map()
        report = BatchReport()
        segment: list[DecodedEntry] = []
        for entry in entries:
            if not entry.controls:
                segment.append(entry)
                continue
            if segment:
                _add(report, await self._to_shards(source_id, segment))
                segment = []
            report.controls += len(entry.controls)
            await self._call(-1, self._coordinator.apply_controls.remote(source_id, entry.controls))
        if segment:
            _add(report, await self._to_shards(source_id, segment))
        return report

    async def _to_shards(self, source_id: str, entries: Sequence[DecodedEntry]) -> BatchReport:
        shards = len(self._lines)
        parts = split_by_shard(entries, shards)
        tag = None
        if len(parts) > 1:
            tag = BatchTag(self._incarnation, next(self._numbers), tuple(sorted(parts)))
        calls = [
            self._lines[index].call(
                "apply_batch", source_id, EntryPacket(part, json_values=True), tag, shards
            )
            for index, part in parts.items()
        ]
        results = await asyncio.gather(*calls, return_exceptions=True)
        report = BatchReport()
        failure: BaseException | None = None
        for index, result in zip(parts, results, strict=True):
            if isinstance(result, BaseException):
                failure = failure or result
                await self._after_failure(index, result)
            else:
                _add(report, result)
        if failure is not None:
            raise failure
        return report

    async def _after_failure(self, index: int, error: BaseException) -> None:
        """A shard refused or failed its part: take the new shard map, or wait until a shard
        that is down answers again before the batch fails (so an outage alone never pushes an
        innocent entry towards ``max_deliveries``)."""
        if isinstance(error, ShardMapChangedError):
            self._close_lines()
        elif isinstance(error, ray.exceptions.RayActorError):
            await _await_actor(self._handles[index])

    async def _call(self, index: int, reference: Any) -> Any:
        """Await a Ray call to the coordinator (``index`` -1) or a shard, waiting for it to
        answer again before raising if it is down."""
        try:
            return await reference
        except ray.exceptions.RayActorError:
            await _await_actor(self._coordinator if index < 0 else self._handles[index])
            raise

    async def _take_shard_map(self) -> None:
        shards: int = await outlasting(
            lambda: self._coordinator.shard_count.remote(),
            _UNAVAILABLE,
            "consumer: the shard count",
            logger,
        )
        self._close_lines()
        self._handles = [
            ray.get_actor(names.shard_actor(index), namespace=self._namespace)
            for index in range(shards)
        ]
        self._lines = [Line(handle) for handle in self._handles]

    def _close_lines(self) -> None:
        for line in self._lines:
            line.close()
        self._lines = []
        self._handles = []

    async def pause(self) -> None:
        """Stop dispatching: the batches in hand finish, later ones wait for :meth:`resume`."""
        self._open.clear()
        await self._idle.wait()

    def resume(self) -> None:
        """Dispatch again, with the shard map of now (taken at the next batch)."""
        self._close_lines()
        self._open.set()

    def close(self) -> None:
        self._close_lines()


def _add(total: BatchReport, part: Any) -> None:
    total.changes += part.changes
    total.applied += part.applied
    total.duplicates += part.duplicates
    total.controls += part.controls
    total.routed += part.routed
    total.rejected.extend(part.rejected)


async def _await_actor(handle: Any) -> None:
    backoff = Backoff()
    while True:
        try:
            await handle.ping.remote()
            return
        except ray.exceptions.RayActorError:
            await backoff.wait()
