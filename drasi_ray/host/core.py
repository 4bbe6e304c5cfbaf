"""A query host without Ray: M hosts run the app's N queries, each query isolated inside its host.

A :class:`QueryHost` holds :class:`~drasi_ray.host.hosted.HostedQuery` objects: each has its own
engine, result sequence, subscribers, reactions, errors and worker task, so queries share a
process (and its ~150 MB of Python, Ray and drasi_ray) but nothing else. Its Ray shell is
:mod:`drasi_ray.actors.query_host`; :mod:`drasi_ray.testing.inprocess` runs it without Ray.

The store shards deliver to a host one call per shard per batch (it serves
:class:`~drasi_ray.shards.calls.HostCalls`), carrying every delta of the batch its queries need
(:class:`~drasi_ray.model.wire.HostPacket`). :meth:`QueryHost.deliver` returns once every query
concerned applied its share (results buffered for subscribers), which is what the shards'
backpressure and the app's barriers wait on. Deliveries are ordered by the host's
:class:`~drasi_ray.host.merge.DeliveryMerger` (each shard's in its order; the parts of one batch
that touched several shards together, in the batch's order), then handed to each query.

Resume contract: a restarted host has a new *incarnation*; it asks the control plane for its
queries' registrations and their subscriptions, creates them again (each subscriber's buffer
open, empty, before the query's first result), and asks for a new bootstrap round for each
(:meth:`QueryHost.rejoin`). A subscriber receives the round's bootstrap signals, then the next
results (numbered above the lease); what its buffer held, and the diffs of changes applied while
the host was down, are gone. Deliveries that were made to its previous incarnation are refused
(:class:`~drasi_ray.model.errors.StaleDeliveryError`): the new rounds' parts include them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psutil

from drasi_ray.host.hosted import BatchObserver, HostedQuery, QuerySetup, Work
from drasi_ray.host.inbox import Item
from drasi_ray.host.merge import Arrival, DeliveryMerger, Offered, Unit
from drasi_ray.host.reports import QueryReport
from drasi_ray.model.clock import ClockSetting
from drasi_ray.model.errors import (
    StaleDeliveryError,
    SubscriptionLostError,
    UnknownComponentError,
)
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec
from drasi_ray.model.shards import BootstrapPart
from drasi_ray.model.wire import HostPacket, ResultBatch
from drasi_ray.shards.state import StateStore
from drasi_ray.streams.records import Rejection

logger = logging.getLogger("drasi_ray.query_host")

DeliveryKey = tuple[int, int, int]
"""A delivery: (shard, link epoch, number)."""


@dataclass(frozen=True, slots=True)
class HostReport:
    """A query host's own status (``DrasiRay.status().hosts[name]``)."""

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


class HostRejoin(Protocol):
    """What a restarted host asks the control plane (:meth:`QueryHost.rejoin`)."""

    async def queries_of(self, host: str) -> list[QueryRegistration]: ...

    async def subscribers_of(self, host: str) -> list[SubscriberSpec]: ...

    async def host_restarted(self, host: str) -> None: ...


