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
import gc
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import orjson
import ray

from drasi_ray.actors.line import LineAddress, LineServer
from drasi_ray.actors.names import COORDINATOR
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc, was_restarted
from drasi_ray.batch import ResultBatch
from drasi_ray.changes import Element, ElementDelta
from drasi_ray.config import DispatchMode, QueryConfig
from drasi_ray.errors import StaleDeliveryError
from drasi_ray.metrics import QueryMetrics
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.reactions.factory import ReactionSet, grouping_keys
from drasi_ray.reactions.specs import AnyReaction
from drasi_ray.results import ControlResult, ControlSignal, QueryResult, make_query_result, now_ms
from drasi_ray.state import SequenceKeeper, StateStore
from drasi_ray.subscription import Delivered, SubscriberBuffer

logger = logging.getLogger("drasi_ray.query")

BOOTSTRAP_RESULTS = 4
"""Results a bootstrap emits at most: three control signals and one catch-up result."""


class QueryRunner:
    """A continuous query plus its result numbering and subscriber buffers (no Ray)."""

    def __init__(self, config: QueryConfig) -> None:
        self.config = config
        self.engine = ContinuousQuery(config.id, config.query, config.parameters)
        self.sequence = 0
        self.diffs_emitted = 0
        self.subscribers: dict[str, SubscriberBuffer] = {}
        self.observers: list[Callable[[Delivered], None]] = []
        self.batch_observers: list[Callable[[list[Delivered]], None]] = []
        self.bootstrapped = False

    async def publish(self, item: Delivered) -> None:
        """Hand ``item`` to the observers (reactions, metrics: never block), then subscribers."""
        await self.publish_many([item])

    async def publish_many(self, items: list[Delivered]) -> None:
        """:meth:`publish` each item, in order, with one buffer operation per subscriber."""
        if not items:
            return
        for observe in self.observers:
            for item in items:
                observe(item)
        for observe_batch in self.batch_observers:
            observe_batch(items)
        for buffer in list(self.subscribers.values()):
            await buffer.put_many(items)

    async def signal(self, signal: ControlSignal) -> None:
        await self.publish(ControlResult(self.config.id, self.sequence, now_ms(), signal))

    async def bootstrap(self, elements: Sequence[Element]) -> None:
        """Load the graph. A re-bootstrap (after a coordinator or own restart) rebuilds the
        engine and emits the difference between the old and new results as one result, so
        subscribers catch up on whatever the crash interrupted."""
        await self.signal(ControlSignal.BOOTSTRAP_STARTED)
        previous = self.engine.results() if self.bootstrapped else []
        if self.bootstrapped:
            config = self.config
            self.engine = ContinuousQuery(config.id, config.query, config.parameters)
        self.engine.bootstrap(elements)
        # The loaded graph lives as long as the query: keep it out of every later GC pass
        # (a full collection over a 1M-element graph stalls the actor for a visible moment).
        gc.freeze()
        if self.bootstrapped:
            await self._emit(catch_up_diffs(previous, self.engine.results()), now_ms())
        self.bootstrapped = True
        await self.signal(ControlSignal.BOOTSTRAP_COMPLETED)
        await self.signal(ControlSignal.RUNNING)

    def _result(self, diffs: list[dict[str, Any]], source_time_ms: int, at_ms: int) -> QueryResult:
        self.sequence += 1
        self.diffs_emitted += len(diffs)
        # One per changed row at full rate: filled through the slots (the frozen dataclass's
        # __init__ was ~7% of the query actor's CPU draining a backlog, bench.scale's profile).
        return make_query_result(self.config.id, self.sequence, at_ms, source_time_ms, tuple(diffs))

    async def _emit(self, diffs: list[dict[str, Any]], source_time_ms: int) -> None:
        if diffs:
            await self.publish(self._result(diffs, source_time_ms, now_ms()))

    async def apply(self, deltas: Sequence[ElementDelta]) -> int:
        """Apply deltas in order; one QueryResult per delta that changed the result set,
        handed to observers and subscribers together once the batch is evaluated."""
        before = self.diffs_emitted
        at_ms = now_ms()
        results: list[Delivered] = [
            self._result(diffs, delta.source_time_ms, at_ms)
            for delta, diffs in zip(deltas, self.engine.apply_batch(deltas), strict=True)
            if diffs
        ]
        await self.publish_many(results)
        for message in self.engine.take_evaluation_errors():
            logger.warning("query %s: row refused: %s", self.config.id, message)
        return self.diffs_emitted - before


