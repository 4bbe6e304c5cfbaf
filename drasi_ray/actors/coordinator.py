"""The coordinator actor ``drasi/coordinator``: the one control plane, and store shard 0.

Control plane (:class:`~drasi_ray.coordinator.registry.Registry`): it registers queries (each
on a query host), keeps the master subscription table (registrations and ``SourceSubscription``
control events, which consumers send here rather than to the shards) and gives every store
shard the same copy, knows the shard count, and directs recovery: every registration, and
every restart of a shard or a query host, starts a *bootstrap round* in which each shard sends
the query's host its part of the graph (:mod:`drasi_ray.actors.shard`,
:mod:`drasi_ray.host.inbox`). It also runs the barriers the app needs (every delivery made,
every query bootstrapped), the status, and rescaling the shards.

Data plane: it is store shard 0 (a :class:`~drasi_ray.actors.shard.ShardService`), so an app
with one shard (the default) runs exactly one store process, as before shards existed.

Resume contract: a restarted coordinator reloads its shard's records, the table, the
registrations and the shard count from Redis (without durable state: the shard count from the
shard actors alive, the registrations from the query hosts), reloads the live subscriptions
(kept in Redis with durable state) and learns those the query hosts hold, then starts a new
round for every query. While it is down, the other shards and the query hosts go on;
consumers wait for it only when a batch has changes of its elements or control events.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import ray

from drasi_ray.actors import names
from drasi_ray.actors.line import LineAddress, LineServer
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc
from drasi_ray.actors.shard import MovedRecords, ShardService, ShardSettings
from drasi_ray.coordinator.registry import QueryRegistration, Registry, SubscriberSpec
from drasi_ray.model.backoff import outlasting
from drasi_ray.model.changes import ControlEvent, DecodedEntry, Element, SubscriptionControl
from drasi_ray.model.errors import UnknownComponentError
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.shards import BatchTag
from drasi_ray.shards.core import BatchReport, ShardReport, combine_reports
from drasi_ray.shards.state import REDIS_TRANSIENT, StateStore

logger = logging.getLogger("drasi_ray.coordinator")

RELINK_POLL_S = 0.05
"""How often :meth:`CoordinatorActor.flush_deliveries` looks again for a host that is back."""

_UNAVAILABLE = (ray.exceptions.ActorUnavailableError,)


@ray.remote
class CoordinatorActor:
    """The control plane and store shard 0 of an app (module docstring)."""

    def __init__(self, settings: ShardSettings, niceness: int | None = PIPELINE_NICENESS) -> None:
        tune_for_latency(niceness)
        tune_gc()
        self._namespace = settings.namespace
        self._service = ShardService(settings)
        self._service.line_server = LineServer(
            self, ("apply_batch",), enabled=settings.direct_calls
        )
        self._registry = Registry()
        self._state = (
            None
            if settings.state_url is None
            else StateStore.from_url(settings.state_url, settings.app_id)
        )
        self._rounds_running = 0
        loop = asyncio.get_event_loop()
        self._control_loaded = loop.create_task(self._load_control())
        self._subscribers_known = loop.create_task(self._learn_subscribers())
        self._loaded = loop.create_task(self._recover())

    # -- recovery -----------------------------------------------------------------------

    async def _load_control(self) -> None:
        """The registrations, the table and the shard count of a previous life, if any."""
        if self._state is not None:
            await outlasting(
                self._load_durable_control,
                REDIS_TRANSIENT,
                "coordinator: loading the control state",
                logger,
            )
        elif self._service.restarted:
            await self._learn_control()
        self._service.set_table(self._registry.copy())

    async def _load_durable_control(self) -> None:
        assert self._state is not None
        table = await self._state.load_table()
        registrations = [
            QueryRegistration.from_json(record, self._service.settings.credentials)
            for record in await self._state.load_registrations()
        ]
        self._registry.load(registrations, table)
        if self._service.restarted:
            self._service.shards = await self._state.load_shard_count() or self._service.shards
        else:
            await self._save_shard_count()

    async def _learn_control(self) -> None:
        """Without durable state: the shards alive and the queries the hosts run."""
        shards = 1
        while _named(names.shard_actor(shards), self._namespace) is not None:
            shards += 1
        self._service.shards = shards
        registrations: list[QueryRegistration] = []
        for name in _query_hosts(self._namespace):
            handle = ray.get_actor(name, namespace=self._namespace)
            try:
                registrations += await handle.registrations.remote()
            except ray.exceptions.RayActorError as exc:
                logger.warning("coordinator: query host %s did not answer: %s", name, exc)
        self._registry.load(registrations, None)

    async def _learn_subscribers(self) -> None:
        """After a restart: the subscriptions kept in Redis (durable state) and those the
        query hosts hold. Without durable state, a host restarting at the same time holds none
        yet: its subscriptions are lost, and their handles raise SubscriptionLostError."""
        await self._control_loaded
        if not self._service.restarted:
            return
        if self._state is not None:
            records = await outlasting(
                self._state.load_subscribers, REDIS_TRANSIENT, "coordinator: subscribers", logger
            )
            for record in records:
                spec = SubscriberSpec.from_json(record)
                if spec.query_id in self._registry.registrations:
                    self._registry.subscribers[spec.subscriber_id] = spec
        for host in self._registry.hosts:
            try:
                handle = ray.get_actor(host, namespace=self._namespace)
                specs: list[SubscriberSpec] = await handle.subscriber_specs.remote()
            except (ValueError, ray.exceptions.RayActorError) as exc:
                logger.warning("coordinator: query host %s did not answer: %s", host, exc)
                continue
            for spec in specs:
                self._registry.subscribers[spec.subscriber_id] = spec

    async def _recover(self) -> None:
        await self._control_loaded
        await self._service.load()
        if self._service.restarted:
            await self._subscribers_known
            logger.warning(
                "coordinator restarted: new bootstrap rounds for %s",
                sorted(self._registry.registrations),
            )
            await self._bootstrap_all()

    async def ping(self) -> bool:
        """True once the actor is up and its durable state is loaded."""
        await self._loaded
        return True

    def pid(self) -> int:
        return os.getpid()

    # -- shard 0 ------------------------------------------------------------------------

    async def line_address(self) -> LineAddress | None:
        """Where consumers reach :meth:`apply_batch` directly (None: lines disabled)."""
        assert self._service.line_server is not None
        return await self._service.line_server.address()

    @ray.method(enable_task_events=False)  # hot: see drasi_ray.actors.runtime
    async def apply_batch(
        self,
        source_id: str,
        entries: Sequence[DecodedEntry],
        tag: BatchTag | None = None,
        shards: int = 1,
    ) -> BatchReport:
        """Shard 0's part of a consumer batch (:meth:`ShardService.apply_batch`)."""
        await self._loaded
        return await self._service.apply_batch(source_id, entries, tag, shards)

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        """Forget the tombstones below ``bound`` on every shard; how many."""
        await self._loaded
        counts = await self._on_shards(
            lambda: self._service.forget_tombstones(source_id, bound),
            lambda shard: shard.forget_tombstones.remote(source_id, bound),
        )
        return sum(count for count in counts if isinstance(count, int))

    # -- the control plane --------------------------------------------------------------

    async def shard_count(self) -> int:
        await self._control_loaded
        return self._service.shards

    async def register_query(self, registration: QueryRegistration) -> int:
        """Register a query on its host and bootstrap it from every shard; returns the
        elements it was loaded with, once its host applied the bootstrap."""
        await self._control_loaded
        self._registry.register(registration)
        await self._save_control(registration.query_id)
        return await self._bootstrap(registration)

    async def set_reactions(self, query_id: str, reactions: tuple[AnyReaction, ...]) -> None:
        """Record the reactions of a running query (one added or removed while it runs), so
        that its host starts the same ones after a restart. Nothing is bootstrapped."""
        await self._control_loaded
        registration = self._registry.registrations.get(query_id)
        if registration is None:
            return
        config = registration.config.model_copy(update={"reactions": reactions})
        self._registry.registrations[query_id] = dataclasses.replace(registration, config=config)
        await self._save_control(query_id)

    async def unregister_query(self, query_id: str) -> None:
        await self._control_loaded
        self._registry.unregister(query_id)
        await self._save_control(query_id)
        table = self._registry.copy()
        self._service.detach(query_id, table)
        await self._on_other_shards(lambda shard: shard.detach.remote(query_id, table))

    async def apply_controls(self, source_id: str, controls: Sequence[ControlEvent]) -> int:
        """Apply control events a consumer read; every shard gets the new table before this
        returns (so the consumer's next changes are routed by it)."""
        await self._control_loaded
        for control in controls:
            if not isinstance(control, SubscriptionControl):
                logger.info("skipping control event of unknown type %r", control.control_type)
        applied = self._registry.apply_controls(source_id, controls)
        self._service.core.stats.controls += len(controls)
        if applied:
            await self._save_table()
            table = self._registry.copy()
            self._service.set_table(table)
            await self._on_other_shards(lambda shard: shard.set_table.remote(table))
        return applied

    async def queries_of(self, host: str) -> list[QueryRegistration]:
        """The registrations of ``host``'s queries (a restarted host asks)."""
        await self._control_loaded
        return self._registry.queries_of(host)

    async def registrations(self) -> list[QueryRegistration]:
        """Every query's registration (the SSE reaction learns the queries it serves here)."""
        await self._control_loaded
        return list(self._registry.registrations.values())

    async def subscribe(self, spec: SubscriberSpec) -> None:
        """Open a subscriber's buffer on its query's host, and keep its spec so that the host
        opens it again if it restarts (recorded first: a host restarting meanwhile has it)."""
        await self._subscribers_known
        registration = self._registry.registrations.get(spec.query_id)
        if registration is None:
            raise UnknownComponentError(f"query {spec.query_id!r} is not registered")
        self._registry.subscribers[spec.subscriber_id] = spec
        await self._save_subscriber(spec.subscriber_id, spec.to_json())
        host = ray.get_actor(registration.host, namespace=self._namespace)
        await outlasting(
            lambda: host.subscribe.remote(spec), _UNAVAILABLE, "coordinator: host", logger
        )

    async def _save_subscriber(self, subscriber_id: str, record: bytes | None) -> None:
        """Keep a subscription in Redis too: a coordinator restarted while its query's host
        restarts still knows it (the host asks it which buffers to open)."""
        if self._state is not None:
            state = self._state
            await outlasting(
                lambda: state.save_subscriber(subscriber_id, record),
                REDIS_TRANSIENT,
                "coordinator: saving a subscription",
                logger,
            )

    async def unsubscribe(self, query_id: str, subscriber_id: str) -> None:
        """Close a subscriber's buffer and forget it (a host that is gone has lost it)."""
        await self._subscribers_known
        self._registry.subscribers.pop(subscriber_id, None)
        await self._save_subscriber(subscriber_id, None)
        registration = self._registry.registrations.get(query_id)
        if registration is None:
            return
        host = ray.get_actor(registration.host, namespace=self._namespace)
        with contextlib.suppress(ray.exceptions.RayActorError):
            await host.unsubscribe.remote(query_id, subscriber_id)

    async def subscribers_of(self, host: str) -> list[SubscriberSpec]:
        """The subscriptions to ``host``'s queries (a restarted host opens them again)."""
        await self._subscribers_known
        return self._registry.subscribers_of(host)

    async def host_restarted(self, host: str) -> None:
        """A query host came back: bootstrap its queries again from every shard."""
        await self._control_loaded
        await asyncio.gather(*(self._bootstrap(r) for r in self._registry.queries_of(host)))

    async def shard_restarted(self, index: int) -> None:
        """A store shard came back: every query gets a new bootstrap round."""
        await self._loaded
        logger.warning("shard %d restarted: new bootstrap rounds for every query", index)
        await self._bootstrap_all()

    async def _bootstrap_all(self) -> None:
        await asyncio.gather(*(self._bootstrap(r) for r in self._registry.registrations.values()))

    async def _bootstrap(self, registration: QueryRegistration) -> int:
        """A new bootstrap round of one query: every shard sends its host its part."""
        self._rounds_running += 1
        try:
            round_ = self._registry.new_round(registration.query_id)
            host = ray.get_actor(registration.host, namespace=self._namespace)
            incarnation: str = await outlasting(
                lambda: host.incarnation.remote(), _UNAVAILABLE, "coordinator: host", logger
            )
            table = self._registry.copy()
            loaded = await self._on_shards(
                lambda: self._attach_here(registration, round_, incarnation, table),
                lambda shard: shard.attach.remote(registration, round_, incarnation, table),
            )
            return sum(count for count in loaded if isinstance(count, int))
        finally:
            self._rounds_running -= 1

    async def _attach_here(
        self, registration: QueryRegistration, round_: int, incarnation: str, table: Any
    ) -> int:
        delivery, elements = self._service.attach(registration, round_, incarnation, table)
        await self._service.save_histories()
        await delivery
        return elements

    async def _on_shards(
        self,
        here: Callable[[], Awaitable[Any]],
        there: Callable[[Any], Any],
    ) -> list[Any]:
        """Run ``here`` on shard 0 and ``there(handle)`` on every other shard, concurrently;
        each result, or the error of a shard that is gone (its restart catches it up)."""
        calls = [here()]
        for index in range(1, self._service.shards):
            calls.append(self._on_shard(index, there))
        results = await asyncio.gather(*calls, return_exceptions=True)
        for index, result in enumerate(results):
            if isinstance(result, ray.exceptions.RayActorError):
                logger.warning("coordinator: shard %d is gone (%s)", index, result)
            elif isinstance(result, BaseException):
                raise result
        return list(results)

    async def _on_other_shards(self, there: Callable[[Any], Any]) -> None:
        """``there(handle)`` on shards 1 .. K-1 (a shard that is gone catches up when its
        restart brings a new round)."""
        await self._on_shards(lambda: _done(None), there)

    async def _on_shard(self, index: int, there: Callable[[Any], Any]) -> Any:
        handle = ray.get_actor(names.shard_actor(index), namespace=self._namespace)
        return await outlasting(
            lambda: there(handle), _UNAVAILABLE, f"coordinator: shard {index}", logger
        )

    async def _save_control(self, query_id: str) -> None:
        if self._state is None:
            return
        registration = self._registry.registrations.get(query_id)
        record = None if registration is None else registration.to_json()
        await self._state.save_registration(query_id, record)
        history = None if registration is None else registration.history
        await self._state.save_history_limits(query_id, history)
        await self._save_table()

    async def _save_table(self) -> None:
        if self._state is not None:
            await self._state.save_table(self._registry.table.to_records())

    async def _save_shard_count(self) -> None:
        if self._state is not None:
            await self._state.save_shard_count(self._service.shards)

    # -- barriers -----------------------------------------------------------------------

    async def flush_deliveries(self) -> None:
        """Barrier: return once every delivery every shard sent so far is applied, and every
        query is bootstrapped from its latest round (a restarted shard or host caught up).
        Waits as long as a shard or host stays away: callers bound it."""
        await self._loaded
        while True:
            if self._rounds_running == 0 and await self._all_settled():
                return
            await asyncio.sleep(RELINK_POLL_S)

    async def _all_settled(self) -> bool:
        ready = await self._on_shards(
            self._service.flush_deliveries, lambda shard: shard.flush_deliveries.remote()
        )
        if not all(result is True for result in ready):
            return False
        for host in self._registry.hosts:
            if not await self._host_settled(host):
                return False
        return True

    async def _host_settled(self, host: str) -> bool:
        handle = ray.get_actor(host, namespace=self._namespace)
        settled: bool = await outlasting(
            lambda: handle.all_settled.remote(), _UNAVAILABLE, f"coordinator: host {host}", logger
        )
        return settled

    async def flush_analytics(self) -> int:
        """Barrier: every shard seals what it applied so far into the change log; the rows
        the log holds."""
        await self._loaded
        rows = await self._on_shards(
            self._service.flush_analytics, lambda shard: shard.flush_analytics.remote()
        )
        return max((count for count in rows if isinstance(count, int)), default=0)

    # -- status -------------------------------------------------------------------------

    async def shard_stats(self) -> list[ShardReport]:
        """Every shard's report, by index (a shard that is gone is left out)."""
        await self._loaded
        reports = await self._on_shards(self._service.report, lambda shard: shard.stats.remote())
        return [report for report in reports if isinstance(report, ShardReport)]

    async def stats(self) -> ShardReport:
        """Every shard's report added up (``DrasiRay.status()["coordinator"]``)."""
        return combine_reports(await self.shard_stats())

    async def elements(self, source_id: str) -> list[Element]:
        """The current graph of ``source_id``: every shard's elements."""
        await self._loaded
        parts = await self._on_shards(
            lambda: _done(self._service.elements(source_id)),
            lambda shard: shard.elements.remote(source_id),
        )
        return [element for part in parts if isinstance(part, list) for element in part]

    async def elements_by_shard(self, source_id: str) -> dict[int, list[Element]]:
        """Each shard's own elements of ``source_id``, by shard index (a shard that is gone
        is left out): what each shard holds, for checks that no element sits on two."""
        await self._loaded
        parts = await self._on_shards(
            lambda: _done(self._service.elements(source_id)),
            lambda shard: shard.elements.remote(source_id),
        )
        return {index: part for index, part in enumerate(parts) if isinstance(part, list)}

    # -- rescaling ----------------------------------------------------------------------

    async def rescale(self, shards: int) -> int:
        """Partition the elements over ``shards`` shards; returns the records that moved.

        The caller paused every consumer and started shards ``K .. shards-1`` (empty, told
        ``shards``); it stops shards ``shards .. K-1`` afterwards. The steps:

        1. fence: every old shard refuses batches from now on and waits until the batches it
           accepted before are applied and persisted. A batch split for K is thus either
           wholly applied before any record moves, or refused (the consumer splits it again
           for the new count once the shards own their new slices); a consumer the caller
           could not pause, or a call a broken line makes again, cannot slip between;
        2. every shard hands the records it will no longer own to their new owner;
        3. shards 1 .. then shard 0 own their new slice (shard 0 last: the count consumers
           ask for is shard 0's, so a consumer that sees the new count finds every shard ready);
        4. every query gets a new bootstrap round over the new shards.
        """
        await self._loaded
        await self.flush_deliveries()
        old = self._service.shards
        await self._on_shards(self._service.fence, lambda shard: shard.fence.remote())
        moved = 0
        for source in range(old):
            moved += await self._move_from(source, shards)
        for index in range(1, shards):
            await self._on_shard(index, lambda shard: shard.finish_rescale.remote(shards))
        self._service.finish_rescale(shards)
        await self._save_shard_count()
        await self._bootstrap_all()
        return moved

    async def _import_into(self, index: int, records: MovedRecords) -> None:
        await self._on_shard(index, lambda shard: shard.import_records.remote(records))

    async def _move_from(self, index: int, shards: int) -> int:
        """Shard ``index`` hands each new owner the records it will no longer own."""
        if index == 0:
            moving: list[Any] = list(self._service.export_moving(shards))
        else:
            handle = ray.get_actor(names.shard_actor(index), namespace=self._namespace)
            moving = await handle.export_moving.remote(shards)
        moved = 0
        for owner, records in enumerate(moving):
            if not records:
                continue
            moved += len(records)
            if owner == 0:
                self._service.import_records([records])
            else:
                await self._import_into(owner, records)
        return moved


async def _done(value: Any) -> Any:
    """``value`` as an awaitable (for :meth:`CoordinatorActor._on_shards` on shard 0)."""
    return value


def _named(name: str, namespace: str) -> Any:
    try:
        return ray.get_actor(name, namespace=namespace)
    except ValueError:
        return None


def _query_hosts(namespace: str) -> list[str]:
    """The names of the query hosts alive in ``namespace``."""
    actors = ray.util.list_named_actors(all_namespaces=True)
    return sorted(
        actor["name"]
        for actor in actors
        if actor.get("namespace") == namespace and names.is_query_host(actor["name"])
    )
