"""One continuous query inside a query host (:mod:`drasi_ray.host.core`), without Ray.

A :class:`HostedQuery` holds everything that is one query's own: its
:class:`~drasi_ray.host.runner.QueryRunner` (engine, result numbering, subscriber buffers),
its reactions and metrics (handed in: Ray's in the app), its result-sequence lease, its clock
and timer, its chain publisher, and its :class:`~drasi_ray.host.inbox.QueryInbox` (bootstrap
rounds over the store shards).
Its host hands it work in order (bootstrap parts, and the deltas of each delivery unit); it
applies them one at a time in a task of its own, so a query whose subscriber is slow (a full
``channel`` buffer) holds back only itself, and a query that fails to apply a delivery records
the error and goes on, without touching the other queries of its host.

A query that calls Drasi's stateful functions keeps their state (future queue, kept values,
memos) durable beside the store (``drasi:<app>:functions:<query_id>``), written before the
results it changed are published. Its timer task runs the due re-evaluations on its clock
(:mod:`drasi_ray.model.clock`: the wall clock, or a manual clock its app moves);
:meth:`HostedQuery.settle` runs whatever is due now, for ``wait_until_idle``. A query that
other queries read (query chaining) publishes its rows on its chain stream
(:mod:`drasi_ray.reactions.chain`).

Resume contract: when its host restarts, the query is created again (its function state and
the manual clock's time reloaded) and its host asks the coordinator for a new bootstrap round;
its result sequence continues above a lease kept in Redis (``drasi:<app>:seq-lease:<id>``),
and a platform reaction numbers above the last sequence in its stream too, so sequences
strictly increase. A re-bootstrap in the same process (a store shard or the coordinator
restarted) emits the difference from what the query had reported as one catch-up result. A
query whose host restarted does not know what it reported: it rebuilds its rows from the
store, taking in without a diff the changes applied while it was down (and those whose results
were lost with its previous incarnation); its ``bootstrapStarted``/``bootstrapCompleted``
signals tell a reader to read its results again, as Drasi's do. Either way it re-publishes on
its chain stream what a crash kept from being written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from drasi_ray.host.footprint import deep_size
from drasi_ray.host.inbox import Item, QueryInbox, Snapshot
from drasi_ray.host.pipelines import SourcePipelines, source_view
from drasi_ray.host.reports import QueryReport
from drasi_ray.host.runner import QueryRunner, grouping_keys
from drasi_ray.host.subscribers import SubscriberBuffer
from drasi_ray.model.backoff import Backoff, outlasting
from drasi_ray.model.changes import ElementDelta, PipedChange
from drasi_ray.model.clock import ActorClock, ClockSetting
from drasi_ray.model.config import DispatchMode, QueryConfig
from drasi_ray.model.eager import start_eagerly
from drasi_ray.model.errors import SubscriptionLostError
from drasi_ray.model.identity import reads_several
from drasi_ray.model.query_specs import QueryLanguage
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.results import ControlSignal, Delivered
from drasi_ray.model.shards import BootstrapPart
from drasi_ray.query.stateful import digest
from drasi_ray.reactions.chain import ChainPublisher, is_bootstrap_done
from drasi_ray.reactions.factory import ReactionSet
from drasi_ray.shards.state import REDIS_TRANSIENT, SequenceKeeper, StateStore
from drasi_ray.streams.records import Rejection

logger = logging.getLogger("drasi_ray.query")

BOOTSTRAP_RESULTS = 4
"""Results a bootstrap emits at most: three control signals and one catch-up result."""
_SAVE_RETRY_CAP_S = 2.0

Work = BootstrapPart | Mapping[int, Sequence[Item]]
"""What a host hands a query: one shard's bootstrap part, or one delivery unit's deltas (and
piped changes) by shard (each shard's in its order)."""


def query_digest(config: QueryConfig) -> str:
    """What identifies the query a persisted function state belongs to: its text and
    parameters (call sites are numbered from the text), and its language if not Cypher (so a
    Cypher query's digest is what it was before GQL existed)."""
    parameters = tuple(sorted((k, repr(v)) for k, v in config.parameters.items()))
    if config.query_language is QueryLanguage.CYPHER:
        return digest((config.query, parameters))
    return digest((config.query, parameters, config.query_language.value))


BatchObserver = Callable[[list[Delivered]], None]
"""Sees each batch of a query's results (its metrics)."""


@dataclasses.dataclass(frozen=True, slots=True)
class QuerySetup:
    """What a host gives each query besides its settings: ``metrics(query_id)`` makes the
    observer that records the query's metrics (None: none recorded)."""

    host: str
    app_id: str
    state: StateStore | None
    clock: ClockSetting
    chain_url: str | None = None
    metrics: Callable[[str], BatchObserver] | None = None


class HostedQuery:
    """One query of a query host (module docstring). Create it in the host's event loop."""

    def __init__(self, config: QueryConfig, setup: QuerySetup) -> None:
        self.config = config
        self.host = setup.host
        self._state = setup.state
        saver = None if self._state is None else self._save_state
        self.runner = QueryRunner(config, save_state=saver)
        self._digest = query_digest(config)
        self._chain: ChainPublisher | None = None
        if setup.chain_url is not None:
            self._chain = ChainPublisher(config.id, setup.app_id, setup.chain_url)
            self._chain.start()
            self.runner.watch_rows(self._chain.rows_changed)
            self.runner.observers.append(self._feed_chain)
        self._reactions = ReactionSet(config.id, grouping_keys(self.runner.engine))
        self.runner.observers.append(self._reactions.offer)
        if setup.metrics is not None:
            self.runner.batch_observers.append(setup.metrics(config.id))
        self.inbox = QueryInbox()
        self._sequences = None if self._state is None else SequenceKeeper(self._state, config.id)
        self._turn = asyncio.Lock()  # the engine: one delivery or due re-evaluation at a time
        self._clock = ActorClock(setup.clock)
        self._bootstrapped = asyncio.Event()
        self.errors = 0
        self.failure: BaseException | None = None
        """The last delivery's failure, until someone takes it (the in-process app raises it)."""
        self.last_error: str | None = None
        self._pipes = SourcePipelines()  # the sources it sees through pipelines
        self._queue: asyncio.Queue[tuple[Work, asyncio.Future[list[Rejection]]]] = asyncio.Queue()
        self._busy = False
        self._running: asyncio.Future[list[Rejection]] | None = None  # see submit
        loop = asyncio.get_event_loop()
        self.loaded = loop.create_task(self._load())
        self._worker = loop.create_task(self._work())
        self._timer = loop.create_task(self._run_timer()) if self.runner.engine.stateful else None

    async def _load(self) -> None:
        """Start the reactions; number results above what the state or a reaction holds;
        restore the function state and the manual clock's time (after a restart)."""
        for spec in self.config.reactions:
            self._reactions.add(spec)
        sequence = await self._reactions.last_sequence()
        if self._sequences is not None:
            sequence = max(sequence, await self._sequences.start())
        self.runner.sequence = sequence
        state = self._state
        if state is None or not self.runner.engine.stateful:
            return
        query_id = self.config.id
        fields = await outlasting(
            lambda: state.load_function_state(query_id, self._digest),
            REDIS_TRANSIENT,
            f"query {query_id}: load function state",
            logger,
        )
        self.runner.restore_state(fields)
        if self._clock.manual:
            millis = await outlasting(
                state.load_manual_clock, REDIS_TRANSIENT, "load the manual clock", logger
            )
            if millis is not None:
                self._clock.move(millis)

    async def _save_state(self, changes: dict[str, bytes | None]) -> None:
        """Persist changed function state; waits out a Redis outage (the results it guards
        are held back meanwhile, which backpressure turns into slower consumers)."""
        state, query_id = self._state, self.config.id
        assert state is not None
        await outlasting(
            lambda: state.save_function_state(query_id, changes, self._digest),
            REDIS_TRANSIENT,
            f"query {query_id}: save function state",
            logger,
            cap_s=_SAVE_RETRY_CAP_S,
        )

    def _feed_chain(self, item: Any) -> None:
        """At a finished bootstrap, the rows the chain publisher must match (read now, in
        order with the row changes, not when the publisher gets to them)."""
        assert self._chain is not None
        if is_bootstrap_done(item):
            self._chain.bootstrapped(self.runner.engine.results_by_id(), self._clock.now_ms())

    async def flush_chain(self, timeout_s: float) -> bool:
        """Wait until the chain stream holds every result so far (True without chaining)."""
        return True if self._chain is None else await self._chain.flush(timeout_s)

    # -- work, in order -----------------------------------------------------------------

    def submit(self, work: Work) -> asyncio.Future[list[Rejection]]:
        """Apply ``work`` after what came before; the future is done once it is applied (or
        failed, recorded), with the entries whose changes the query's pipelines failed on.

        A query with nothing queued or being applied applies it at once, in the caller's
        event-loop step (:func:`~drasi_ray.model.eager.start_eagerly`: the usual delivery
        needs no task and no step of its own); if that has to wait (a full subscriber buffer,
        a Redis write), it goes on in a task, and what is submitted meanwhile waits behind it.
        """
        if self.loaded.done() and not self._busy and self._queue.empty():
            running = start_eagerly(self._apply_one(work))
            if not running.done():
                self._running = running
            return running
        done: asyncio.Future[list[Rejection]] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((work, done))
        return done

    @property
    def settled(self) -> bool:
        """Bootstrapped from its latest round, and nothing queued or being applied."""
        inbox = self.inbox
        return inbox.bootstrapped and not inbox.loading and not self._busy and self._queue.empty()

    async def _work(self) -> None:
        await self.loaded
        while True:
            work, done = await self._queue.get()
            running, self._running = self._running, None
            if running is not None:  # a submit applied at once that had to wait: it is first
                await asyncio.wait((running,))
            rejected: list[Rejection] = []
            try:
                rejected = await self._apply_one(work)
            finally:
                if not done.done():
                    done.set_result(rejected)

    async def _apply_one(self, work: Work) -> list[Rejection]:
        """Apply one submitted work; a failure is the query's (recorded and logged), not its
        host's, and rejects nothing."""
        self._busy = True
        try:
            return await self._apply(work)
        except Exception as exc:  # this query's failure; the host and its peers go on
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            logger.exception("query %s: a delivery failed", self.config.id)
            self.failure = exc.with_traceback(None)  # logged; its frames need not live on
            return []
        finally:
            self._busy = False

    async def _apply(self, work: Work) -> list[Rejection]:
        if isinstance(work, BootstrapPart):
            snapshot = self.inbox.part(work)
            if snapshot is not None:
                await self._bootstrap(snapshot)
            return []
        return await self._apply_items(self.inbox.deltas(work))

    async def _apply_items(self, items: Sequence[Item]) -> list[Rejection]:
        """Apply deltas, and piped changes through their pipeline, in order."""
        deltas, rejected = self._piped(items)
        if deltas:
            await self._exclusive(len(deltas), lambda: self.runner.apply(deltas))
            if self._timer is not None:
                self._clock.wake.set()  # the change may have scheduled something sooner
        return rejected

    def _piped(self, items: Sequence[Item]) -> tuple[list[ElementDelta], list[Rejection]]:
        """The deltas of ``items``: piped changes run through the query's pipelines (the
        entries whose changes failed there are returned to be dead-lettered)."""
        deltas: list[ElementDelta] = []
        rejected: list[Rejection] = []
        for item in items:
            if not isinstance(item, PipedChange):
                deltas.append(item)
                continue
            derived = self._pipes.apply(item.source_id, item.change)
            deltas.extend(derived.deltas.get(self.config.id, ()))
            if derived.failures:
                rejected.append(Rejection(item.entry_id, "; ".join(derived.failures)))
        return deltas, rejected

    async def _bootstrap(self, snapshot: Snapshot) -> None:
        """Load the round's graph (and history; the sources it pipes rebuilt through their
        pipelines), then what was held while it loaded."""
        elements = list(snapshot.elements)
        if snapshot.piped:
            views = {source: source_view(items) for source, items in snapshot.piped.items()}
            self._pipes = SourcePipelines()
            config = self.config
            several = reads_several(config.sources)
            self._pipes.subscribe(config.id, config.middleware, config.pipelines, views, several)
            for source_id in views:
                elements += self._pipes.elements(config.id, source_id) or ()
        await self._exclusive(
            BOOTSTRAP_RESULTS, lambda: self.runner.bootstrap(elements, snapshot.history)
        )
        held = self.inbox.take_held()
        if held:
            await self._apply_items(held)
        self._bootstrapped.set()
        self._clock.wake.set()

    async def _exclusive(self, results: int, work: Callable[[], Awaitable[Any]]) -> Any:
        """:meth:`_numbered` with the engine to itself (no due re-evaluation meanwhile)."""
        async with self._turn:
            return await self._numbered(results, work)

    async def _numbered(self, results: int, work: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``work``, which emits at most ``results`` results, with their numbers leased."""
        if self._sequences is None:
            return await work()
        await self._sequences.reserve(self.runner.sequence, results)
        outcome = await work()
        self._sequences.note(self.runner.sequence)
        return outcome

    # -- due re-evaluations ---------------------------------------------------------------

    async def _fire(self, now_ms: int) -> int:
        """Run the re-evaluations due at ``now_ms``; persist, then publish their results."""
        async with self._turn:
            due = self.runner.take_due(now_ms)
            await self.runner.save_state()
            if due:
                await self._numbered(len(due), lambda: self.runner.publish_due(due))
        return len(due)

    async def _run_timer(self) -> None:
        """Fire due re-evaluations when the clock reaches them, for the query's lifetime."""
        await self.loaded
        backoff = Backoff()
        while True:
            try:
                now, due = self._clock.now_ms(), self.runner.next_due_ms()
                if due is not None and due <= now:
                    await self._fire(now)
                else:
                    await self._clock.wait(due)
                backoff.reset()
            except Exception:  # the timer must outlive any one failure
                logger.exception("query %s: due re-evaluations failed", self.config.id)
                await backoff.wait()

    async def settle(self) -> int:
        """Once the query is bootstrapped, run what is due on its clock now; the number of
        results that gave (``wait_until_idle`` calls this after the deliveries)."""
        await self.loaded
        await self._bootstrapped.wait()
        return await self._fire(self._clock.now_ms())

    async def advance_clock(self, now_ms: int) -> int:
        """Move a manual clock to ``now_ms`` and :meth:`settle`."""
        self._clock.move(now_ms)
        return await self.settle()

    # -- subscribers, reactions, results ------------------------------------------------

    def subscribe(self, subscriber_id: str, capacity: int, mode: DispatchMode) -> None:
        """Open a subscriber's buffer (already open: nothing happens)."""
        if subscriber_id not in self.runner.subscribers:
            self.runner.subscribers[subscriber_id] = SubscriberBuffer(capacity, mode)

    async def unsubscribe(self, subscriber_id: str) -> None:
        buffer = self.runner.subscribers.pop(subscriber_id, None)
        if buffer is not None:
            await buffer.close()

    async def take(
        self, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> list[Delivered]:
        buffer = self.runner.subscribers.get(subscriber_id)
        if buffer is None:
            raise SubscriptionLostError(
                f"subscription {subscriber_id} to query {self.config.id!r} is lost (its host "
                "restarted and nothing kept the subscription): read app.results() and "
                "subscribe again"
            )
        return await buffer.take(max_items, timeout_s)

    async def results(self, timeout_s: float) -> list[dict[str, Any]] | None:
        """The current rows, once the query is bootstrapped (a restarted host's query is
        rebuilding them); None if it is not within ``timeout_s``."""
        await self.loaded
        try:
            await asyncio.wait_for(self._bootstrapped.wait(), timeout_s)
        except TimeoutError:
            return None
        return self.runner.engine.results()

    async def snapshot(self) -> tuple[list[dict[str, Any]], int]:
        """The result rows and the sequence of the last result they include, taken together
        (no delivery or re-evaluation is half applied: they run under the same turn)."""
        async with self._turn:
            return self.runner.engine.results(), self.runner.sequence

    def add_reaction(self, spec: AnyReaction) -> None:
        """Start one more reaction; it receives the results from now on."""
        self._reactions.add(spec)

    async def remove_reaction(self, name: str, timeout_s: float) -> int:
        """Stop the reactions named ``name``, once they wrote what they hold; how many."""
        await self.loaded
        return await self._reactions.remove(name, timeout_s)

    async def flush_reactions(self, timeout_s: float) -> bool:
        """Wait until every reaction wrote what it was handed; False on timeout."""
        await self.loaded
        return await self._reactions.flush(timeout_s)

    async def stop(self, timeout_s: float) -> bool:
        """Signal ``stopped``, then let the reactions (and the chain publisher) write what
        they hold (up to ``timeout_s``) and close them. True if everything was written.

        Work still queued is not applied: its deliveries complete (no store shard waits on
        them)."""
        await self.loaded
        await self._numbered(1, lambda: self.runner.signal(ControlSignal.STOPPED))
        if self._sequences is not None:
            await self._sequences.flush()
        flushed = await self._reactions.flush(timeout_s)
        await self._reactions.close(0.0)
        if self._chain is not None:
            flushed = await self._chain.flush(timeout_s) and flushed
            await self._chain.close()
        for task in (self._worker, self._timer, self._running):
            if task is not None:
                task.cancel()
        while not self._queue.empty():
            _work, done = self._queue.get_nowait()
            if not done.done():
                done.set_result([])
        return flushed

    def report(self, line_calls: int) -> QueryReport:
        """The live status (with the memory its state holds: a walk of its objects)."""
        reactions = [report.as_dict() for report in self._reactions.status()]
        buffers = [buffer.items() for buffer in self.runner.subscribers.values()]
        return dataclasses.replace(
            self.runner.report(line_calls, reactions),
            host=self.host,
            errors=self.errors,
            last_error=self.last_error,
            memory_bytes=deep_size([self.runner.engine, buffers]),
            superseded=self.inbox.superseded,
        )
