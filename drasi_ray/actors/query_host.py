"""Query hosts: M actors run the app's N queries, each query isolated inside its host.

A query host (``drasi/query-host-<m>``, or ``drasi/query-host/<query_id>`` for a query given a
host of its own) holds :class:`~drasi_ray.actors.query.HostedQuery` objects: each has its own
engine, result sequence, subscribers, reactions, errors and worker task, so queries share a
process (and its ~150 MB of Python, Ray and drasi_ray) but nothing else.

The store shards deliver to a host on direct lines (:mod:`drasi_ray.actors.line`), one call
per shard per batch carrying every delta of the batch its queries need
(:class:`~drasi_ray.actors.wire.HostPacket`). :meth:`QueryHostActor.deliver` returns once
every query concerned applied its share (results buffered for subscribers), which is what the
shards' backpressure and the app's barriers wait on. Deliveries are ordered by the host's
:class:`~drasi_ray.host.merge.DeliveryMerger` (each shard's in its order; the parts of one
batch that touched several shards together, in the batch's order), then handed to each query.

Resume contract: a restarted host (Ray restarts it) has a new *incarnation*; it asks the
coordinator for its queries' registrations and their subscriptions, creates them again (each
subscriber's buffer open, empty, before the query's first result), and asks for a new bootstrap
round for each. A subscriber receives the round's bootstrap signals, then the next results
(numbered above the lease); what its buffer held, and the diffs of changes applied while the
host was down, are gone. Deliveries that were made to its previous incarnation are refused
(:class:`~drasi_ray.model.errors.StaleDeliveryError`): the new rounds' parts include them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psutil
import ray

from drasi_ray.actors import names
from drasi_ray.actors.line import LineAddress, LineServer
from drasi_ray.actors.query import HostedQuery, QuerySetup, Work
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc, was_restarted
from drasi_ray.actors.wire import HostPacket, ResultBatch
from drasi_ray.coordinator.registry import QueryRegistration, SubscriberSpec
from drasi_ray.host.inbox import Item
from drasi_ray.host.merge import Arrival, DeliveryMerger, Offered, Unit
from drasi_ray.host.runner import QueryReport
from drasi_ray.model.backoff import outlasting
from drasi_ray.model.clock import ClockSetting
from drasi_ray.model.errors import (
    StaleDeliveryError,
    SubscriptionLostError,
    UnknownComponentError,
)
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.shards import BootstrapPart
from drasi_ray.shards.state import StateStore
from drasi_ray.streams.records import Rejection

logger = logging.getLogger("drasi_ray.query_host")

_UNAVAILABLE = (ray.exceptions.ActorUnavailableError,)


@dataclass(frozen=True, slots=True)
class HostReport:
    """A query host's own status (``DrasiRay.status()["hosts"][name]``)."""

    name: str
    incarnation: str
    restarted: bool
    queries: list[str]
    rss_bytes: int
    line_calls: int
    splits: int
    """Batches whose parts over several shards were applied separately (see
    :mod:`drasi_ray.host.merge`)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "incarnation": self.incarnation,
            "restarted": self.restarted,
            "queries": self.queries,
            "rss_bytes": self.rss_bytes,
            "line_calls": self.line_calls,
            "splits": self.splits,
        }


@ray.remote
class QueryHostActor:
    """A query host (module docstring)."""

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
        self._name = name
        self._namespace = namespace
        self._app_id = app_id
        self._clock = clock or ClockSetting()
        self._state = None if state_url is None else StateStore.from_url(state_url, app_id)
        self._registrations: dict[str, QueryRegistration] = {}
        self._queries: dict[str, HostedQuery] = {}
        self._orphans: dict[str, list[Work]] = {}
        self._merger = DeliveryMerger()
        self._waiting: dict[tuple[int, int, int], asyncio.Future[list[Rejection]]] = {}
        self._epochs: dict[int, int] = {}
        self._incarnation = uuid.uuid4().hex
        self._restarted = was_restarted()
        self._line_server = LineServer(self, ("deliver", "take"), enabled=direct_calls)
        self._expiring = asyncio.Event()
        loop = asyncio.get_event_loop()
        self._expiry = loop.create_task(self._expire_parts())
        self._rejoin = loop.create_task(self._rejoin_app()) if self._restarted else None

    async def line_address(self) -> LineAddress | None:
        """Where shards reach :meth:`deliver` and subscribers :meth:`take` directly."""
        return await self._line_server.address()

    def incarnation(self) -> str:
        """A token of this life of the host (a restarted host has a new one)."""
        return self._incarnation

    def pid(self) -> int:
        """The host's process id (chaos tests SIGKILL it)."""
        return os.getpid()

    # -- queries ------------------------------------------------------------------------

    async def add_query(
        self, registration: QueryRegistration, subscribers: Sequence[SubscriberSpec] = ()
    ) -> None:
        """Host ``registration``'s query (again: nothing happens), with ``subscribers``'
        buffers open; it receives its bootstrap parts once the coordinator registers it."""
        config = registration.config
        if config.id in self._queries:
            return
        setup = QuerySetup(
            self._name, self._app_id, self._state, self._clock, registration.chain_url
        )
        hosted = self._queries[config.id] = HostedQuery(config, setup)
        self._registrations[config.id] = registration
        for spec in subscribers:
            hosted.subscribe(spec.subscriber_id, spec.capacity, spec.mode)
        for work in self._orphans.pop(config.id, []):
            hosted.submit(work)
        await hosted.loaded

    def registrations(self) -> list[QueryRegistration]:
        """The queries this host runs, as the coordinator registers them (a coordinator that
        restarted without durable state asks)."""
        return list(self._registrations.values())

    async def _rejoin_app(self) -> None:
        """After a restart: host the queries the coordinator says are ours, with their
        subscribers, then ask for a new bootstrap round of each."""
        coordinator = ray.get_actor(names.COORDINATOR, namespace=self._namespace)
        registrations: list[QueryRegistration] = await outlasting(
            lambda: coordinator.queries_of.remote(self._name),
            _UNAVAILABLE,
            f"query host {self._name}: its queries",
            logger,
        )
        specs: list[SubscriberSpec] = await outlasting(
            lambda: coordinator.subscribers_of.remote(self._name),
            _UNAVAILABLE,
            f"query host {self._name}: its subscribers",
            logger,
        )
        for registration in registrations:
            mine = [spec for spec in specs if spec.query_id == registration.query_id]
            await self.add_query(registration, mine)
        logger.warning("query host %s restarted: asking for new bootstrap rounds", self._name)
        await outlasting(
            lambda: coordinator.host_restarted.remote(self._name),
            _UNAVAILABLE,
            f"query host {self._name}: rejoining",
            logger,
        )

    def _hosted(self, query_id: str) -> HostedQuery:
        hosted = self._queries.get(query_id)
        if hosted is None:
            raise UnknownComponentError(f"query {query_id!r} is not on host {self._name}")
        return hosted

    # -- deliveries ---------------------------------------------------------------------

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> list[Rejection]:
        """One delivery of a shard's link; returns once every query concerned applied its
        share, with the entries whose changes a query's pipeline failed on. A delivery of a
        link that was replaced raises StaleDeliveryError."""
        key = (shard, epoch, number)
        pending = self._waiting.get(key)
        if pending is not None:  # made again (its line broke): wait for the first
            return await asyncio.shield(pending)
        done: asyncio.Future[list[Rejection]] = asyncio.get_running_loop().create_future()
        self._waiting[key] = done
        tag = payload.tag if isinstance(payload, HostPacket) else None
        status, units = self._merger.offer(Arrival(shard, epoch, number, tag, payload))
        if status is not Offered.ACCEPTED:
            self._waiting.pop(key, None)
            if status is Offered.STALE:
                raise StaleDeliveryError(f"delivery {number} of shard {shard}'s replaced link")
            return []
        self._refuse_replaced(shard)
        self._dispatch(units)
        if self._merger.next_deadline() is not None:
            self._expiring.set()
        return await done

    def _refuse_replaced(self, shard: int) -> None:
        """Fail whoever waits on a delivery of a link epoch the shard has left."""
        epoch = self._merger.epoch(shard)
        if epoch is None or self._epochs.get(shard) == epoch:
            return
        self._epochs[shard] = epoch
        for key in [key for key in self._waiting if key[0] == shard and key[1] < epoch]:
            future = self._waiting.pop(key)
            if not future.done():
                future.set_exception(StaleDeliveryError(f"shard {shard}'s link was replaced"))

    def _dispatch(self, units: Sequence[Unit]) -> None:
        """Hand each unit's work to its queries, in order; a delivery is done once every
        query it concerns applied its share."""
        for unit in units:
            futures = []
            for query_id, work in _shares(unit):
                future = self._submit(query_id, work)
                if future is not None:
                    futures.append(future)
            keys = [(part.link, part.epoch, part.number) for part in unit.parts]
            if not futures:
                self._complete(keys)
                continue
            gathered = asyncio.gather(*futures, return_exceptions=True)
            gathered.add_done_callback(functools.partial(self._completed, keys))

    def _submit(self, query_id: str, work: Work) -> asyncio.Future[list[Rejection]] | None:
        hosted = self._queries.get(query_id)
        if hosted is not None:
            return hosted.submit(work)
        # Not hosted (yet): after a restart, a bootstrap part can come before the query is
        # created again; it is kept, with what follows it, until then. Deltas without a part
        # kept are older than the part to come, which includes them.
        if isinstance(work, BootstrapPart) or query_id in self._orphans:
            self._orphans.setdefault(query_id, []).append(work)
        return None

    def _completed(
        self, keys: Sequence[tuple[int, int, int]], done: asyncio.Future[list[Any]]
    ) -> None:
        rejected = [
            rejection
            for outcome in done.result()
            if isinstance(outcome, list)
            for rejection in outcome
        ]
        self._complete(keys, rejected)

    def _complete(
        self, keys: Sequence[tuple[int, int, int]], rejected: list[Rejection] | None = None
    ) -> None:
        for key in keys:
            future = self._waiting.pop(key, None)
            if future is not None and not future.done():
                future.set_result(rejected or [])

    async def _expire_parts(self) -> None:
        """Let a batch's part go alone once its sibling is overdue (:mod:`drasi_ray.host.merge`)."""
        while True:
            deadline = self._merger.next_deadline()
            if deadline is None:
                self._expiring.clear()
                await self._expiring.wait()
                continue
            await asyncio.sleep(max(deadline - time.monotonic(), 0.0))
            self._dispatch(self._merger.expire())

    async def all_settled(self) -> bool:
        """Nothing waits in the merger, and every query is bootstrapped from its latest round
        with nothing queued (``wait_until_idle``'s barrier)."""
        if self._rejoin is not None and not self._rejoin.done():
            return False
        return self._merger.waiting == 0 and all(q.settled for q in self._queries.values())

    # -- subscribers and results --------------------------------------------------------

    def subscribe(self, spec: SubscriberSpec) -> None:
        """Open ``spec``'s buffer (already open: nothing happens). Called by the coordinator,
        which keeps the spec (:meth:`CoordinatorActor.subscribe`)."""
        self._hosted(spec.query_id).subscribe(spec.subscriber_id, spec.capacity, spec.mode)

    def subscriber_specs(self) -> list[SubscriberSpec]:
        """The subscriptions open here (a restarted coordinator asks)."""
        return [
            SubscriberSpec(query_id, subscriber_id, buffer.capacity, buffer.mode)
            for query_id, hosted in self._queries.items()
            for subscriber_id, buffer in hosted.runner.subscribers.items()
        ]

    async def unsubscribe(self, query_id: str, subscriber_id: str) -> None:
        hosted = self._queries.get(query_id)
        if hosted is not None:
            await hosted.unsubscribe(subscriber_id)

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def take(
        self, query_id: str, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> ResultBatch:
        hosted = self._queries.get(query_id)
        if hosted is None and self._rejoin is not None and not self._rejoin.done():
            # restarted, not yet hosting its queries again: wait for it (the buffers it opens
            # come with them), or answer nothing and be asked again
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._rejoin), timeout_s)
            hosted = self._queries.get(query_id)
            if hosted is None:
                return ResultBatch(())
        if hosted is None:
            raise SubscriptionLostError(
                f"query {query_id!r} is not on host {self._name} any more: subscription "
                f"{subscriber_id} is lost; read app.results() and subscribe again"
            )
        return ResultBatch(await hosted.take(subscriber_id, max_items, timeout_s))

    async def results(self, query_id: str, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """The query's rows once it is bootstrapped (after a restart it rebuilds them first);
        UnknownComponentError if they are not within ``timeout_s`` (the caller asks again)."""
        rows = await self._hosted(query_id).results(timeout_s)
        if rows is None:
            raise UnknownComponentError(f"query {query_id!r} is not bootstrapped yet")
        return rows

    async def snapshot(self, query_id: str) -> tuple[list[dict[str, Any]], int]:
        """The query's rows and the sequence they are at (:meth:`HostedQuery.snapshot`)."""
        return await self._hosted(query_id).snapshot()

    async def settle(self, query_id: str) -> int:
        """Run what is due on the query's clock now (:meth:`HostedQuery.settle`)."""
        return await self._hosted(query_id).settle()

    async def advance_clock(self, query_id: str, now_ms: int) -> int:
        """Move the query's manual clock and run what came due."""
        return await self._hosted(query_id).advance_clock(now_ms)

    async def flush_chain(self, query_id: str, timeout_s: float) -> bool:
        """Wait until the query's chain stream holds every result so far."""
        return await self._hosted(query_id).flush_chain(timeout_s)

    async def add_reaction(self, query_id: str, spec: AnyReaction) -> None:
        hosted = self._hosted(query_id)
        await hosted.loaded
        hosted.add_reaction(spec)

    async def remove_reaction(self, query_id: str, name: str, timeout_s: float) -> int:
        """Stop the query's reactions of the Reaction resource ``name``; how many."""
        return await self._hosted(query_id).remove_reaction(name, timeout_s)

    async def flush_reactions(self, timeout_s: float) -> list[str]:
        """Wait until every query's reactions wrote what they were handed; the queries whose
        reactions are still behind after ``timeout_s``."""
        flushed = await asyncio.gather(
            *(hosted.flush_reactions(timeout_s) for hosted in self._queries.values())
        )
        return [query_id for query_id, ok in zip(self._queries, flushed, strict=True) if not ok]

    async def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop every query (signal ``stopped``, flush and close its reactions)."""
        stopped = await asyncio.gather(*(q.stop(timeout_s) for q in self._queries.values()))
        return all(stopped)

    def info(self) -> dict[str, QueryReport]:
        """Every hosted query's status."""
        served = self._line_server.served
        return {query_id: hosted.report(served) for query_id, hosted in self._queries.items()}

    def host_info(self) -> HostReport:
        return HostReport(
            self._name,
            self._incarnation,
            self._restarted,
            list(self._queries),
            psutil.Process().memory_info().rss,
            self._line_server.served,
            self._merger.splits,
        )


def _shares(unit: Unit) -> list[tuple[str, Work]]:
    """Each query's work in a unit: its bootstrap part, or its deltas by shard."""
    shares: list[tuple[str, Work]] = []
    deltas: dict[str, dict[int, list[Item]]] = {}
    for part in unit.parts:
        payload = part.payload
        if isinstance(payload, BootstrapPart):
            shares.append((payload.query_id, payload))
            continue
        for query_id in payload.queries:
            deltas.setdefault(query_id, {})[part.link] = payload.for_query(query_id)
    shares.extend(deltas.items())
    return shares
