"""Store shards ``drasi/shard-<k>`` (k >= 1): the Ray shell of a
:class:`~drasi_ray.shards.service.ShardService` (shard 0 runs inside the coordinator actor).

The shell adapts Ray to the service: it makes the service's peers Ray handles
(:mod:`drasi_ray.actors.handles`: the query hosts over direct lines, the change-log actor, the
coordinator a restarted shard asks), serves :class:`~drasi_ray.shards.calls.ShardCalls` on a
direct line (:mod:`drasi_ray.actors.line`) and answers every call once the shard's records are
loaded. What a shard does, and its contracts, are the service's
(:mod:`drasi_ray.shards.service`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import ray

from drasi_ray.actors.handles import GONE, ChangeLogActor, CoordinatorHandle, host_line
from drasi_ray.actors.line import LineAddress, LineServer
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc, was_restarted
from drasi_ray.model.changes import DecodedEntry, Element
from drasi_ray.model.registrations import QueryRegistration, TableCopy
from drasi_ray.model.shards import BatchTag
from drasi_ray.shards.calls import ShardCalls
from drasi_ray.shards.core import ApplyProbe
from drasi_ray.shards.reports import BatchReport, ShardReport
from drasi_ray.shards.service import HostConnection, MovedRecords, ShardService
from drasi_ray.shards.state import StateStore


@dataclass(frozen=True, slots=True)
class ShardSettings:
    """What a store shard is given when it starts (it creates its clients itself)."""

    namespace: str
    app_id: str
    index: int
    shards: int
    state_url: str | None
    probe: ApplyProbe | None = None
    analytics_actor: str | None = None
    direct_calls: bool = True
    credentials: tuple[str, ...] = ()
    """The app's Redis URLs with their passwords: stored registrations hold none."""


def shard_service(
    settings: ShardSettings,
    state: StateStore | None = None,
    connect: Callable[[str], HostConnection] | None = None,
) -> ShardService:
    """The service of store shard ``settings.index``, its peers Ray handles (create it in the
    actor's event loop). ``state``: the durable state to use (None: its own, if
    ``settings`` has a state URL); ``connect``: how it reaches a query host (None: a direct
    line to the host's actor)."""
    change_log = None
    if settings.analytics_actor is not None:
        handle = ray.get_actor(settings.analytics_actor, namespace=settings.namespace)
        change_log = ChangeLogActor(handle)
    state_url = settings.state_url
    if state is None and state_url is not None:
        state = StateStore.from_url(state_url, settings.app_id)
    return ShardService(
        settings.index,
        settings.shards,
        connect or host_line(settings.namespace),
        state=state,
        probe=settings.probe,
        change_log=change_log,
        gone=GONE,
        restarted=was_restarted(),
    )


class LoadedShard:
    """A shard's :class:`~drasi_ray.shards.calls.ShardCalls` once its records are loaded
    (what its line serves, and its Ray method calls)."""

    def __init__(self, service: ShardService, loaded: Awaitable[None]) -> None:
        self._service = service
        self._loaded = loaded

    async def apply_batch(
        self,
        source_id: str,
        entries: Sequence[DecodedEntry],
        tag: BatchTag | None,
        shards: int,
    ) -> BatchReport:
        await self._loaded
        return await self._service.apply_batch(source_id, entries, tag, shards)


@ray.remote
class ShardActor:
    """Store shard ``k`` (1 .. K-1) of an app: a thin Ray shell around :class:`ShardService`."""

    def __init__(self, settings: ShardSettings, niceness: int | None = PIPELINE_NICENESS) -> None:
        tune_for_latency(niceness)
        tune_gc()
        self._service = shard_service(settings)
        control = CoordinatorHandle(settings.namespace, f"shard {settings.index}")
        self._loaded = asyncio.get_event_loop().create_task(self._service.recover(control))
        self._shard = LoadedShard(self._service, self._loaded)
        self._line_server = LineServer[ShardCalls](
            self._shard, ShardCalls, enabled=settings.direct_calls
        )
        self._service.line_calls = lambda: self._line_server.served

    async def line_address(self) -> LineAddress | None:
        """Where consumers reach :meth:`apply_batch` directly (None: lines disabled)."""
        return await self._line_server.address()

    async def ping(self) -> bool:
        await self._loaded
        return True

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def apply_batch(
        self,
        source_id: str,
        entries: Sequence[DecodedEntry],
        tag: BatchTag | None = None,
        shards: int = 1,
    ) -> BatchReport:
        return await self._shard.apply_batch(source_id, entries, tag, shards)

    async def attach(
        self, registration: QueryRegistration, round_: int, incarnation: str, table: TableCopy
    ) -> int:
        await self._loaded
        return await self._service.attach(registration, round_, incarnation, table)

    async def detach(self, query_id: str, table: TableCopy) -> None:
        await self._loaded
        await self._service.detach(query_id, table)

    async def set_table(self, table: TableCopy) -> None:
        await self._loaded
        await self._service.set_table(table)

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        await self._loaded
        return await self._service.forget_tombstones(source_id, bound)

    async def drop_source(self, source_id: str) -> int:
        await self._loaded
        return await self._service.drop_source(source_id)

    async def flush_deliveries(self) -> bool:
        await self._loaded
        return await self._service.flush_deliveries()

    async def flush_analytics(self) -> int:
        await self._loaded
        return await self._service.flush_analytics()

    async def stats(self) -> ShardReport:
        await self._loaded
        return await self._service.stats()

    async def elements(self, source_id: str) -> list[Element]:
        await self._loaded
        return await self._service.elements(source_id)

    async def export_moving(self, shards: int) -> list[MovedRecords]:
        await self._loaded
        return await self._service.export_moving(shards)

    async def import_records(self, records: MovedRecords) -> int:
        await self._loaded
        return await self._service.import_records(records)

    async def fence(self) -> None:
        await self._loaded
        await self._service.fence()

    async def finish_rescale(self, shards: int) -> None:
        await self._service.finish_rescale(shards)

    def pid(self) -> int:
        """The actor's process id (chaos tests SIGKILL it)."""
        return os.getpid()
