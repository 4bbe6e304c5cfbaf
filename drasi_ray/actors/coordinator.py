"""The coordinator actor: applies changes to the element store and routes them to queries.

Contract with the consumers: :meth:`CoordinatorActor.apply_batch` returns once every change of
the batch is applied to the store and (with durable state) written to Redis; the consumer acks
the batch after that, so an acked entry is always in the durable store. The batch's deltas are
*sent* to the affected query actors in the same step, and delivered while the consumer goes on
with its next batch: deliveries overlap the next batches' work instead of sitting in every
batch's round trip. At most :data:`DELIVERIES_IN_FLIGHT` batches per query are undelivered at a
time (``apply_batch`` waits for room: backpressure reaches the consumers), and
:meth:`CoordinatorActor.flush_deliveries` is the barrier ``wait_until_idle`` and ``stop`` use.

Nothing is lost when a delivery fails: a query actor that died re-registers when Ray restarts
it and is re-bootstrapped from the store, emitting the difference as a catch-up result; a
restarted coordinator re-links and re-bootstraps every query from the store it reloads (a
retried batch would find its changes applied already and route nothing, so failing the
consumer's batch for a failed delivery would not help).

Ordering: the store is updated synchronously inside one event-loop step per batch, so batches
from several consumers are applied atomically; deliveries to each query carry a per-query
sequence number, and the query actor applies them in that order (Ray does not promise the
execution order of calls to an async actor). A consumer has one batch at the coordinator at a
time, so one consumer's batches are applied in stream order.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray

from drasi_ray.actors import names
from drasi_ray.actors.line import Line, LineAddress, LineServer
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc, was_restarted
from drasi_ray.actors.wire import DeltaPacket, EntryPacket
from drasi_ray.coordinator.core import ApplyProbe, BatchReport, Coordinator, CoordinatorReport
from drasi_ray.coordinator.records import change_record
from drasi_ray.coordinator.routing import LabelFilter, SubscriptionTable
from drasi_ray.coordinator.state import REDIS_TRANSIENT, StateStore
from drasi_ray.coordinator.store import ElementStore
from drasi_ray.model.backoff import outlasting
from drasi_ray.model.changes import DecodedEntry, Element
from drasi_ray.model.history import ElementHistory, HistoryLimits
from drasi_ray.model.query_specs import MiddlewareSpec

logger = logging.getLogger("drasi_ray.coordinator")

DELIVERIES_IN_FLIGHT = 4
"""Batches sent to one query actor and not yet delivered, at most (then ``apply_batch`` waits)."""
RELINK_POLL_S = 0.05
"""How often :meth:`CoordinatorActor.flush_deliveries` looks for a dead query's new link."""


@dataclass(slots=True)
class _QueryLink:
    """The coordinator's side of one query actor: its line and delivery sequence."""

    line: Line
    sources: tuple[str, ...]
    next_delivery: int = 0
    in_flight: set[asyncio.Future[Any]] = field(default_factory=set)
    # False until the link's bootstrap is applied, and again once a delivery found the actor
    # dead or restarting: the query's results are incomplete until it re-registers (a new link).
    ready: bool = False
    # Links replace each other on re-registration and coordinator restarts: a newer link has a
    # larger epoch, so the query actor can refuse the deliveries of the link it replaced.
    epoch: int = field(default_factory=time.time_ns)

    def take_delivery(self) -> int:
        number = self.next_delivery
        self.next_delivery += 1
        return number

    def track(self, query_id: str, call: Any) -> None:
        """Follow one delivery call until it is done; a failure is logged, not raised."""
        future = asyncio.ensure_future(call)
        self.in_flight.add(future)
        future.add_done_callback(lambda done: self._settled(query_id, done))

    def _settled(self, query_id: str, future: asyncio.Future[Any]) -> None:
        self.in_flight.discard(future)
        if not future.cancelled() and future.exception() is not None:
            if isinstance(future.exception(), ray.exceptions.RayActorError):
                self.ready = False
            logger.warning(
                "coordinator: a delivery to query %s failed (%s); the query catches up from "
                "the store when it re-registers",
                query_id,
                future.exception(),
            )

    async def room(self, limit: int) -> None:
        """Wait until at most ``limit`` deliveries are in flight."""
        while len(self.in_flight) > limit:
            await asyncio.wait(set(self.in_flight), return_when=asyncio.FIRST_COMPLETED)

    async def settled(self) -> None:
        """Wait until every delivery sent so far is done (delivered or failed)."""
        while self.in_flight:
            await asyncio.wait(set(self.in_flight))


