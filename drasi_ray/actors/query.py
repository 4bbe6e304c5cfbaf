"""Query actors: one per continuous query, named ``drasi/query/<id>``.

A query actor owns a :class:`~drasi_ray.query.engine.ContinuousQuery`, applies the deltas the
coordinator routes to it (strictly in the coordinator's delivery order), numbers the resulting
:class:`QueryResult` objects and buffers them for subscribers. It returns from
:meth:`QueryActor.deliver` only once the results are buffered, which is what lets consumers ack
after delivery.

Resume contract: a restarted query actor re-registers with the coordinator, which bootstraps it
from the element store (the coordinator's store is the source of truth for the graph).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import ray

from drasi_ray.actors.runtime import was_restarted
from drasi_ray.changes import Element, ElementDelta
from drasi_ray.config import DispatchMode, QueryConfig
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.results import ControlResult, ControlSignal, QueryResult, now_ms
from drasi_ray.subscription import Delivered, SubscriberBuffer

logger = logging.getLogger("drasi_ray.query")


class QueryRunner:
    """A continuous query plus its result numbering and subscriber buffers (no Ray)."""

    def __init__(self, config: QueryConfig) -> None:
        self.config = config
        self.engine = ContinuousQuery(config.id, config.query, config.parameters)
        self.sequence = 0
        self.diffs_emitted = 0
        self.subscribers: dict[str, SubscriberBuffer] = {}

    async def publish(self, item: Delivered) -> None:
        for buffer in list(self.subscribers.values()):
            await buffer.put(item)

    async def signal(self, signal: ControlSignal) -> None:
        await self.publish(ControlResult(self.config.id, self.sequence, now_ms(), signal))

    async def bootstrap(self, elements: Sequence[Element]) -> None:
        await self.signal(ControlSignal.BOOTSTRAP_STARTED)
        self.engine.bootstrap(elements)
        await self.signal(ControlSignal.BOOTSTRAP_COMPLETED)
        await self.signal(ControlSignal.RUNNING)

    async def apply(self, deltas: Sequence[ElementDelta]) -> int:
        """Apply deltas in order; one QueryResult per delta that changed the result set."""
        emitted = 0
        for delta, diffs in zip(deltas, self.engine.apply_batch(deltas), strict=False):
            if not diffs:
                continue
            self.sequence += 1
            emitted += len(diffs)
            result = QueryResult(
                self.config.id, self.sequence, now_ms(), delta.source_time_ms, tuple(diffs)
            )
            await self.publish(result)
        self.diffs_emitted += emitted
        return emitted


class _InOrder:
    """Runs numbered calls strictly in number order, whatever order they arrive in."""

    def __init__(self) -> None:
        self.expected = 0
        self._turn = asyncio.Condition()

    def reset(self) -> None:
        self.expected = 0

    async def run(self, number: int, work: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        async with self._turn:
            await self._turn.wait_for(lambda: self.expected >= number)
        if number < self.expected:  # a retried delivery that was already applied
            return None
        try:
            return await work()
        finally:
            async with self._turn:
                self.expected = number + 1
                self._turn.notify_all()


@ray.remote
class QueryActor:
    """Ray wrapper of :class:`QueryRunner`."""

    def __init__(self, config: QueryConfig, namespace: str, name: str) -> None:
        self._runner = QueryRunner(config)
        self._order = _InOrder()
        self._subscriber_ids = itertools.count(1)
        if was_restarted():
            self._rejoin = asyncio.get_event_loop().create_task(self._reregister(namespace, name))

    async def _reregister(self, namespace: str, name: str) -> None:
        """After a restart: ask the coordinator for a fresh bootstrap from its store."""
        from drasi_ray.actors.names import COORDINATOR

        coordinator = ray.get_actor(COORDINATOR, namespace=namespace)
        engine = self._runner.engine
        await coordinator.register_query.remote(
            self._runner.config.id,
            name,
            self._runner.config.sources,
            None if engine.node_labels is None else sorted(engine.node_labels),
            None if engine.relation_labels is None else sorted(engine.relation_labels),
        )

    async def bootstrap(self, delivery: int, elements: Sequence[Element]) -> None:
        if delivery == 0:
            self._order.reset()
        await self._order.run(delivery, lambda: self._runner.bootstrap(elements))

    async def deliver(self, delivery: int, deltas: Sequence[ElementDelta]) -> int:
        result: int | None = await self._order.run(delivery, lambda: self._runner.apply(deltas))
        return result or 0

    async def subscribe(self, capacity: int, mode: DispatchMode) -> str:
        subscriber_id = f"sub-{next(self._subscriber_ids)}"
        self._runner.subscribers[subscriber_id] = SubscriberBuffer(capacity, mode)
        return subscriber_id

    async def unsubscribe(self, subscriber_id: str) -> None:
        buffer = self._runner.subscribers.pop(subscriber_id, None)
        if buffer is not None:
            await buffer.close()

    async def take(
        self, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> list[Delivered]:
        buffer = self._runner.subscribers.get(subscriber_id)
        if buffer is None:
            return []
        return await buffer.take(max_items, timeout_s)

    def results(self) -> list[dict[str, Any]]:
        return self._runner.engine.results()

    def info(self) -> dict[str, Any]:
        runner = self._runner
        return {
            "query_id": runner.config.id,
            "sequence": runner.sequence,
            "diffs": runner.diffs_emitted,
            "rows": len(runner.engine.results()),
            "columns": list(runner.engine.column_names),
            "subscribers": {
                sid: {"buffered": len(buf), "dropped": buf.dropped}
                for sid, buf in runner.subscribers.items()
            },
        }
