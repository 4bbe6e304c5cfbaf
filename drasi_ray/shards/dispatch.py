"""How a consumer hands a batch to the store shards: split by owner, one call per shard.

A batch's changes are split by the shard that owns each element
(:func:`~drasi_ray.model.shards.split_by_shard`) and each involved shard gets its part in one
call (:meth:`~drasi_ray.shards.calls.ShardCalls.apply_batch`), all parts at once; the batch is
applied (and may be acked) once every one of them returned. A batch that touched several shards
is tagged (:class:`~drasi_ray.model.shards.BatchTag`) so the query hosts can apply its parts
together.

Control events go to the control plane instead, in stream order with the changes around them:
the changes before a control entry are applied first, then the control plane applies the
control and gives every shard the new subscription table, then the changes after it are sent.

The shard count comes from the control plane; a shard that refuses a part because the shards
were rescaled (:class:`~drasi_ray.model.errors.ShardMapChangedError`) makes the dispatcher take
the new count before the batch is sent again. A rescale pauses every dispatcher first
(:meth:`ShardDispatcher.pause`: the batch in hand finishes, the next waits).

Its Ray side (the shards over direct lines, the coordinator actor) is handed in: the consumer
actor (:mod:`drasi_ray.actors.consumer`) makes one dispatcher per stream it reads.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from drasi_ray.model.changes import ControlEvent, DecodedEntry
from drasi_ray.model.errors import ShardMapChangedError
from drasi_ray.model.shards import BatchTag, split_by_shard
from drasi_ray.model.wire import EntryPacket
from drasi_ray.shards.calls import ShardCalls
from drasi_ray.shards.reports import BatchReport


class ShardConnection(ShardCalls, Protocol):
    """A consumer's way to one store shard (a direct line in the app)."""

    async def back(self) -> None:
        """Return once the shard answers again (after a call found it gone)."""

    def close(self) -> None:
        """Stop using it (the shard map changed)."""


class DispatchControl(Protocol):
    """What a dispatcher asks the control plane."""

    async def shard_count(self) -> int:
        """The shard count batches are split for now."""
        ...

    async def apply_controls(self, source_id: str, controls: Sequence[ControlEvent]) -> int:
        """Apply control events; every shard has the new table when this returns."""
        ...

    async def back(self) -> None:
        """Return once the control plane answers again (after a call found it gone)."""


class ShardDispatcher:
    """A consumer's way to the store shards (module docstring). Use it in one event loop."""

    def __init__(
        self,
        consumer_name: str,
        control: DispatchControl,
        connect: Callable[[int], ShardConnection],
        gone: tuple[type[BaseException], ...] = (),
        observe: Callable[[int, BatchReport], None] | None = None,
    ) -> None:
        """``connect(index)`` opens a connection to store shard ``index``; ``gone``: the errors
        that mean a shard (or the control plane) is gone, waited for before a batch fails;
        ``observe(entries, report)`` sees each batch applied (the consumer's metrics)."""
        self._control = control
        self._connect = connect
        self._gone = gone
        self._observe = observe
        self._incarnation = f"{consumer_name}#{uuid.uuid4().hex[:12]}"
        self._numbers = itertools.count()
        self._shards: list[ShardConnection] = []
        self._open = asyncio.Event()
        self._open.set()
        self._active = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def shards(self) -> int:
        """The shard count batches are split for (0: to be asked from the control plane)."""
        return len(self._shards)

    async def dispatch(self, source_id: str, entries: Sequence[DecodedEntry]) -> BatchReport:
        """Apply one batch: changes on their shards, control events on the control plane."""
        await self._open.wait()
        self._active += 1
        self._idle.clear()
        try:
            report = await self._dispatch(source_id, entries)
            if self._observe is not None:
                self._observe(len(entries), report)
            return report
        finally:
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    async def _dispatch(self, source_id: str, entries: Sequence[DecodedEntry]) -> BatchReport:
        if not self._shards:
            await self._take_shard_map()
        report = BatchReport()
        segment: list[DecodedEntry] = []
        for entry in entries:
            if not entry.controls:
                segment.append(entry)
                continue
            if segment:
                add_report(report, await self._to_shards(source_id, segment))
                segment = []
            report.controls += len(entry.controls)
            await self._apply_controls(source_id, entry.controls)
        if segment:
            add_report(report, await self._to_shards(source_id, segment))
        return report

    async def _to_shards(self, source_id: str, entries: Sequence[DecodedEntry]) -> BatchReport:
        shards = len(self._shards)
        parts = split_by_shard(entries, shards)
        tag = None
        if len(parts) > 1:
            tag = BatchTag(self._incarnation, next(self._numbers), tuple(sorted(parts)))
        calls = [
            self._shards[index].apply_batch(
                source_id, EntryPacket(part, json_values=True), tag, shards
            )
            for index, part in parts.items()
        ]
        results = await _outcomes(calls)
        report = BatchReport()
        failure: BaseException | None = None
        for index, result in zip(parts, results, strict=True):
            if isinstance(result, BaseException):
                failure = failure or result
                await self._after_failure(index, result)
            else:
                add_report(report, result)
        if failure is not None:
            raise failure
        return report

    async def _after_failure(self, index: int, error: BaseException) -> None:
        """A shard refused or failed its part: take the new shard map, or wait until a shard
        that is down answers again before the batch fails (so an outage alone never pushes an
        innocent entry towards ``max_deliveries``)."""
        if isinstance(error, ShardMapChangedError):
            self._close()
        elif isinstance(error, self._gone):
            await self._shards[index].back()

    async def _apply_controls(self, source_id: str, controls: Sequence[ControlEvent]) -> None:
        """The control plane applies ``controls``; if it is down, wait for it to answer again
        before raising."""
        try:
            await self._control.apply_controls(source_id, controls)
        except self._gone:
            await self._control.back()
            raise

    async def _take_shard_map(self) -> None:
        shards = await self._control.shard_count()
        self._close()
        self._shards = [self._connect(index) for index in range(shards)]

    def _close(self) -> None:
        for shard in self._shards:
            shard.close()
        self._shards = []

    async def pause(self) -> None:
        """Stop dispatching: the batches in hand finish, later ones wait for :meth:`resume`."""
        self._open.clear()
        await self._idle.wait()

    def resume(self) -> None:
        """Dispatch again, with the shard map of now (taken at the next batch)."""
        self._close()
        self._open.set()

    def close(self) -> None:
        self._close()


def add_report(total: BatchReport, part: BatchReport) -> None:
    """Add ``part``'s counts and rejections to ``total``."""
    total.changes += part.changes
    total.applied += part.applied
    total.duplicates += part.duplicates
    total.controls += part.controls
    total.routed += part.routed
    total.rejected.extend(part.rejected)


async def _outcomes(calls: Sequence[Awaitable[BatchReport]]) -> list[Any]:
    """Each call's report or exception, the calls run concurrently (one is just awaited:
    most batches go to one shard, and a task per batch is a cost of its own)."""
    if len(calls) == 1:
        try:
            return [await calls[0]]
        except Exception as exc:
            return [exc]
    return await asyncio.gather(*calls, return_exceptions=True)