@ray.remote
class CoordinatorActor:
    """Ray wrapper of :class:`Coordinator`; one per app, named ``drasi/coordinator``.

    Resume contract: with durable state (``state_url``), the element stores and the
    subscription table are loaded from Redis when the actor starts; after a restart it also
    re-links every registered query actor and re-bootstraps it from the loaded store, so the
    queries catch up on whatever the crash interrupted. Every batch's store writes reach Redis
    before ``apply_batch`` returns (so before the consumer acks).
    """

    def __init__(
        self,
        namespace: str,
        app_id: str,
        state_url: str | None,
        probe: ApplyProbe | None = None,
        analytics_actor: str | None = None,
        direct_calls: bool = True,
        niceness: int | None = PIPELINE_NICENESS,
    ) -> None:
        tune_for_latency(niceness)
        tune_gc()
        self._namespace = namespace
        self._core = Coordinator(probe, durable=state_url is not None)
        self._analytics: Any = None
        if analytics_actor is not None:  # the change log: applied changes are forwarded to it
            self._analytics = ray.get_actor(analytics_actor, namespace=namespace)
            self._core.applied = []
        self._queries: dict[str, _QueryLink] = {}
        self._state = None if state_url is None else StateStore.from_url(state_url, app_id)
        self._persist_lock = asyncio.Lock()
        self._restarted = was_restarted()
        self._loaded = asyncio.get_event_loop().create_task(self._recover())
        self._line_server = LineServer(self, ("apply_batch",), enabled=direct_calls)

    async def line_address(self) -> LineAddress | None:
        """Where consumers reach :meth:`apply_batch` directly (None: lines disabled)."""
        return await self._line_server.address()

    async def _recover(self) -> None:
        """Load the durable state (waiting out a Redis outage); after a restart, re-link."""
        if self._state is None:
            return
        records, stores, histories = await outlasting(
            self._load_state, REDIS_TRANSIENT, "coordinator: loading the durable state", logger
        )
        if records is not None:
            self._core.table = SubscriptionTable.from_records(records)
        self._core.stores.update(stores)
        self._core.histories.update(histories)
        gc.freeze()  # the loaded stores are long-lived: keep them out of later GC passes
        if self._restarted:
            logger.warning("coordinator restarted: re-linking %s", self._core.table.query_ids)
            for query_id in self._core.table.query_ids:
                await self._relink(query_id)

    async def _load_state(
        self,
    ) -> tuple[dict[str, Any] | None, dict[str, ElementStore], dict[str, ElementHistory]]:
        assert self._state is not None
        records = await self._state.load_table()
        stores = {
            source_id: await self._state.load_store(source_id)
            for source_id in await self._state.stored_sources()
        }
        return records, stores, await self._state.load_histories()

    async def _relink(self, query_id: str) -> None:
        try:
            handle = ray.get_actor(names.query_actor(query_id), namespace=self._namespace)
        except ValueError:
            logger.warning("query actor of %s is gone; it re-registers when it starts", query_id)
            return
        sources = self._core.table.sources_of(query_id)
        try:
            middleware, pipelines = await handle.middleware_setup.remote()
            self._core.middleware.subscribe(query_id, middleware, pipelines, self._core.stores)
        except ray.exceptions.RayActorError as exc:
            logger.warning("query actor of %s is gone (%s); it re-registers", query_id, exc)
            return
        try:
            # A query actor restarting at the same time (both killed) is unavailable for a
            # moment: wait it out. Were it left unlinked, nothing would deliver to it again
            # unless it re-registers, and a failure here would fail the whole recovery.
            await outlasting(
                lambda: self._bootstrap(query_id, handle, sources),
                (ray.exceptions.ActorUnavailableError,),
                f"coordinator: re-linking query {query_id}",
                logger,
            )
        except ray.exceptions.RayActorError as exc:  # dead: it re-registers if Ray restarts it
            logger.warning(
                "query actor of %s is gone (%s); it re-registers when it starts", query_id, exc
            )

    async def _bootstrap(self, query_id: str, handle: Any, sources: Sequence[str]) -> int:
        replaced = self._queries.get(query_id)
        if replaced is not None:
            replaced.line.close()
        link = self._queries[query_id] = _QueryLink(Line(handle), tuple(sources))
        elements = self._core.snapshot(query_id, sources)
        history = self._core.history_records(query_id, elements)
        await handle.bootstrap.remote(link.epoch, link.take_delivery(), elements, history)
        link.ready = True
        return len(elements)

    async def ping(self) -> bool:
        """True once the actor is up and its durable state is loaded."""
        await self._loaded
        return True

    async def register_query(
        self,
        query_id: str,
        actor_name: str,
        sources: Sequence[str],
        node_labels: Sequence[str] | None,
        relation_labels: Sequence[str] | None,
        middleware: Sequence[MiddlewareSpec] = (),
        pipelines: Mapping[str, Sequence[str]] | None = None,
        history: HistoryLimits | None = None,
    ) -> int:
        """Subscribe a query and bootstrap it from the store; returns the elements loaded.

        ``pipelines`` (source id -> middleware names, declared in ``middleware``) make the
        query see those sources through its middleware
        (:mod:`drasi_ray.coordinator.middleware`). ``history``: the query calls Drasi's past
        functions, keep its element history with these limits. Registration, snapshot and
        the bootstrap delivery are issued in one event-loop step, so the query sees exactly
        the changes applied after its snapshot.
        """
        await self._loaded
        handle = ray.get_actor(actor_name, namespace=self._namespace)
        labels = LabelFilter.of(node_labels, relation_labels)
        self._core.middleware.subscribe(query_id, middleware, pipelines or {}, self._core.stores)
        self._core.table.register_query(query_id, sources, labels)
        self._core.keep_history(query_id, history)
        loaded = await self._bootstrap(query_id, handle, sources)
        await self._save_table()
        await self._save_history(query_id, history)
        return loaded

    async def unregister_query(self, query_id: str) -> None:
        await self._loaded
        self._core.table.unregister_query(query_id)
        self._core.middleware.unsubscribe(query_id)
        self._core.keep_history(query_id, None)
        link = self._queries.pop(query_id, None)
        if link is not None:
            link.line.close()
        await self._save_table()
        await self._save_history(query_id, None)

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def apply_batch(self, source_id: str, entries: Sequence[DecodedEntry]) -> BatchReport:
        """Apply one consumer batch; return once it is durable and its deltas are sent.

        ``entries`` is a consumer's :class:`~drasi_ray.actors.wire.EntryPacket` (any other
        sequence of decoded entries is applied as holding arbitrary Python values).

        The deltas go to the queries even when the state write fails: a retry of the batch
        finds its changes already applied (duplicates, routed nowhere), so holding the deltas
        back would lose them for the queries. The failure is raised afterwards, so the consumer
        does not ack, and the retry persists the still-dirty records.
        """
        await self._loaded
        links, report = self._apply(source_id, entries)
        persisted = await self._try_persist(source_id, report)
        for link in links:
            await link.room(DELIVERIES_IN_FLIGHT)
        if persisted is not None:
            raise persisted
        return report

    async def flush_deliveries(self) -> None:
        """Barrier: return once every delivery sent so far is done, and every query whose actor
        a delivery found dead or restarting has re-registered and been bootstrapped again (its
        results caught up). Waits as long as such an actor stays away: callers bound it.

        A restarted coordinator answers only once its recovery re-linked (and so
        re-bootstrapped) every registered query: before that its links are not all there yet.
        """
        await self._loaded
        while True:
            for link in list(self._queries.values()):
                await link.settled()
            if all(link.ready for link in self._queries.values()):
                return
            await asyncio.sleep(RELINK_POLL_S)

    def _apply(
        self, source_id: str, entries: Sequence[DecodedEntry]
    ) -> tuple[list[_QueryLink], BatchReport]:
        """Update the store and send the deliveries, in ONE event-loop step (no await).

        Deliveries are numbered in the step that updates the store, so each query sees deltas
        in store order; they run while the state is written to Redis and after.
        """
        json_values = isinstance(entries, EntryPacket) and entries.json_values
        routed, report = self._core.apply_entries(source_id, entries, json_values)
        self._forward_applied(source_id)
        links = []
        for query_id, deltas in routed.items():
            link = self._queries.get(query_id)
            if link is not None:
                link.track(
                    query_id,
                    link.line.call(
                        "deliver",
                        link.epoch,
                        link.take_delivery(),
                        DeltaPacket(deltas, self._core.json_values),
                    ),
                )
                links.append(link)
        return links, report

    def _forward_applied(self, source_id: str) -> None:
        """One fire-and-forget call per batch to the change log (never waits on analytics).

        Submitted in the same event-loop step as the apply, so the log receives the batches
        in the order they were applied (the analytics actor runs one caller's calls in order).
        """
        applied = self._core.applied
        if not applied:
            return
        records = [change_record(entry_id, change, delta) for entry_id, change, delta in applied]
        applied.clear()
        self._analytics.append.remote(source_id, records)

    async def flush_analytics(self) -> int:
        """Barrier: seal every change applied so far into the change log; the rows it holds."""
        if self._analytics is None:
            return 0
        rows: int = await self._analytics.flush.remote()
        return rows

    async def _try_persist(self, source_id: str, report: BatchReport) -> Exception | None:
        try:
            await self._persist(source_id, report)
        except Exception as exc:
            logger.warning("coordinator: could not persist batch state: %s", exc)
            return exc
        return None

    async def _persist(self, source_id: str, report: BatchReport) -> None:
        if self._state is None:
            return
        counters = {
            "changes": report.changes,
            "applied": report.applied,
            "duplicates": report.duplicates,
        }
        # Serialised, and snapshots are taken inside the lock: Redis only ever receives
        # states newer than the ones it holds, whatever the interleaving of batches.
        async with self._persist_lock:
            store = self._core.store(source_id)
            await self._state.save_elements(source_id, store, store.take_dirty(), counters)
            await self._save_histories()
            if report.controls:
                await self._state.save_table(self._core.table.to_records())

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        """Forget the tombstones of ``source_id`` older than stream position ``bound``, in
        memory and in Redis; returns how many.

        The caller (a consumer's sweep) guarantees no change older than ``bound`` can come
        again. Done under the persist lock, so every record it keeps or drops was persisted
        first: a failed delete leaves tombstones in Redis, never an older live record.
        """
        await self._loaded
        store = self._core.stores.get(source_id)
        if store is None:
            return 0
        async with self._persist_lock:
            forgotten = store.forget_tombstones(bound)
            self._core.stats.tombstones_forgotten += len(forgotten)
            if forgotten and self._state is not None:
                await self._state.forget_elements(source_id, forgotten)
        if forgotten:
            logger.info("coordinator: forgot %d tombstones of %s", len(forgotten), source_id)
        return len(forgotten)

    async def _save_histories(self) -> None:
        """Write what changed in the kept histories (under the persist lock). A failed write
        is taken back, to be written with the next batch (the failure fails this one)."""
        assert self._state is not None
        for query_id, history in self._core.histories.items():
            writes = history.take_writes()
            try:
                await self._state.save_history(query_id, writes)
            except BaseException:
                history.retry_writes(writes)
                raise

    async def _save_history(self, query_id: str, limits: HistoryLimits | None) -> None:
        """Persist whether (and how) ``query_id`` keeps a history, and what it holds now."""
        if self._state is None:
            return
        async with self._persist_lock:
            await self._state.save_history_limits(query_id, limits)
            if limits is not None:
                await self._save_histories()

    async def _save_table(self) -> None:
        if self._state is not None:
            async with self._persist_lock:
                await self._state.save_table(self._core.table.to_records())

    async def stats(self) -> CoordinatorReport:
        await self._loaded
        durable = await self._durable_counters()
        return self._core.report(self._restarted, self._line_server.served, durable)

    async def _durable_counters(self) -> dict[str, dict[str, int]]:
        """Counters kept in Redis: they add up across restarts (None without durable state)."""
        if self._state is None:
            return {}
        return {
            source_id: await self._state.load_counters(source_id) for source_id in self._core.stores
        }

    def pid(self) -> int:
        return os.getpid()

    async def elements(self, source_id: str) -> list[Element]:
        """The current graph of ``source_id`` (tests and analytics compare against it)."""
        await self._loaded
        return list(self._core.store(source_id).elements())
