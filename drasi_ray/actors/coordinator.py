"""The coordinator actor ``drasi/coordinator``: the Ray shell of the app's
:class:`~drasi_ray.coordinator.control.ControlPlane` and of store shard 0.

The shell adapts Ray to the two cores: the control plane reaches the other shards and the query
hosts through Ray handles (:class:`~drasi_ray.actors.handles.RayCluster`), shard 0's service is
made as every shard's is (:func:`~drasi_ray.actors.shard.shard_service`), and shard 0 serves
:class:`~drasi_ray.shards.calls.ShardCalls` on a direct line. An app with one shard (the
default) runs exactly one store process. What the control plane does, and its resume contract,
are in :mod:`drasi_ray.coordinator.control`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import ray

from drasi_ray.actors.handles import GONE, RayCluster
from drasi_ray.actors.line import LineAddress, LineServer
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc
from drasi_ray.actors.shard import LoadedShard, ShardSettings, shard_service
from drasi_ray.coordinator.control import ControlPlane
from drasi_ray.model.changes import ControlEvent, DecodedEntry, Element
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec
from drasi_ray.model.shards import BatchTag
from drasi_ray.shards.calls import ShardCalls
from drasi_ray.shards.reports import BatchReport, ShardReport
from drasi_ray.shards.state import StateStore


class CoordinatorShell:
    """The control plane and store shard 0 of an app (module docstring): the methods its
    actor serves. The fused actor (:mod:`drasi_ray.actors.fused`) is one too, with more
    parts in its process."""

    _control: ControlPlane
    _shard: LoadedShard
    _line_server: LineServer[Any]

    def __init__(self, settings: ShardSettings, niceness: int | None = PIPELINE_NICENESS) -> None:
        tune_for_latency(niceness)
        tune_gc()
        self._service = shard_service(settings)
        url = settings.state_url
        state = None if url is None else StateStore.from_url(url, settings.app_id)
        self._control = ControlPlane(
            self._service, RayCluster(settings.namespace), state, GONE, settings.credentials
        )
        self._shard = LoadedShard(self._service, self._control.loaded)
        self._line_server = LineServer[ShardCalls](
            self._shard, ShardCalls, enabled=settings.direct_calls
        )
        self._service.line_calls = lambda: self._line_server.served

    async def ping(self) -> bool:
        """True once the actor is up and its durable state is loaded."""
        await self._control.loaded
        return True

    def pid(self) -> int:
        return os.getpid()

    # -- shard 0 ------------------------------------------------------------------------

    async def line_address(self) -> LineAddress | None:
        """Where consumers reach :meth:`apply_batch` directly (None: lines disabled)."""
        return await self._line_server.address()

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def apply_batch(
        self,
        source_id: str,
        entries: Sequence[DecodedEntry],
        tag: BatchTag | None = None,
        shards: int = 1,
    ) -> BatchReport:
        """Shard 0's part of a consumer batch (:meth:`ShardService.apply_batch`)."""
        return await self._shard.apply_batch(source_id, entries, tag, shards)

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        return await self._control.forget_tombstones(source_id, bound)

    async def drop_source(self, source_id: str) -> int:
        return await self._control.drop_source(source_id)

    # -- the control plane --------------------------------------------------------------

    async def shard_count(self) -> int:
        return await self._control.shard_count()

    async def register_query(self, registration: QueryRegistration) -> int:
        return await self._control.register_query(registration)

    async def register_queries(self, registrations: Sequence[QueryRegistration]) -> list[int]:
        return await self._control.register_queries(registrations)

    async def unregister_query(self, query_id: str) -> None:
        await self._control.unregister_query(query_id)

    async def set_reactions(self, query_id: str, reactions: tuple[AnyReaction, ...]) -> None:
        await self._control.set_reactions(query_id, reactions)

    async def apply_controls(self, source_id: str, controls: Sequence[ControlEvent]) -> int:
        return await self._control.apply_controls(source_id, controls)

    async def queries_of(self, host: str) -> list[QueryRegistration]:
        return await self._control.queries_of(host)

    async def registrations(self) -> list[QueryRegistration]:
        return await self._control.registrations()

    async def subscribe(self, spec: SubscriberSpec) -> None:
        await self._control.subscribe(spec)

    async def unsubscribe(self, query_id: str, subscriber_id: str) -> None:
        await self._control.unsubscribe(query_id, subscriber_id)

    async def subscribers_of(self, host: str) -> list[SubscriberSpec]:
        return await self._control.subscribers_of(host)

    async def host_restarted(self, host: str) -> None:
        await self._control.host_restarted(host)

    async def shard_restarted(self, index: int) -> None:
        await self._control.shard_restarted(index)

    # -- barriers and status ------------------------------------------------------------

    async def flush_deliveries(self) -> None:
        await self._control.flush_deliveries()

    async def flush_analytics(self) -> int:
        return await self._control.flush_analytics()

    async def shard_stats(self) -> list[ShardReport]:
        return await self._control.shard_stats()

    async def stats(self) -> ShardReport:
        return await self._control.stats()

    async def elements(self, source_id: str) -> list[Element]:
        return await self._control.elements(source_id)

    async def elements_by_shard(self, source_id: str) -> dict[int, list[Element]]:
        return await self._control.elements_by_shard(source_id)

    async def rescale(self, shards: int) -> int:
        return await self._control.rescale(shards)


CoordinatorActor = ray.remote(CoordinatorShell)
"""The coordinator's Ray actor class."""
