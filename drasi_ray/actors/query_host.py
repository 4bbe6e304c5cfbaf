"""Query hosts: ``drasi/query-host-<m>``, or ``drasi/query-host/<query_id>`` for a query given a
host of its own: the Ray shell of a :class:`~drasi_ray.host.core.QueryHost`.

The shell adapts Ray to the host: it serves :class:`~drasi_ray.shards.calls.HostCalls`
(``deliver`` from the shards, ``take`` from subscribers) on a direct line
(:mod:`drasi_ray.actors.line`), records each query's metrics with Ray's
(:class:`~drasi_ray.actors.metrics.QueryMetrics`), and after a restart (Ray restarts it) asks
the coordinator actor for its queries (:meth:`~drasi_ray.host.core.QueryHost.rejoin`). What a
host does, and its resume contract, are the core's (:mod:`drasi_ray.host.core`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import ray

from drasi_ray.actors.handles import CoordinatorHandle
from drasi_ray.actors.line import LineAddress, LineServer
from drasi_ray.actors.metrics import QueryMetrics
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc, was_restarted
from drasi_ray.host.core import HostReport, QueryHost
from drasi_ray.host.hosted import BatchObserver
from drasi_ray.host.reports import QueryReport
from drasi_ray.model.clock import ClockSetting
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec
from drasi_ray.model.shards import BootstrapPart
from drasi_ray.model.wire import HostPacket, ResultBatch
from drasi_ray.shards.calls import HostCalls
from drasi_ray.shards.state import StateStore
from drasi_ray.streams.records import Rejection


def query_metrics(query_id: str) -> BatchObserver:
    """A query's metrics, recorded through Ray's (created in the host's process)."""
    return QueryMetrics(query_id).observe


class QueryHostShell:
    """A query host (module docstring): the methods its actor serves, each the core's. The
    fused actor (:mod:`drasi_ray.actors.fused`) serves them too, beside the coordinator's."""

    _host: QueryHost
    _line_server: LineServer[Any]

    def __init__(
        self,
        name: str,
        namespace: str,
        app_id: str,
        state_url: str | None,
        direct_calls: bool = True,
        niceness: int | None = PIPELINE_NICENESS,
        clock: ClockSetting | None = None,
    ) -> None:
        """``clock``: how the queries keep time for Drasi's future functions (the wall clock,
        or the app's manual clock)."""
        tune_for_latency(niceness)
        tune_gc()
        state = None if state_url is None else StateStore.from_url(state_url, app_id)
        restarted = was_restarted()
        host = QueryHost(name, app_id, state, clock, metrics=query_metrics, restarted=restarted)
        self._host = host
        self._line_server = LineServer[HostCalls](host, HostCalls, enabled=direct_calls)
        host.line_calls = lambda: self._line_server.served
        if restarted:
            host.rejoin(CoordinatorHandle(namespace, f"query host {name}"))

    async def line_address(self) -> LineAddress | None:
        """Where shards reach :meth:`deliver` and subscribers :meth:`take` directly."""
        return await self._line_server.address()

    async def incarnation(self) -> str:
        return await self._host.incarnation()

    def pid(self) -> int:
        """The host's process id (chaos tests SIGKILL it)."""
        return os.getpid()

    async def add_query(
        self, registration: QueryRegistration, subscribers: Sequence[SubscriberSpec] = ()
    ) -> None:
        await self._host.add_query(registration, subscribers)

    async def registrations(self) -> list[QueryRegistration]:
        return await self._host.registrations()

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> list[Rejection]:
        return await self._host.deliver(shard, epoch, number, payload)

    async def all_settled(self) -> bool:
        return await self._host.all_settled()

    async def subscribe(self, spec: SubscriberSpec) -> None:
        await self._host.subscribe(spec)

    async def subscriber_specs(self) -> list[SubscriberSpec]:
        return await self._host.subscriber_specs()

    async def unsubscribe(self, query_id: str, subscriber_id: str) -> None:
        await self._host.unsubscribe(query_id, subscriber_id)

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def take(
        self, query_id: str, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> ResultBatch:
        return await self._host.take(query_id, subscriber_id, max_items, timeout_s)

    async def results(self, query_id: str, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        return await self._host.results(query_id, timeout_s)

    async def snapshot(self, query_id: str) -> tuple[list[dict[str, Any]], int]:
        return await self._host.snapshot(query_id)

    async def settle(self, query_id: str) -> int:
        return await self._host.settle(query_id)

    async def advance_clock(self, query_id: str, now_ms: int) -> int:
        return await self._host.advance_clock(query_id, now_ms)

    async def flush_chain(self, query_id: str, timeout_s: float) -> bool:
        return await self._host.flush_chain(query_id, timeout_s)

    async def add_reaction(self, query_id: str, spec: AnyReaction) -> None:
        await self._host.add_reaction(query_id, spec)

    async def remove_reaction(self, query_id: str, name: str, timeout_s: float) -> int:
        """Stop the query's reactions of the Reaction resource ``name``; how many."""
        return await self._host.remove_reaction(query_id, name, timeout_s)

    async def flush_reactions(self, timeout_s: float) -> list[str]:
        return await self._host.flush_reactions(timeout_s)

    async def stop(self, timeout_s: float = 10.0) -> bool:
        return await self._host.stop(timeout_s)

    async def remove_query(self, query_id: str, timeout_s: float = 10.0) -> bool:
        return await self._host.remove_query(query_id, timeout_s)

    def info(self) -> dict[str, QueryReport]:
        return self._host.info()

    def host_info(self) -> HostReport:
        return self._host.host_info()


QueryHostActor = ray.remote(QueryHostShell)
"""The query host's Ray actor class."""