def catch_up_diffs(
    previous: list[dict[str, Any]], current: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """DELETE the rows that disappeared and ADD the rows that appeared (as multisets)."""
    remaining = [orjson.dumps(row, option=orjson.OPT_SORT_KEYS) for row in current]
    deleted: list[dict[str, Any]] = []
    for row in previous:
        key = orjson.dumps(row, option=orjson.OPT_SORT_KEYS)
        if key in remaining:
            remaining.remove(key)
        else:
            deleted.append({"type": "DELETE", "data": row})
    added = [{"type": "ADD", "data": orjson.loads(key)} for key in remaining]
    return deleted + added


class _InOrder:
    """Runs each link's numbered calls strictly in number order, whatever order they arrive in.

    A coordinator link is identified by its epoch (increasing) and numbers its calls from 0,
    call 0 being the bootstrap that opens the epoch. A call of a newer epoch waits for that
    epoch's bootstrap; a call of an older epoch fails with :class:`StaleDeliveryError`, so a
    link that a restart replaced can never block or interleave with the new one.
    """

    def __init__(self) -> None:
        self.epoch = -1
        self.expected = 0
        self._turn = asyncio.Condition()

    async def run(
        self, epoch: int, number: int, work: Callable[[], Coroutine[Any, Any, Any]]
    ) -> Any:
        async with self._turn:
            if number == 0 and epoch > self.epoch:
                self.epoch, self.expected = epoch, 0
                self._turn.notify_all()
            await self._turn.wait_for(
                lambda: self.epoch > epoch or (self.epoch == epoch and self.expected >= number)
            )
            if self.epoch != epoch:
                raise StaleDeliveryError(f"delivery {number} of replaced link {epoch}")
            if number < self.expected:  # already applied
                return None
        try:
            return await work()
        finally:
            async with self._turn:
                if self.epoch == epoch:
                    self.expected = number + 1
                self._turn.notify_all()


@ray.remote
class QueryActor:
    """Ray wrapper of :class:`QueryRunner`.

    With durable state (``state_url``) result numbers are leased from Redis
    (:class:`~drasi_ray.state.SequenceKeeper`): a restarted actor numbers above everything its
    previous life emitted, so sequences stay strictly increasing across restarts, and a
    delivery writes to Redis only when the lease runs out.
    """

    def __init__(
        self,
        config: QueryConfig,
        namespace: str,
        name: str,
        app_id: str,
        state_url: str | None,
        direct_calls: bool = True,
        niceness: int | None = PIPELINE_NICENESS,
    ) -> None:
        tune_for_latency(niceness)
        tune_gc()
        self._runner = QueryRunner(config)
        self._reactions = ReactionSet(config.id, grouping_keys(self._runner.engine))
        self._metrics = QueryMetrics(config.id)
        self._runner.observers.append(self._reactions.offer)
        self._runner.batch_observers.append(self._metrics.observe)
        self._order = _InOrder()
        self._subscriber_ids = itertools.count(1)
        self._sequences = (
            None
            if state_url is None
            else SequenceKeeper(StateStore.from_url(state_url, app_id), config.id)
        )
        loop = asyncio.get_event_loop()
        self._loaded = loop.create_task(self._load_sequence())
        if was_restarted():
            self._rejoin = loop.create_task(self._reregister(namespace, name))
        self._line_server = LineServer(self, ("deliver", "take"), enabled=direct_calls)

    async def line_address(self) -> LineAddress | None:
        """Where the coordinator reaches :meth:`deliver` and subscribers :meth:`take` directly
        (None: lines disabled)."""
        return await self._line_server.address()

    async def _load_sequence(self) -> None:
        """Start the reactions; number results above what the state or a reaction holds."""
        for spec in self._runner.config.reactions:
            self._reactions.add(spec)
        sequence = await self._reactions.last_sequence()
        if self._sequences is not None:
            sequence = max(sequence, await self._sequences.start())
        self._runner.sequence = sequence

    async def _numbered(self, results: int, work: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``work``, which emits at most ``results`` results, with their numbers leased."""
        if self._sequences is None:
            return await work()
        await self._sequences.reserve(self._runner.sequence, results)
        outcome = await work()
        self._sequences.note(self._runner.sequence)
        return outcome

    async def _reregister(self, namespace: str, name: str) -> None:
        """After a restart: ask the coordinator for a fresh bootstrap from its store."""
        await self._loaded
        coordinator = ray.get_actor(COORDINATOR, namespace=namespace)
        engine = self._runner.engine
        await coordinator.register_query.remote(
            self._runner.config.id,
            name,
            self._runner.config.sources,
            None if engine.node_labels is None else sorted(engine.node_labels),
            None if engine.relation_labels is None else sorted(engine.relation_labels),
        )

    async def bootstrap(self, epoch: int, delivery: int, elements: Sequence[Element]) -> None:
        """Delivery 0 of a coordinator link: (re)load the graph from the coordinator's store.

        A new link (coordinator restarted, or this actor re-registered) has a newer epoch and
        numbers its deliveries from 0 again.
        """
        await self._loaded
        await self._order.run(
            epoch,
            delivery,
            lambda: self._numbered(BOOTSTRAP_RESULTS, lambda: self._runner.bootstrap(elements)),
        )

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def deliver(self, epoch: int, delivery: int, deltas: Sequence[ElementDelta]) -> int:
        await self._loaded
        result: int | None = await self._order.run(
            epoch, delivery, lambda: self._numbered(len(deltas), lambda: self._runner.apply(deltas))
        )
        return result or 0

    async def subscribe(self, capacity: int, mode: DispatchMode) -> str:
        subscriber_id = f"sub-{next(self._subscriber_ids)}"
        self._runner.subscribers[subscriber_id] = SubscriberBuffer(capacity, mode)
        return subscriber_id

    async def unsubscribe(self, subscriber_id: str) -> None:
        buffer = self._runner.subscribers.pop(subscriber_id, None)
        if buffer is not None:
            await buffer.close()

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def take(
        self, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> ResultBatch:
        buffer = self._runner.subscribers.get(subscriber_id)
        if buffer is None:
            return ResultBatch(())
        return ResultBatch(await buffer.take(max_items, timeout_s))

    def pid(self) -> int:
        """The actor's process id (chaos tests SIGKILL it)."""
        return os.getpid()

    def results(self) -> list[dict[str, Any]]:
        return self._runner.engine.results()

    async def add_reaction(self, spec: AnyReaction) -> None:
        """Start one more reaction; it receives the results from now on."""
        await self._loaded
        self._reactions.add(spec)

    async def flush_reactions(self, timeout_s: float) -> bool:
        """Wait until every reaction wrote what it was handed; False on timeout."""
        await self._loaded
        return await self._reactions.flush(timeout_s)

    async def stop(self, timeout_s: float = 10.0) -> bool:
        """Signal ``stopped``, then let the reactions write what they hold (up to
        ``timeout_s``) and close them. True if everything was written."""
        await self._loaded
        await self._numbered(1, lambda: self._runner.signal(ControlSignal.STOPPED))
        if self._sequences is not None:
            await self._sequences.flush()
        flushed = await self._reactions.flush(timeout_s)
        await self._reactions.close(0.0)
        return flushed

    def info(self) -> dict[str, Any]:
        runner = self._runner
        return {
            "query_id": runner.config.id,
            "line_calls": self._line_server.served,
            "sequence": runner.sequence,
            "diffs": runner.diffs_emitted,
            "rows": len(runner.engine.results()),
            "columns": list(runner.engine.column_names),
            "reactions": self._reactions.status(),
            "subscribers": {
                sid: {"buffered": len(buf), "dropped": buf.dropped}
                for sid, buf in runner.subscribers.items()
            },
        }
