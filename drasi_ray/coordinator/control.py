"""The control plane without Ray: registrations, bootstrap rounds, barriers, rescaling.

:class:`ControlPlane` is the one control plane of an app (its state is the
:class:`~drasi_ray.coordinator.registry.Registry`): it registers queries (each on a query host),
keeps the master subscription table (registrations and ``SourceSubscription`` control events,
which consumers send here rather than to the shards) and gives every store shard the same copy,
knows the shard count, and directs recovery: every registration, and every restart of a shard
or a query host, starts a *bootstrap round* in which each shard sends the query's host its part
of the graph (:mod:`drasi_ray.shards.service`, :mod:`drasi_ray.host.inbox`). It also runs the
barriers the app needs (every delivery made, every query bootstrapped), the status, and
rescaling the shards.

It holds store shard 0 (a :class:`~drasi_ray.shards.service.ShardService`) and reaches the
other shards and the query hosts through a :class:`Cluster` (Ray handles in the app:
:mod:`drasi_ray.actors.handles`; the cores themselves in process:
:mod:`drasi_ray.testing.inprocess`). Its Ray shell is :mod:`drasi_ray.actors.coordinator`.

Resume contract: a restarted control plane reloads its shard's records, the table, the
registrations and the shard count from Redis (without durable state: the shard count from the
shards alive, the registrations from the query hosts), reloads the live subscriptions (kept in
Redis with durable state) and learns those the query hosts hold, then starts a new round for
every query. While it is
down, the other shards and the query hosts go on; consumers wait for it only when a batch has
changes of its elements or control events.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from drasi_ray.coordinator.registry import Registry
from drasi_ray.model.backoff import outlasting
from drasi_ray.model.changes import ControlEvent, Element, SubscriptionControl
from drasi_ray.model.errors import UnknownComponentError
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec, TableCopy
from drasi_ray.shards.reports import ShardReport, combine_reports
from drasi_ray.shards.service import MovedRecords, ShardService
from drasi_ray.shards.state import REDIS_TRANSIENT, StateStore

logger = logging.getLogger("drasi_ray.coordinator")

RELINK_POLL_S = 0.05
"""How often :meth:`ControlPlane.flush_deliveries` looks again for a host that is back."""

T = TypeVar("T")


class ShardControl(Protocol):
    """What the control plane calls on a store shard (a :class:`ShardService` satisfies it)."""

    async def attach(
        self, registration: QueryRegistration, round_: int, incarnation: str, table: TableCopy
    ) -> int: ...

    async def detach(self, query_id: str, table: TableCopy) -> None: ...

    async def set_table(self, table: TableCopy) -> None: ...

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int: ...

    async def drop_source(self, source_id: str) -> int: ...

    async def flush_deliveries(self) -> bool: ...

    async def flush_analytics(self) -> int: ...

    async def stats(self) -> ShardReport: ...

    async def elements(self, source_id: str) -> list[Element]: ...

    async def fence(self) -> None: ...

    async def export_moving(self, shards: int) -> list[MovedRecords]: ...

    async def import_records(self, records: MovedRecords) -> int: ...

    async def finish_rescale(self, shards: int) -> None: ...


class HostControl(Protocol):
    """What the control plane calls on a query host (:class:`~drasi_ray.host.core.QueryHost`
    satisfies it)."""

    async def incarnation(self) -> str: ...

    async def subscribe(self, spec: SubscriberSpec) -> None: ...

    async def unsubscribe(self, query_id: str, subscriber_id: str) -> None: ...

    async def all_settled(self) -> bool: ...

    async def registrations(self) -> list[QueryRegistration]: ...

    async def subscriber_specs(self) -> list[SubscriberSpec]: ...


class Cluster(Protocol):
    """Where the control plane finds the other shards and the query hosts."""

    def shard(self, index: int) -> ShardControl:
        """Store shard ``index`` (>= 1)."""
        ...

    def host(self, name: str) -> HostControl:
        """The query host named ``name``."""
        ...

    def shards_alive(self) -> int:
        """How many store shards run now (without durable state, after a restart)."""
        ...

    def hosts_alive(self) -> list[str]:
        """The names of the query hosts that run now (idem)."""
        ...


class ControlPlane:
    """The control plane and store shard 0 of an app (module docstring). Create it in an
    event loop: it starts loading at once."""

    def __init__(
        self,
        here: ShardService,
        cluster: Cluster,
        state: StateStore | None = None,
        gone: tuple[type[BaseException], ...] = (),
        credentials: Sequence[str] = (),
    ) -> None:
        """``here``: store shard 0; ``state``: the durable state (None: in memory);
        ``gone``: the errors that mean a shard or host is gone (its restart catches up);
        ``credentials``: the app's Redis URLs with their passwords (stored registrations hold
        none: :meth:`QueryRegistration.from_json`)."""
        self.here = here
        self._credentials = tuple(credentials)
        self._cluster = cluster
        self._state = state
        self._gone = gone
        # a host that is not there to ask
        self._unanswered: tuple[type[BaseException], ...] = (UnknownComponentError, *gone)
        self.registry = Registry()
        self._rounds_running = 0
        self._store_loaded = asyncio.Event()
        loop = asyncio.get_event_loop()
        self.control_loaded = loop.create_task(self._load_control())
        self._subscribers_known = loop.create_task(self._learn_subscribers())
        self.loaded = loop.create_task(self._recover())

    @property
    def shards(self) -> int:
        return self.here.shards

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
        elif self.here.restarted:
            await self._learn_control()
        self.here.take_table(self.registry.copy())

    async def _load_durable_control(self) -> None:
        assert self._state is not None
        table = await self._state.load_table()
        registrations = [
            QueryRegistration.from_json(record, self._credentials)
            for record in await self._state.load_registrations()
        ]
        self.registry.load(registrations, table)
        if self.here.restarted:
            self.here.shards = await self._state.load_shard_count() or self.here.shards
        else:
            await self._save_shard_count()

    async def _learn_control(self) -> None:
        """Without durable state: the shards alive and the queries the hosts run."""
        self.here.shards = self._cluster.shards_alive()
        registrations: list[QueryRegistration] = []
        for name in self._cluster.hosts_alive():
            try:
                registrations += await self._cluster.host(name).registrations()
            except self._unanswered as exc:
                logger.warning("coordinator: query host %s did not answer: %s", name, exc)
        self.registry.load(registrations, None)

    async def _learn_subscribers(self) -> None:
        """After a restart: the subscriptions kept in Redis (durable state) and those the
        query hosts hold. Without durable state, a host restarting at the same time holds none
        yet: its subscriptions are lost, and their handles raise SubscriptionLostError."""
        await self.control_loaded
        if not self.here.restarted:
            return
        if self._state is not None:
            records = await outlasting(
                self._state.load_subscribers, REDIS_TRANSIENT, "coordinator: subscribers", logger
            )
            for record in records:
                spec = SubscriberSpec.from_json(record)
                if spec.query_id in self.registry.registrations:
                    self.registry.subscribers[spec.subscriber_id] = spec
        for host in self.registry.hosts:
            try:
                specs = await self._cluster.host(host).subscriber_specs()
            except self._unanswered as exc:
                logger.warning("coordinator: query host %s did not answer: %s", host, exc)
                continue
            for spec in specs:
                self.registry.subscribers[spec.subscriber_id] = spec

    async def _recover(self) -> None:
        await self.control_loaded
        await self.here.load()
        self._store_loaded.set()
        if self.here.restarted:
            await self._subscribers_known
            logger.warning(
                "coordinator restarted: new bootstrap rounds for %s",
                sorted(self.registry.registrations),
            )
            await self._bootstrap_all()

    # -- the control plane --------------------------------------------------------------

    async def shard_count(self) -> int:
        await self.control_loaded
        return self.here.shards

    async def register_query(self, registration: QueryRegistration) -> int:
        """Register a query on its host and bootstrap it from every shard; returns the
        elements it was loaded with, once its host applied the bootstrap."""
        (loaded,) = await self.register_queries([registration])
        return loaded

    async def register_queries(self, registrations: Sequence[QueryRegistration]) -> list[int]:
        """:meth:`register_query` of several queries at once (an app starting): all are
        registered and saved first, the table once, then bootstrapped together, each from
        every shard. Returns the elements each was loaded with, in order; the first failure
        of a bootstrap is raised once every bootstrap has ended."""
        await self.control_loaded
        for registration in registrations:
            self.registry.register(registration)
        for registration in registrations:
            await self._save_registration(registration.query_id)
        await self._save_table()
        loaded = await asyncio.gather(
            *(self._bootstrap(registration) for registration in registrations),
            return_exceptions=True,
        )
        for outcome in loaded:
            if isinstance(outcome, BaseException):
                raise outcome
        return [count for count in loaded if isinstance(count, int)]

    async def set_reactions(self, query_id: str, reactions: tuple[AnyReaction, ...]) -> None:
        """Record the reactions of a running query (one added or removed while it runs), so
        that its host starts the same ones after a restart. Nothing is bootstrapped."""
        await self.control_loaded
        registration = self.registry.registrations.get(query_id)
        if registration is None:
            return
        config = registration.config.model_copy(update={"reactions": reactions})
        self.registry.registrations[query_id] = dataclasses.replace(registration, config=config)
        await self._save_control(query_id)

    async def unregister_query(self, query_id: str) -> None:
        """Stop routing to ``query_id`` on every shard, then forget its registration, its
        subscriptions and its element history (in memory and in Redis)."""
        await self._subscribers_known
        subscribers = [s.subscriber_id for s in self.registry.subscribers_of_query(query_id)]
        self.registry.unregister(query_id)
        table = self.registry.copy()
        await self._on_shards(lambda shard: shard.detach(query_id, table))
        await self._save_control(query_id)
        for subscriber_id in subscribers:
            await self._save_subscriber(subscriber_id, None)

    async def apply_controls(self, source_id: str, controls: Sequence[ControlEvent]) -> int:
        """Apply control events a consumer read; every shard gets the new table before this
        returns (so the consumer's next changes are routed by it)."""
        await self.control_loaded
        for control in controls:
            if not isinstance(control, SubscriptionControl):
                logger.info("skipping control event of unknown type %r", control.control_type)
        applied = self.registry.apply_controls(source_id, controls)
        self.here.core.stats.controls += len(controls)
        if applied:
            await self._save_table()
            table = self.registry.copy()
            await self._on_shards(lambda shard: shard.set_table(table))
        return applied

    async def queries_of(self, host: str) -> list[QueryRegistration]:
        """The registrations of ``host``'s queries (a restarted host asks)."""
        await self.control_loaded
        return self.registry.queries_of(host)

    async def registrations(self) -> list[QueryRegistration]:
        """Every query's registration (the SSE reaction learns the queries it serves here)."""
        await self.control_loaded
        return list(self.registry.registrations.values())

    async def subscribe(self, spec: SubscriberSpec) -> None:
        """Open a subscriber's buffer on its query's host, and keep its spec so that the host
        opens it again if it restarts (recorded first: a host restarting meanwhile has it)."""
        await self._subscribers_known
        registration = self.registry.registrations.get(spec.query_id)
        if registration is None:
            raise UnknownComponentError(f"query {spec.query_id!r} is not registered")
        self.registry.subscribers[spec.subscriber_id] = spec
        await self._save_subscriber(spec.subscriber_id, spec.to_json())
        await self._cluster.host(registration.host).subscribe(spec)

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
        self.registry.subscribers.pop(subscriber_id, None)
        await self._save_subscriber(subscriber_id, None)
        registration = self.registry.registrations.get(query_id)
        if registration is None:
            return
        with contextlib.suppress(*self._gone):
            await self._cluster.host(registration.host).unsubscribe(query_id, subscriber_id)

    async def subscribers_of(self, host: str) -> list[SubscriberSpec]:
        """The subscriptions to ``host``'s queries (a restarted host opens them again)."""
        await self._subscribers_known
        return self.registry.subscribers_of(host)

    async def host_restarted(self, host: str) -> None:
        """A query host came back: bootstrap its queries again from every shard."""
        await self.control_loaded
        await asyncio.gather(*(self._bootstrap(r) for r in self.registry.queries_of(host)))

    async def shard_restarted(self, index: int) -> None:
        """A store shard came back: every query gets a new bootstrap round."""
        await self.loaded
        logger.warning("shard %d restarted: new bootstrap rounds for every query", index)
        await self._bootstrap_all()

    async def _bootstrap_all(self) -> None:
        await asyncio.gather(*(self._bootstrap(r) for r in self.registry.registrations.values()))

    async def _bootstrap(self, registration: QueryRegistration) -> int:
        """A new bootstrap round of one query: every shard sends its host its part."""
        self._rounds_running += 1
        try:
            # Shard 0's part is snapshotted here: never before its records are loaded (a
            # restarted host can ask for rounds while this control plane is still loading).
            await self._store_loaded.wait()
            round_ = self.registry.new_round(registration.query_id)
            incarnation = await self._cluster.host(registration.host).incarnation()
            table = self.registry.copy()
            loaded = await self._on_shards(
                lambda shard: shard.attach(registration, round_, incarnation, table)
            )
            return sum(count for count in loaded if isinstance(count, int))
        finally:
            self._rounds_running -= 1

    def _shard(self, index: int) -> ShardControl:
        return self.here if index == 0 else self._cluster.shard(index)

    async def _on_shards(self, call: Callable[[ShardControl], Awaitable[T]]) -> list[T | None]:
        """``call`` on every shard, concurrently; each result, or None for a shard that is
        gone (its restart catches it up)."""
        calls = [call(self._shard(index)) for index in range(self.here.shards)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        outcomes: list[T | None] = []
        for index, result in enumerate(results):
            if isinstance(result, self._gone):
                logger.warning("coordinator: shard %d is gone (%s)", index, result)
                outcomes.append(None)
            elif isinstance(result, BaseException):
                raise result
            else:
                outcomes.append(result)
        return outcomes

    async def _save_control(self, query_id: str) -> None:
        await self._save_registration(query_id)
        await self._save_table()

    async def _save_registration(self, query_id: str) -> None:
        """Keep ``query_id``'s registration and history limits in Redis (removed if it is not
        registered)."""
        if self._state is None:
            return
        registration = self.registry.registrations.get(query_id)
        record = None if registration is None else registration.to_json()
        await self._state.save_registration(query_id, record)
        history = None if registration is None else registration.history
        await self._state.save_history_limits(query_id, history)

    async def _save_table(self) -> None:
        if self._state is not None:
            await self._state.save_table(self.registry.table.to_records())

    async def _save_shard_count(self) -> None:
        if self._state is not None:
            await self._state.save_shard_count(self.here.shards)

    # -- the data plane's housekeeping -----------------------------------------------------

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        """Forget the tombstones below ``bound`` on every shard; how many."""
        await self.loaded
        counts = await self._on_shards(lambda shard: shard.forget_tombstones(source_id, bound))
        return sum(count for count in counts if count is not None)

    async def drop_source(self, source_id: str) -> int:
        """Forget a removed source's elements on every shard (in memory and in Redis); how
        many there were."""
        await self.loaded
        counts = await self._on_shards(lambda shard: shard.drop_source(source_id))
        return sum(count for count in counts if count is not None)

    # -- barriers -----------------------------------------------------------------------

    async def flush_deliveries(self) -> None:
        """Barrier: return once every delivery every shard sent so far is applied, and every
        query is bootstrapped from its latest round (a restarted shard or host caught up).
        Waits as long as a shard or host stays away: callers bound it."""
        await self.loaded
        while True:
            if self._rounds_running == 0 and await self._all_settled():
                return
            await asyncio.sleep(RELINK_POLL_S)

    async def _all_settled(self) -> bool:
        ready = await self._on_shards(lambda shard: shard.flush_deliveries())
        if not all(result is True for result in ready):
            return False
        for host in self.registry.hosts:
            if not await self._cluster.host(host).all_settled():
                return False
        return True

    async def flush_analytics(self) -> int:
        """Barrier: every shard seals what it applied so far into the change log; the rows
        the log holds."""
        await self.loaded
        rows = await self._on_shards(lambda shard: shard.flush_analytics())
        return max((count for count in rows if count is not None), default=0)

    # -- status -------------------------------------------------------------------------

    async def shard_stats(self) -> list[ShardReport]:
        """Every shard's report, by index (a shard that is gone is left out)."""
        await self.loaded
        reports = await self._on_shards(lambda shard: shard.stats())
        return [report for report in reports if report is not None]

    async def stats(self) -> ShardReport:
        """Every shard's report added up (``DrasiRay.status().coordinator``)."""
        return combine_reports(await self.shard_stats())

    async def elements_by_shard(self, source_id: str) -> dict[int, list[Element]]:
        """Each shard's own elements of ``source_id``, by shard index (a shard that is gone
        is left out): what each shard holds, for checks that no element sits on two."""
        await self.loaded
        parts = await self._on_shards(lambda shard: shard.elements(source_id))
        return {index: part for index, part in enumerate(parts) if part is not None}

    async def elements(self, source_id: str) -> list[Element]:
        """The current graph of ``source_id``: every shard's elements."""
        parts = await self.elements_by_shard(source_id)
        return [element for part in parts.values() for element in part]

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
        await self.loaded
        await self.flush_deliveries()
        old = self.here.shards
        await self._on_shards(lambda shard: shard.fence())
        moved = 0
        for source in range(old):
            moved += await self._move_from(source, shards)
        for index in range(1, shards):
            await self._cluster.shard(index).finish_rescale(shards)
        await self.here.finish_rescale(shards)
        await self._save_shard_count()
        await self._bootstrap_all()
        return moved

    async def _move_from(self, index: int, shards: int) -> int:
        """Shard ``index`` hands each new owner the records it will no longer own."""
        moving = await self._shard(index).export_moving(shards)
        moved = 0
        for owner, records in enumerate(moving):
            if records:
                moved += len(records)
                await self._shard(owner).import_records(records)
        return moved
