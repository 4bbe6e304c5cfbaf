"""Query actors: one per continuous query, named ``drasi/query/<id>``.

A query actor runs a :class:`~drasi_ray.query.runner.QueryRunner` (the engine, result
numbering, subscriber buffers): it applies the deltas the coordinator routes to it (strictly in
the coordinator's delivery order), numbers the resulting results and buffers them for
subscribers. It returns from
:meth:`QueryActor.deliver` only once the results are buffered, which is what lets consumers ack
after delivery.

Resume contract: a restarted query actor re-registers with the coordinator, which bootstraps it
from the element store (the coordinator's store is the source of truth for the graph).

A query that calls Drasi's stateful functions keeps their state (future queue, kept values,
memos) durable beside the store (``drasi:<app>:functions:<query_id>``), written before the
results it changed are published. A restarted actor loads it before its bootstrap, so it
rebuilds the rows it had published and its pending re-evaluations fire once, when due. A timer
task runs them on the actor's clock (:mod:`drasi_ray.model.clock`: the wall clock, or a manual
clock its app moves); :meth:`QueryActor.settle` runs whatever is due now, for
``wait_until_idle``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import ray

from drasi_ray.actors.line import LineAddress, LineServer
from drasi_ray.actors.metrics import QueryMetrics
from drasi_ray.actors.names import COORDINATOR
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc, was_restarted
from drasi_ray.actors.wire import ResultBatch
from drasi_ray.coordinator.state import REDIS_TRANSIENT, SequenceKeeper, StateStore
from drasi_ray.model.backoff import Backoff, outlasting
from drasi_ray.model.changes import Element, ElementDelta
from drasi_ray.model.clock import ActorClock, ClockSetting
from drasi_ray.model.config import DispatchMode, QueryConfig
from drasi_ray.model.query_specs import MiddlewareSpec
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.results import ControlSignal
from drasi_ray.query.runner import InOrder, QueryReport, QueryRunner, grouping_keys
from drasi_ray.query.stateful import digest
from drasi_ray.query.subscribers import SubscriberBuffer
from drasi_ray.reactions.chain import ChainPublisher, is_bootstrap_done
from drasi_ray.reactions.factory import ReactionSet

logger = logging.getLogger("drasi_ray.query")

BOOTSTRAP_RESULTS = 4
"""Results a bootstrap emits at most: three control signals and one catch-up result."""
_SAVE_RETRY_CAP_S = 2.0


def query_digest(config: QueryConfig) -> str:
    """What identifies the query a persisted function state belongs to: its text and
    parameters (call sites are numbered from the text)."""
    return digest((config.query, tuple(sorted((k, repr(v)) for k, v in config.parameters.items()))))


@ray.remote
class QueryActor:
    """Ray wrapper of :class:`QueryRunner`.

    With durable state (``state_url``) result numbers are leased from Redis
    (:class:`~drasi_ray.coordinator.state.SequenceKeeper`): a restarted actor numbers above
    everything its previous life emitted, so sequences stay strictly increasing across restarts, and
    a delivery writes to Redis only when the lease runs out.
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
        clock: ClockSetting | None = None,
        chain_url: str | None = None,
    ) -> None:
        """``chain_url``: other queries read this one's results (query chaining): its rows
        are published on its chain stream in that Redis (:mod:`drasi_ray.reactions.chain`)."""
        tune_for_latency(niceness)
        tune_gc()
        self._state = None if state_url is None else StateStore.from_url(state_url, app_id)
        saver = None if self._state is None else self._save_state
        self._runner = QueryRunner(config, save_state=saver)
        self._digest = query_digest(config)
        self._chain: ChainPublisher | None = None
        if chain_url is not None:
            self._chain = ChainPublisher(config.id, app_id, chain_url)
            self._chain.start()
            self._runner.observers.append(self._feed_chain)
        self._reactions = ReactionSet(config.id, grouping_keys(self._runner.engine))
        self._metrics = QueryMetrics(config.id)
        self._runner.observers.append(self._reactions.offer)
        self._runner.batch_observers.append(self._metrics.observe)
        self._order = InOrder()
        self._turn = asyncio.Lock()  # the engine: one delivery or due re-evaluation at a time
        self._clock = ActorClock(clock or ClockSetting())
        self._bootstrapped = asyncio.Event()
        self._subscriber_ids = itertools.count(1)
        self._sequences = None if self._state is None else SequenceKeeper(self._state, config.id)
        loop = asyncio.get_event_loop()
        self._loaded = loop.create_task(self._load())
        if self._runner.engine.stateful:
            self._timer = loop.create_task(self._run_timer())
        if was_restarted():
            self._rejoin = loop.create_task(self._reregister(namespace, name))
        self._line_server = LineServer(self, ("deliver", "take"), enabled=direct_calls)

    def _feed_chain(self, item: Any) -> None:
        """Results to the chain publisher; at a finished bootstrap, the rows it must match
        (read now, in order with the results, not when the publisher gets to them)."""
        assert self._chain is not None
        if is_bootstrap_done(item):
            self._chain.bootstrapped(self._runner.engine.results())
        else:
            self._chain.offer(item)

    async def flush_chain(self, timeout_s: float) -> bool:
        """Wait until the chain stream holds every result so far (True without chaining)."""
        return True if self._chain is None else await self._chain.flush(timeout_s)

    async def line_address(self) -> LineAddress | None:
        """Where the coordinator reaches :meth:`deliver` and subscribers :meth:`take` directly
        (None: lines disabled)."""
        return await self._line_server.address()

    async def _load(self) -> None:
        """Start the reactions; number results above what the state or a reaction holds;
        restore the function state and the manual clock's time (after a restart)."""
        for spec in self._runner.config.reactions:
            self._reactions.add(spec)
        sequence = await self._reactions.last_sequence()
        if self._sequences is not None:
            sequence = max(sequence, await self._sequences.start())
        self._runner.sequence = sequence
        state = self._state
        if state is None or not self._runner.engine.stateful:
            return
        query_id = self._runner.config.id
        fields = await outlasting(
            lambda: state.load_function_state(query_id, self._digest),
            REDIS_TRANSIENT,
            f"query {query_id}: load function state",
            logger,
        )
        self._runner.restore_state(fields)
        if self._clock.manual:
            millis = await outlasting(
                state.load_manual_clock, REDIS_TRANSIENT, "load the manual clock", logger
            )
            if millis is not None:
                self._clock.move(millis)

    async def _save_state(self, changes: dict[str, bytes | None]) -> None:
        """Persist changed function state; waits out a Redis outage (the results it guards
        are held back meanwhile, which backpressure turns into slower consumers)."""
        state, query_id = self._state, self._runner.config.id
        assert state is not None
        await outlasting(
            lambda: state.save_function_state(query_id, changes, self._digest),
            REDIS_TRANSIENT,
            f"query {query_id}: save function state",
            logger,
            cap_s=_SAVE_RETRY_CAP_S,
        )

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
            self._runner.config.middleware,
            self._runner.config.pipelines,
            engine.history_limits,
        )

    def middleware_setup(self) -> tuple[tuple[MiddlewareSpec, ...], dict[str, tuple[str, ...]]]:
        """The query's middleware and source pipelines (a restarted coordinator asks)."""
        config = self._runner.config
        return config.middleware, config.pipelines

    async def bootstrap(
        self,
        epoch: int,
        delivery: int,
        elements: Sequence[Element],
        history: Mapping[str, bytes] | None = None,
    ) -> None:
        """Delivery 0 of a coordinator link: (re)load the graph from the coordinator's store,
        and the element history it keeps for this query if it keeps one.

        A new link (coordinator restarted, or this actor re-registered) has a newer epoch and
        numbers its deliveries from 0 again.
        """
        await self._loaded
        await self._order.run(
            epoch,
            delivery,
            lambda: self._exclusive(
                BOOTSTRAP_RESULTS, lambda: self._runner.bootstrap(elements, history)
            ),
        )
        self._bootstrapped.set()
        self._clock.wake.set()

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def deliver(self, epoch: int, delivery: int, deltas: Sequence[ElementDelta]) -> int:
        await self._loaded
        result: int | None = await self._order.run(
            epoch,
            delivery,
            lambda: self._exclusive(len(deltas), lambda: self._runner.apply(deltas)),
        )
        if self._runner.engine.stateful:
            self._clock.wake.set()  # the change may have scheduled something sooner
        return result or 0

    async def _exclusive(self, results: int, work: Callable[[], Awaitable[Any]]) -> Any:
        """:meth:`_numbered` with the engine to itself (no due re-evaluation meanwhile)."""
        async with self._turn:
            return await self._numbered(results, work)

    # -- due re-evaluations ---------------------------------------------------------------

    async def _fire(self, now_ms: int) -> int:
        """Run the re-evaluations due at ``now_ms``; persist, then publish their results."""
        async with self._turn:
            due = self._runner.take_due(now_ms)
            await self._runner.save_state()
            if due:
                await self._numbered(len(due), lambda: self._runner.publish_due(due))
        return len(due)

    async def _run_timer(self) -> None:
        """Fire due re-evaluations when the clock reaches them, for the actor's lifetime."""
        await self._loaded
        backoff = Backoff()
        while True:
            try:
                now, due = self._clock.now_ms(), self._runner.next_due_ms()
                if due is not None and due <= now:
                    await self._fire(now)
                else:
                    await self._clock.wait(due)
                backoff.reset()
            except Exception:  # the timer must outlive any one failure
                logger.exception("query %s: due re-evaluations failed", self._runner.config.id)
                await backoff.wait()

    async def settle(self) -> int:
        """Once the query is bootstrapped, run what is due on its clock now; the number of
        results that gave (``wait_until_idle`` calls this after the deliveries)."""
        await self._loaded
        await self._bootstrapped.wait()
        return await self._fire(self._clock.now_ms())

    async def advance_clock(self, now_ms: int) -> int:
        """Move a manual clock to ``now_ms`` and :meth:`settle`."""
        self._clock.move(now_ms)
        return await self.settle()

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
        if self._chain is not None:
            flushed = await self._chain.flush(timeout_s) and flushed
            await self._chain.close()
        return flushed

    def info(self) -> QueryReport:
        reactions = [report.as_dict() for report in self._reactions.status()]
        return self._runner.report(self._line_server.served, reactions)