class QueryHost:
    """A query host (module docstring). Create it in an event loop."""

    def __init__(
        self,
        name: str,
        app_id: str,
        state: StateStore | None = None,
        clock: ClockSetting | None = None,
        *,
        metrics: Callable[[str], BatchObserver] | None = None,
        restarted: bool = False,
    ) -> None:
        """``state``: the durable state (None: in memory); ``clock``: how the queries keep time
        for Drasi's future functions; ``metrics(query_id)``: a query's metrics observer;
        ``restarted``: this host is a restart (:meth:`rejoin` hosts its queries again)."""
        self.name = name
        self._app_id = app_id
        self._clock = clock or ClockSetting()
        self._state = state
        self._metrics = metrics
        self._registrations: dict[str, QueryRegistration] = {}
        self.queries: dict[str, HostedQuery] = {}
        self._orphans: dict[str, list[Work]] = {}
        self._merger = DeliveryMerger()
        self._waiting: dict[DeliveryKey, asyncio.Future[list[Rejection]]] = {}
        self._epochs: dict[int, int] = {}
        self._incarnation = uuid.uuid4().hex
        self.restarted = restarted
        self._rejoin: asyncio.Task[None] | None = None
        self.line_calls: Callable[[], int] = lambda: 0
        """The calls the shell answered on lines (its status reports them)."""
        self._expiring = asyncio.Event()
        self._expiry = asyncio.get_event_loop().create_task(self._expire_parts())

    async def incarnation(self) -> str:
        """A token of this life of the host (a restarted host has a new one)."""
        return self._incarnation

    # -- queries ------------------------------------------------------------------------

    async def add_query(
        self, registration: QueryRegistration, subscribers: Sequence[SubscriberSpec] = ()
    ) -> None:
        """Host ``registration``'s query (again: nothing happens), with ``subscribers``'
        buffers open; it receives its bootstrap parts once the control plane registers it."""
        config = registration.config
        if config.id in self.queries:
            return
        setup = QuerySetup(
            self.name, self._app_id, self._state, self._clock, registration.chain_url, self._metrics
        )
        hosted = self.queries[config.id] = HostedQuery(config, setup)
        self._registrations[config.id] = registration
        for spec in subscribers:
            hosted.subscribe(spec.subscriber_id, spec.capacity, spec.mode)
        for work in self._orphans.pop(config.id, []):
            hosted.submit(work)
        await hosted.loaded

    async def remove_query(self, query_id: str, timeout_s: float = 10.0) -> bool:
        """Stop ``query_id`` (:meth:`HostedQuery.stop`), close its subscribers' buffers and
        drop it with its durable state (result sequence, function state). The control plane
        unregistered it first, so no shard routes to it any more. True if its reactions
        wrote everything (also when it was not here)."""
        self._registrations.pop(query_id, None)
        self._orphans.pop(query_id, None)
        hosted = self.queries.pop(query_id, None)
        if hosted is None:
            return True
        flushed = await hosted.stop(timeout_s)
        for buffer in hosted.runner.subscribers.values():
            await buffer.close()
        if self._state is not None:
            await self._state.forget_query(query_id)
        return flushed

    async def registrations(self) -> list[QueryRegistration]:
        """The queries this host runs, as the control plane registered them (a control plane
        that restarted without durable state asks)."""
        return list(self._registrations.values())

    def rejoin(self, control: HostRejoin) -> None:
        """After a restart: host the queries the control plane says are ours, with their
        subscribers, then ask for a new bootstrap round of each (in the background)."""
        self._rejoin = asyncio.get_event_loop().create_task(self._rejoin_app(control))

    async def _rejoin_app(self, control: HostRejoin) -> None:
        registrations = await control.queries_of(self.name)
        specs = await control.subscribers_of(self.name)
        for registration in registrations:
            mine = [spec for spec in specs if spec.query_id == registration.query_id]
            await self.add_query(registration, mine)
        logger.warning("query host %s restarted: asking for new bootstrap rounds", self.name)
        await control.host_restarted(self.name)

    def hosted(self, query_id: str) -> HostedQuery:
        """The query ``query_id``; UnknownComponentError if this host does not run it."""
        hosted = self.queries.get(query_id)
        if hosted is None:
            raise UnknownComponentError(f"query {query_id!r} is not on host {self.name}")
        return hosted

    # -- deliveries ---------------------------------------------------------------------

    async def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> list[Rejection]:
        """One delivery of a shard's link; returns once every query concerned applied its
        share, with the entries whose changes a query's pipeline failed on. A delivery of a
        link that was replaced raises StaleDeliveryError."""
        pending = self._waiting.get((shard, epoch, number))
        if pending is not None:  # made again (its line broke): wait for the first
            return await asyncio.shield(pending)
        return await self.offer(shard, epoch, number, payload)

    def offer(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> asyncio.Future[list[Rejection]]:
        """:meth:`deliver` for a shard of this process: the delivery is taken now (its work
        queued for its queries in this event-loop step, no task), and its outcome is the
        future returned (the first's, for a delivery made again)."""
        key = (shard, epoch, number)
        pending = self._waiting.get(key)
        if pending is not None:
            return pending
        done: asyncio.Future[list[Rejection]] = asyncio.get_running_loop().create_future()
        tag = payload.tag if isinstance(payload, HostPacket) else None
        status, units = self._merger.offer(Arrival(shard, epoch, number, tag, payload))
        if status is not Offered.ACCEPTED:
            if status is Offered.STALE:
                done.set_exception(
                    StaleDeliveryError(f"delivery {number} of shard {shard}'s replaced link")
                )
            else:
                done.set_result([])
            return done
        self._waiting[key] = done
        self._refuse_replaced(shard)
        self._dispatch(units)
        if self._merger.next_deadline() is not None:
            self._expiring.set()
        return done

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
            elif len(futures) == 1:  # the usual unit: one query (no gather, one step less)
                futures[0].add_done_callback(functools.partial(self._completed_one, keys))
            else:
                gathered = asyncio.gather(*futures, return_exceptions=True)
                gathered.add_done_callback(functools.partial(self._completed, keys))

    def _submit(self, query_id: str, work: Work) -> asyncio.Future[list[Rejection]] | None:
        hosted = self.queries.get(query_id)
        if hosted is not None:
            return hosted.submit(work)
        # Not hosted (yet): after a restart, a bootstrap part can come before the query is
        # created again; it is kept, with what follows it, until then. Deltas without a part
        # kept are older than the part to come, which includes them.
        if isinstance(work, BootstrapPart) or query_id in self._orphans:
            self._orphans.setdefault(query_id, []).append(work)
        return None

    def _completed(self, keys: Sequence[DeliveryKey], done: asyncio.Future[list[Any]]) -> None:
        rejected = [
            rejection
            for outcome in done.result()
            if isinstance(outcome, list)
            for rejection in outcome
        ]
        self._complete(keys, rejected)

    def _completed_one(
        self, keys: Sequence[DeliveryKey], done: asyncio.Future[list[Rejection]]
    ) -> None:
        failed = done.cancelled() or done.exception() is not None  # as gather would keep it
        self._complete(keys, None if failed else done.result())

    def _complete(
        self, keys: Sequence[DeliveryKey], rejected: list[Rejection] | None = None
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
        return self._merger.waiting == 0 and all(q.settled for q in self.queries.values())

    # -- subscribers and results --------------------------------------------------------

    async def subscribe(self, spec: SubscriberSpec) -> None:
        """Open ``spec``'s buffer (already open: nothing happens). Called by the control
        plane, which keeps the spec (:meth:`~drasi_ray.coordinator.control.ControlPlane.
        subscribe`)."""
        self.hosted(spec.query_id).subscribe(spec.subscriber_id, spec.capacity, spec.mode)

    async def subscriber_specs(self) -> list[SubscriberSpec]:
        """The subscriptions open here (a restarted control plane asks)."""
        return [
            SubscriberSpec(query_id, subscriber_id, buffer.capacity, buffer.mode)
            for query_id, hosted in self.queries.items()
            for subscriber_id, buffer in hosted.runner.subscribers.items()
        ]

    async def unsubscribe(self, query_id: str, subscriber_id: str) -> None:
        hosted = self.queries.get(query_id)
        if hosted is not None:
            await hosted.unsubscribe(subscriber_id)

    async def take(
        self, query_id: str, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> ResultBatch:
        hosted = self.queries.get(query_id)
        if hosted is None and self._rejoin is not None and not self._rejoin.done():
            # restarted, not yet hosting its queries again: wait for it (the buffers it opens
            # come with them), or answer nothing and be asked again
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._rejoin), timeout_s)
            hosted = self.queries.get(query_id)
            if hosted is None:
                return ResultBatch(())
        if hosted is None:
            raise SubscriptionLostError(
                f"query {query_id!r} is not on host {self.name} any more: subscription "
                f"{subscriber_id} is lost; read app.results() and subscribe again"
            )
        return ResultBatch(await hosted.take(subscriber_id, max_items, timeout_s))

    async def results(self, query_id: str, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """The query's rows once it is bootstrapped (after a restart it rebuilds them first);
        UnknownComponentError if they are not within ``timeout_s`` (the caller asks again)."""
        rows = await self.hosted(query_id).results(timeout_s)
        if rows is None:
            raise UnknownComponentError(f"query {query_id!r} is not bootstrapped yet")
        return rows

    async def snapshot(self, query_id: str) -> tuple[list[dict[str, Any]], int]:
        """The query's rows and the sequence they are at (:meth:`HostedQuery.snapshot`)."""
        return await self.hosted(query_id).snapshot()

    async def settle(self, query_id: str) -> int:
        """Run what is due on the query's clock now (:meth:`HostedQuery.settle`)."""
        return await self.hosted(query_id).settle()

    async def advance_clock(self, query_id: str, now_ms: int) -> int:
        """Move the query's manual clock and run what came due."""
        return await self.hosted(query_id).advance_clock(now_ms)

    async def flush_chain(self, query_id: str, timeout_s: float) -> bool:
        """Wait until the query's chain stream holds every result so far."""
        return await self.hosted(query_id).flush_chain(timeout_s)

    async def add_reaction(self, query_id: str, spec: AnyReaction) -> None:
        hosted = self.hosted(query_id)
        await hosted.loaded
        hosted.add_reaction(spec)

    async def remove_reaction(self, query_id: str, name: str, timeout_s: float) -> int:
        """Stop the query's reactions of the Reaction resource ``name`` (each writes what it
        holds, up to ``timeout_s``); how many there were."""
        return await self.hosted(query_id).remove_reaction(name, timeout_s)

    async def flush_reactions(self, timeout_s: float) -> list[str]:
        """Wait until every query's reactions wrote what they were handed; the queries whose
        reactions are still behind after ``timeout_s``."""
        flushed = await asyncio.gather(
            *(hosted.flush_reactions(timeout_s) for hosted in self.queries.values())
        )
        return [query_id for query_id, ok in zip(self.queries, flushed, strict=True) if not ok]

    async def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop every query (signal ``stopped``, flush and close its reactions)."""
        stopped = await asyncio.gather(*(q.stop(timeout_s) for q in self.queries.values()))
        return all(stopped)

    def info(self) -> dict[str, QueryReport]:
        """Every hosted query's status."""
        served = self.line_calls()
        return {query_id: hosted.report(served) for query_id, hosted in self.queries.items()}

    def host_info(self) -> HostReport:
        return HostReport(
            self.name,
            self._incarnation,
            self.restarted,
            list(self.queries),
            psutil.Process().memory_info().rss,
            self.line_calls(),
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
