"""``DrasiRay``: the application users configure, start, subscribe to and stop.

    app = DrasiRay()
    app.add_source(PlatformSource.builder("sensors").with_redis_url(url)
                   .with_stream_key("sensor-changes").build())
    app.add_query(Query.cypher("hot").query("MATCH (s:Sensor) WHERE s.temperature > 70 "
                                            "RETURN s.id AS id").from_source("sensors").build())
    app.start()
    with app.subscribe("hot") as results:
        for result in results:
            print(result.results)

``start()`` connects to Ray (a running cluster if one is reachable, else a local Ray), starts
the coordinator (the control plane and store shard 0) and the other store shards
(``scaling.shards``), the query hosts the queries share (``scaling.query_hosts``: by default one
per CPU of the cluster, at most one per query) and ``consumers`` actors per source, and returns
once every query is bootstrapped, every consumer group exists and every consumer is reading:
nothing published after it is missed.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import ray
import redis

from drasi_ray.actors import barriers, cluster, fused, launch, names, scaling
from drasi_ray.actors.app_reactions import AppReactions
from drasi_ray.actors.cluster import RayConnection
from drasi_ray.actors.driver_logs import ForwardedLines
from drasi_ray.actors.fused import FusedConsumer, FusedConsumerSpec, FusedSettings
from drasi_ray.actors.placement import Placer
from drasi_ray.actors.shard import ShardSettings
from drasi_ray.actors.status import AppStatus, gather_status
from drasi_ray.actors.subscription import Subscription
from drasi_ray.host.runner import make_engine
from drasi_ray.model import keys
from drasi_ray.model.clock import Clock, ClockSetting, ManualClock
from drasi_ray.model.config import (
    AnalyticsConfig,
    AppConfig,
    DispatchMode,
    PlatformSourceConfig,
    PostgresSourceSpec,
    QueryConfig,
    RayConfig,
    ScalingConfig,
    StateConfig,
)
from drasi_ray.model.errors import (
    ConfigError,
    DrasiRayError,
    NotRunningError,
    UnknownComponentError,
)
from drasi_ray.model.reaction_specs import (
    AnyAppReaction,
    AnyReaction,
    HttpReaction,
    LogReaction,
    PlatformReaction,
    PostgresStoredProcReaction,
    SseReaction,
)
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.reactions.factory import resolve_specs
from drasi_ray.shards.core import ApplyProbe
from drasi_ray.source.middleware import check_middleware
from drasi_ray.source.platform import PlatformSource
from drasi_ray.source.postgres.definition import PostgresSource
from drasi_ray.streams import admin, connections

if TYPE_CHECKING:
    from drasi_ray.analytics.facade import Analytics

logger = logging.getLogger("drasi_ray.app")

CLOCK_TIMEOUT_S = 120.0
"""How long moving a manual clock waits for the query actors to run what came due."""
READ_TIMEOUT_S = 30.0
"""How long results(), status() and subscribe() wait for an actor that is restarting."""
LOG_FORWARD_TIMEOUT_S = 5.0
"""How long stop() waits for Ray to forward the log reactions' last lines to the driver."""
STOPPED_LINE = '"signal":"stopped"'


class DrasiRay:
    """An application: sources, continuous queries and the Ray actors that run them."""

    def __init__(
        self,
        app_id: str = "default",
        *,
        ray_config: RayConfig | None = None,
        state_config: StateConfig | None = None,
        failpoints: ApplyProbe | None = None,
        analytics_config: AnalyticsConfig | None = None,
        clock: Clock | None = None,
        scaling_config: ScalingConfig | None = None,
        connect_timeout_s: float = connections.DEFAULT_DEADLINE_S,
    ) -> None:
        """``clock`` decides when the re-evaluations that Drasi's future functions schedule are
        due (:mod:`drasi_ray.model.clock`): the wall clock by default; a
        :class:`~drasi_ray.model.clock.ManualClock` moves only when told, and each move
        returns once every query ran what came due. ``connect_timeout_s``: how long
        ``start()`` waits for each Redis (and a configured Ray) to answer."""
        AppConfig(id=app_id)  # validates the id
        self.app_id = app_id
        self.namespace = names.namespace(app_id)
        self._ray = ray_config or RayConfig()
        self._state = state_config or StateConfig()
        self._scaling = scaling_config or ScalingConfig()
        self._scaling.fused(self._state.durable)  # ConfigError now for a layout that cannot run
        self._fused = False  # running the fused layout (docs/architecture.md)
        self._fused_sources: set[str] = set()  # sources whose consumer 0 the fused actor runs
        self._failpoints = failpoints
        self._analytics_config = analytics_config or AnalyticsConfig()
        self._analytics: Analytics | None = None  # while running with analytics enabled
        self._sources: dict[str, PlatformSource] = {}
        self._postgres: dict[str, PostgresSource] = {}  # their consumers are in _sources
        self._readers: dict[str, Any] = {}  # source id -> its PostgreSQL reader actor
        self._queries: dict[str, QueryConfig] = {}
        self._engines: dict[str, ContinuousQuery] = {}
        self._coordinator: Any = None
        self._shards: list[Any] = []  # shard actors 1 .. K-1 (shard 0 is the coordinator)
        self._consumers: dict[str, list[Any]] = {}
        self._created: dict[str, list[Any]] = {}  # consumer actors not told to read yet
        self._hosts: dict[str, Any] = {}  # host name -> actor
        self._host_of: dict[str, str] = {}  # query id -> host name
        # Running queries whose host writes the result stream the app's reactions read with a
        # platform reaction the app gave it (not in their settings: _with_result_stream).
        self._given_stream: set[str] = set()
        self._shared_hosts = 0  # decided when the first shared query starts
        self._placer: Placer | None = None
        self._redis: dict[str, redis.Redis] = {}
        self._chain_sources: set[str] = set()
        self._owns_ray = False
        self._ray_connection: RayConnection | None = None
        self._forwarded: ForwardedLines | None = None
        self._connect_timeout_s = connect_timeout_s
        self._clock = clock
        self._stop_listening: Callable[[], None] | None = None
        self._reactions = AppReactions(self.namespace, app_id, self._ray)

    # -- configuration ------------------------------------------------------------------

    @classmethod
    def from_config(cls, config: AppConfig) -> DrasiRay:
        app = cls(
            config.id,
            ray_config=config.ray,
            state_config=config.state,
            analytics_config=config.analytics,
            scaling_config=config.scaling,
            connect_timeout_s=config.connect_timeout_s,
        )
        for spec in config.sources:
            if isinstance(spec, PostgresSourceSpec):
                app.add_source(PostgresSource.from_spec(spec))
            else:
                app.add_source(PlatformSource.from_spec(spec))
        for query in config.queries:
            app.add_query(query)
        for reaction in config.reactions:
            app.add_reaction(reaction)
        return app

    @classmethod
    def from_yaml(cls, path: str | Path) -> DrasiRay:
        """Build an app from Drasi's YAML schema (``sources``) plus ``queries`` and ``ray``;
        ``${NAME}`` and ``${file:PATH}`` in its values are read from this process's environment
        and files (:func:`~drasi_ray.model.config.expand_secrets`)."""
        return cls.from_config(AppConfig.from_yaml(path, environ=os.environ))

    def add_source(self, source: PlatformSource | PostgresSource) -> DrasiRay:
        """Add a platform source, or a PostgreSQL source (its reader, and consumers of the
        stream it writes). A source that names no consumer group reads with the app's own,
        ``drasi_ray.<app id>`` (so apps sharing a stream each see every entry)."""
        if source.id in self._sources:
            raise ConfigError(f"source {source.id!r} is already added")
        if isinstance(source, PostgresSource):
            self._postgres[source.id] = source
            platform = source.platform_source(self.app_id)
        else:
            platform = source
        self._sources[source.id] = dataclasses.replace(
            platform, config=platform.config.in_app(self.app_id)
        )
        if self.running and source.auto_start:
            self._start_source(self._sources[source.id])
        return self

    def add_query(self, query: QueryConfig) -> DrasiRay:
        """Add a continuous query; its text is parsed now, so errors surface here."""
        if query.id in self._queries:
            raise ConfigError(f"query {query.id!r} is already added")
        engine = make_engine(query)
        check_middleware(query.middleware, query.pipelines)
        self._queries[query.id] = query
        self._engines[query.id] = engine
        if self.running and query.auto_start:
            self._check_sources(query)
            self._start_queries([query])
            self._reactions.refresh()
        return self

    @overload
    def add_reaction(self, target: str, reaction: AnyReaction) -> DrasiRay: ...

    @overload
    def add_reaction(self, target: AnyAppReaction) -> DrasiRay: ...

    def add_reaction(
        self, target: str | AnyAppReaction, reaction: AnyReaction | None = None
    ) -> DrasiRay:
        """Send a query's results to ``reaction`` too, from now on if the app is running:
        ``add_reaction(query_id, reaction)`` for a reaction inside the query's host
        (platform, jsonl, log, callback).

        ``add_reaction(spec)`` adds a reaction of the app, an actor of its own over the
        result streams of the queries it names (:class:`~drasi_ray.model.reaction_specs.
        HttpReaction`, :class:`~drasi_ray.model.reaction_specs.SseReaction`); the queries it
        names must be added first. Raises ConfigError naming the problem when it does not fit
        them (an unknown query, a template field the query does not return)."""
        if isinstance(target, (HttpReaction, SseReaction, PostgresStoredProcReaction)):
            return self._add_app_reaction(target)
        if not isinstance(target, str) or reaction is None:
            raise TypeError("add_reaction(query_id, reaction) or add_reaction(app_reaction)")
        query_id = target
        query = self._queries.get(query_id)
        if query is None:
            raise UnknownComponentError(f"unknown query {query_id!r}")
        updated = query.model_copy(update={"reactions": (*query.reactions, reaction)})
        self._queries[query_id] = updated
        if query_id in self._host_of:
            self._start_reaction(updated, reaction)
        return self

    def _start_reaction(self, query: QueryConfig, reaction: AnyReaction) -> None:
        """Start ``reaction`` on the running query's host; record the query's reactions."""
        (spec,) = resolve_specs([reaction], self._reaction_redis_url(query))
        ray.get(self._query_host(query.id).add_reaction.remote(query.id, spec))
        self._record_reactions(query)

    def remove_query(self, query_id: str) -> None:
        """Stop a query and forget it (while the app runs too): no shard routes to it any more,
        its reactions get its ``stopped`` signal and write what they hold, its subscriptions
        raise SubscriptionLostError on their next read, and its durable state (registration,
        subscriptions, result sequence, function state, element history) is deleted; its
        result stream stays.
        Raises UnknownComponentError for an unknown query, ConfigError for a query other
        queries read (query chaining)."""
        if query_id not in self._queries:
            raise UnknownComponentError(f"unknown query {query_id!r}")
        if query_id in self._chained():
            raise ConfigError(f"query {query_id!r} is read by other queries: it stays")
        host_name = self._host_of.get(query_id)
        if host_name is not None:
            ray.get(self._coordinator.unregister_query.remote(query_id))
            del self._host_of[query_id]
            self._given_stream.discard(query_id)
            host = self._hosts[host_name]
            try:
                timeout = launch.STOP_TIMEOUT_S
                ray.get(host.remove_query.remote(query_id, timeout), timeout=timeout)
            except ray.exceptions.RayActorError as exc:  # restarting: it will not host it again
                logger.warning("query %s: its host did not stop it (%s)", query_id, exc)
        del self._queries[query_id]
        del self._engines[query_id]

    def remove_source(self, source_id: str) -> None:
        """Stop a source's consumers (the batches in hand finish) and forget the source and
        its graph: every shard drops its elements, in memory and in Redis. Its streams and
        their consumer group stay (the producers' and the group's position: a source added
        again under that id starts with an empty graph where the group left off). Raises
        UnknownComponentError for an unknown source, ConfigError while a query reads it and
        for a PostgreSQL source (its reader and replication slot go with the app only)."""
        source = self._sources.get(source_id)
        if source is None or source_id in self._chain_sources:
            raise UnknownComponentError(f"unknown source {source_id!r}")
        readers = sorted(q.id for q in self._queries.values() if source_id in q.sources)
        if readers:
            raise ConfigError(f"source {source_id!r} is read by queries {readers}: remove them")
        if source_id in self._postgres:
            raise ConfigError(f"source {source_id!r} reads PostgreSQL: it cannot be removed")
        actors = self._consumers.pop(source_id, None) or self._created.pop(source_id, None)
        if source_id in self._fused_sources:  # consumer 0: stopped and forgotten by the fused actor
            ray.get(self._coordinator.remove_consumer.remote(source_id))
            self._fused_sources.discard(source_id)
        if actors is not None:
            launch.stop_consumers(self.namespace, source_id, actors)
        if self.running:
            ray.get(self._coordinator.drop_source.remote(source_id))
        del self._sources[source_id]

    def remove_reaction(self, query_id: str, name: str) -> int:
        """Stop the reactions of ``query_id`` that belong to the Reaction resource ``name``
        (each writes what it holds first); how many there were. Raises UnknownComponentError
        for an unknown query or a name none of its reactions has."""
        query = self._queries.get(query_id)
        if query is None:
            raise UnknownComponentError(f"unknown query {query_id!r}")
        kept = tuple(reaction for reaction in query.reactions if reaction.name != name)
        if len(kept) == len(query.reactions):
            raise UnknownComponentError(f"query {query_id!r} has no reaction {name!r}")
        updated = query.model_copy(update={"reactions": kept})
        self._queries[query_id] = updated
        if query_id in self._host_of:
            host = self._query_host(query_id)
            ray.get(host.remove_reaction.remote(query_id, name, launch.STOP_TIMEOUT_S))
            self._record_reactions(updated)
        return len(query.reactions) - len(kept)

    def app_reactions(self) -> dict[str, AnyAppReaction]:
        """The reactions of the app (HTTP, SSE, stored procedures), by id."""
        return dict(self._reactions.specs)

    def remove_app_reaction(self, reaction_id: str) -> AnyAppReaction:
        """Stop a reaction of the app (it delivers what its streams hold first, for a few
        seconds) and forget it; its spec. Its positions and dead letters stay in Redis.
        Raises UnknownComponentError for an id the app has no reaction of."""
        if reaction_id not in self._reactions.specs:
            raise UnknownComponentError(f"unknown reaction {reaction_id!r}")
        return self._reactions.remove(reaction_id)

    def _record_reactions(self, query: QueryConfig) -> None:
        """Tell the coordinator a running query's reactions (with the result stream the app's
        reactions read), so a restarted host has them."""
        resolved = self._with_reaction_defaults(query).reactions
        ray.get(self._coordinator.set_reactions.remote(query.id, resolved))

    def query_config(self, query_id: str) -> QueryConfig:
        """The settings ``query_id`` was added with (its reactions as added since)."""
        query = self._queries.get(query_id)
        if query is None:
            raise UnknownComponentError(f"unknown query {query_id!r}")
        return query

    def source(self, source_id: str) -> PlatformSource | PostgresSource:
        """The source ``source_id`` as it was added (the queries' chain sources excluded)."""
        source = self._sources.get(source_id)
        if source is None or source_id in self._chain_sources:
            raise UnknownComponentError(f"unknown source {source_id!r}")
        return self._postgres.get(source_id, source)

    def _add_app_reaction(self, spec: AnyAppReaction) -> DrasiRay:
        columns = {query_id: engine.column_names for query_id, engine in self._engines.items()}
        self._reactions.add(spec, columns)
        if self.running:
            for query_id in self._host_of:
                if self._reactions.covers(query_id):
                    self._ensure_result_stream(query_id)
            self._start_app_reaction(spec)
            self._reactions.refresh()
        return self

    def _ensure_result_stream(self, query_id: str) -> None:
        """Give a running query the platform reaction a reaction of the app reads, if it has
        none: on its host, not in its settings (``query_config`` stays what the user gave;
        :meth:`_with_result_stream` adds it wherever the query is registered)."""
        query = self._queries[query_id]
        if query_id in self._given_stream or any(
            isinstance(r, PlatformReaction) for r in query.reactions
        ):
            return
        self._given_stream.add(query_id)
        self._start_reaction(query, PlatformReaction())

    def _start_app_reaction(self, spec: AnyAppReaction) -> None:
        relayed = not isinstance(spec, SseReaction)
        streams = {
            query_id: self._result_stream(query)
            for query_id, query in self._queries.items()
            if relayed and query_id in (spec.queries or ())
        }
        placement = {}
        if relayed:
            placement = self._placement().next_options(names.reaction_actor(spec.id))
        self._reactions.start(spec, streams, placement)

    def _result_stream(self, query: QueryConfig) -> tuple[str | None, str]:
        """(Redis URL, stream) of the query's platform reaction, as the app resolves it."""
        configured = self._with_reaction_defaults(query)
        platform = next(r for r in configured.reactions if isinstance(r, PlatformReaction))
        return platform.redis_url, platform.stream or keys.result_stream(query.id)

    def reaction_url(self, reaction_id: str) -> str:
        """The base URL an SSE reaction (the dashboard) listens at, once the app runs."""
        if reaction_id not in self._reactions.specs:
            raise UnknownComponentError(f"unknown reaction {reaction_id!r}")
        if reaction_id not in self._reactions.urls:
            raise NotRunningError(f"reaction {reaction_id!r} is not listening; call start()")
        return self._reactions.urls[reaction_id]

    @property
    def reaction_ids(self) -> list[str]:
        """The ids of the app's reactions that run as actors (HTTP, SSE)."""
        return list(self._reactions.specs)

    def _reaction_redis_url(self, query: QueryConfig) -> str | None:
        """Where a platform reaction writes by default (:meth:`StateConfig.results_redis_url`)."""
        source = self._sources.get(query.sources[0])
        return self._state.results_redis_url(None if source is None else source.config.redis_url)

    def _with_reaction_defaults(self, query: QueryConfig) -> QueryConfig:
        """The query's reactions with their defaults filled."""
        specs = resolve_specs(
            self._with_result_stream(query).reactions, self._reaction_redis_url(query)
        )
        return query.model_copy(update={"reactions": tuple(specs)})

    def _with_result_stream(self, query: QueryConfig) -> QueryConfig:
        """The query with a platform reaction if a reaction of the app reads its result
        stream and it has none."""
        if not self._reactions.covers(query.id) or any(
            isinstance(reaction, PlatformReaction) for reaction in query.reactions
        ):
            return query
        return query.model_copy(update={"reactions": (*query.reactions, PlatformReaction())})

    def scale(self, source_id: str, consumers: int) -> int:
        """Run ``consumers`` consumer actors for ``source_id``; returns the previous count.

        Works on this app's own actors, or (when this object did not start the app) on the
        named actors of a running app in the same Ray namespace, e.g. from ``drasi-ray scale``;
        actors started that way are detached. See :mod:`drasi_ray.actors.scaling` for how scaling
        down hands pending entries over. Raises NotRunningError if no consumer runs.
        """
        source = self._sources.get(source_id)
        if source is None:
            raise UnknownComponentError(f"unknown source {source_id!r}")
        if consumers < 1:
            raise ConfigError("consumers must be >= 1")
        actors = self._consumers.get(source_id) or scaling.find_consumers(self.namespace, source_id)
        if not actors:
            raise NotRunningError(
                f"source {source_id!r} has no running consumers in {self.namespace}"
            )
        before = len(actors)
        config = source.config.model_copy(update={"consumers": consumers})
        if consumers > before:
            indices = range(before, consumers)
            new_names = [names.consumer_actor(source_id, index) for index in indices]
            options: dict[str, Any] = {
                "num_cpus": self._ray.actor_num_cpus,
                **self._placement().next_options(*new_names),
            }
            if source_id not in self._consumers:
                options["lifetime"] = "detached"
            started = scaling.start_consumers(self.namespace, source_id, config, indices, options)
            self._track_consumers(source, config, actors + started)
        elif consumers < before:
            # Retired actors are killed before their pending entries are handed over: stop
            # tracking them first, so a failed hand-over never leaves dead actors in the app.
            self._track_consumers(source, config, actors[:consumers])
            scaling.retire_consumers(source_id, source.config, actors[consumers:], consumers)
        return before

    def scale_shards(self, shards: int) -> int:
        """Partition the element store over ``shards`` store shards; returns the previous
        count.

        Every consumer pauses (the batch in hand finishes; nothing is lost or applied twice:
        entries wait unacked), the shards hand each other the elements whose owner changes,
        every query is bootstrapped again from the new shards, and the consumers resume. Works
        on this app's actors or on a running app's (from another process, e.g.
        ``drasi-ray scale --shards``). Raises NotRunningError if the app does not run.
        """
        if shards < 1:
            raise ConfigError("shards must be >= 1")
        coordinator = self._coordinator or scaling.find_coordinator(self.namespace)
        if coordinator is None:
            raise NotRunningError(f"no app is running in {self.namespace}")
        before: int = ray.get(coordinator.shard_count.remote())
        if shards == before:
            return before
        consumers = [
            actor
            for source_id in self._sources
            for actor in self._consumers.get(source_id)
            or scaling.find_consumers(self.namespace, source_id)
        ]
        ray.get([consumer.pause.remote() for consumer in consumers])
        try:
            started = [
                launch.start_shard(
                    self._shard_settings(index, shards),
                    self._ray,
                    self._placement(),
                    detached=self._coordinator is None,
                )
                for index in range(before, shards)
            ]
            ray.get([shard.ping.remote() for shard in started])
            ray.get(coordinator.rescale.remote(shards))
            for index in range(shards, before):
                launch.best_effort(functools.partial(self._kill_shard, index))
            if self._coordinator is not None:
                self._shards = [*self._shards[: shards - 1], *started]
        finally:
            ray.get([consumer.resume.remote() for consumer in consumers])
        return before

    def _kill_shard(self, index: int) -> None:
        """End store shard ``index`` for good (a rescale retired it)."""
        ray.kill(ray.get_actor(names.shard_actor(index), namespace=self.namespace), no_restart=True)

    def _track_consumers(
        self, source: PlatformSource, config: PlatformSourceConfig, actors: list[Any]
    ) -> None:
        self._sources[source.id] = dataclasses.replace(source, config=config)
        if source.id in self._consumers:  # not when scaling another process's app
            self._consumers[source.id] = actors

    @property
    def query_ids(self) -> list[str]:
        return list(self._queries)

    @property
    def source_ids(self) -> list[str]:
        return list(self._sources)

    @property
    def running(self) -> bool:
        return self._coordinator is not None

    def _placement(self) -> Placer:
        if self._placer is None:
            self._placer = Placer(self._ray.placement)
        return self._placer

    # -- lifecycle ----------------------------------------------------------------------

    def start(self, *, sources: bool = True) -> DrasiRay:
        """Start every auto-start source and query; return once all consumers are reading.

        First every Redis the app uses must answer within ``connect_timeout_s``
        (:class:`~drasi_ray.model.errors.RedisUnavailableError` or ``RedisRejectedError``
        naming it otherwise, before any actor starts). Ray: the one this process is connected
        to, else the cluster of ``ray.address`` or ``RAY_ADDRESS``, else a new local Ray on
        127.0.0.1 (:mod:`drasi_ray.actors.cluster`; :attr:`ray_connection` says which).
        ``sources=False`` starts the queries only: subscribe, then :meth:`start_sources`, to
        receive the results of what the streams already hold.
        """
        if self.running:
            return self
        self._add_chain_sources()
        for query in self._queries.values():
            self._check_sources(query)
        self._check_redis()
        self._reactions.read_tokens()
        self._ensure_ray()
        self._watch_forwarded_lines()
        self._start_app_reactions()
        self._start_analytics()
        shards = self._scaling.shards
        self._fused = self._scaling.fused(self._state.durable)
        self._coordinator, self._shards = launch.start_store(
            self.namespace,
            lambda index: self._shard_settings(index, shards),
            shards,
            self._ray,
            self._placement(),
            self._fused_settings() if self._fused else None,
        )
        self._start_hosts()  # their processes start while the store's start and load,
        self._create_consumers()  # and the consumers' (they read once start_sources says)
        launch.wait_loaded([self._coordinator, *self._shards])
        if self._analytics is not None:
            self._analytics.attach(self._coordinator)
        if isinstance(self._clock, ManualClock):
            self._clock_moved(self._clock.now_ms())
            self._stop_listening = self._clock.listen(self._clock_moved)
        self._start_queries([query for query in self._queries.values() if query.auto_start])
        self._reactions.refresh()
        if sources:
            self.start_sources()
        return self

    def _create_consumers(self) -> None:
        """Create the consumer actors of the sources the app starts with (not consumer 0 of
        those the fused actor reads): their processes start now, and each reads once
        :meth:`start_sources` tells it."""
        for source in self._sources.values():
            if source.auto_start:
                first = 1 if source.id in self._fused_sources else 0
                self._created[source.id] = launch.create_consumers(
                    self.namespace, source, self._ray, self._placement(), first
                )

    def start_sources(self) -> DrasiRay:
        """Start the consumers of every auto-start source not yet started (after
        ``start(sources=False)``); return once they all read."""
        if not self.running:
            raise NotRunningError("the app is not running; call start()")
        try:
            for source in self._sources.values():
                if source.auto_start and source.id not in self._consumers:
                    self._start_source(source)
        except DrasiRayError:
            self.stop()  # a source that cannot start (a PostgreSQL error): nothing left running
            raise
        return self

    @property
    def ray_connection(self) -> RayConnection | None:
        """Which Ray the app runs on (None before start)."""
        return self._ray_connection

    def _redis_urls(self) -> dict[str, str]:
        """Every Redis the app uses, each with what it is for (the first use named)."""
        uses: dict[str, str] = {}
        for source in self._sources.values():
            if source.id not in self._chain_sources:
                uses.setdefault(source.config.redis_url, f"source {source.id!r}")
        state = self._state_url()
        if state is not None:
            uses.setdefault(state, "state.redis_url")
        for query in self._queries.values():
            for reaction in self._with_reaction_defaults(query).reactions:
                if isinstance(reaction, PlatformReaction) and reaction.redis_url is not None:
                    uses.setdefault(reaction.redis_url, f"platform reaction of {query.id!r}")
        return uses

    def _log_reaction_queries(self) -> list[str]:
        """Queries whose log reaction writes its lines, ``stopped`` last, to the host's
        stdout or stderr (Ray forwards them to the driver)."""
        return [
            query.id
            for query in self._queries.values()
            if any(
                isinstance(r, LogReaction) and r.to != "logger" and r.include_control
                for r in query.reactions
            )
        ]

    def _watch_forwarded_lines(self) -> None:
        if self._owns_ray and self._log_reaction_queries():
            self._forwarded = ForwardedLines(STOPPED_LINE).start()

    def _check_redis(self) -> None:
        """Every Redis of the sources and the state answers (or one clear error), before
        anything starts. A platform reaction's Redis is not waited for: a reaction that cannot
        write retries on its own and holds back nothing else."""
        for url, what in self._redis_urls().items():
            if not what.startswith("platform reaction"):
                connections.check(url, what, self._connect_timeout_s)

    def _start_app_reactions(self) -> None:
        """Start the reactions of the app first: an HTTP reaction's first position is then
        before its queries' first result, and one that cannot start (a port in use) fails
        the start before anything else runs (what did start is stopped)."""
        try:
            for spec in self._reactions.specs.values():
                self._start_app_reaction(spec)
        except BaseException:
            self._reactions.stop()
            if self._owns_ray:
                ray.shutdown()
                self._owns_ray = False
            raise

    def _fused_settings(self) -> FusedSettings:
        """What the fused actor runs besides shard 0: the shared host, and consumer 0 of each
        source the app starts with (those of sources added later are added to it:
        :meth:`_start_source`)."""
        specs = tuple(_fused_spec(source) for source in self._sources.values() if source.auto_start)
        self._fused_sources = {spec.source_id for spec in specs}
        return FusedSettings(self._shard_settings(0, 1), ClockSetting.of(self._clock), specs)

    def _shard_settings(self, index: int, shards: int) -> ShardSettings:
        return ShardSettings(
            self.namespace,
            self.app_id,
            index,
            shards,
            self._state_url(),
            self._failpoints,
            self._analytics_name(),
            self._ray.direct_calls,
            tuple(self._redis_urls()),
        )

    def _analytics_name(self) -> str | None:
        """The change-log actor's name when analytics are enabled (shards feed it)."""
        if not self._analytics_config.enabled:
            return None
        from drasi_ray.analytics.actor import ANALYTICS_ACTOR

        return ANALYTICS_ACTOR

    def _start_hosts(self) -> None:
        """Start the shared query hosts, then one per dedicated query (placement order)."""
        queries = [query for query in self._queries.values() if query.auto_start]
        shared = [query for query in queries if not query.dedicated_host]
        if self._fused:  # the fused actor is the one shared host
            self._shared_hosts = 1
            self._hosts[fused.HOST] = self._coordinator
        else:
            self._shared_hosts = self._scaling.query_hosts or launch.default_hosts(len(shared))
            for index in range(self._shared_hosts if shared else 0):
                self._host(names.shared_host(index))
        for query in queries:
            if query.dedicated_host:
                self._host(names.dedicated_host(query.id))

    def _host(self, name: str) -> Any:
        """The query host ``name``, started if need be."""
        actor = self._hosts.get(name)
        if actor is None:
            actor = self._hosts[name] = launch.start_host(
                self.namespace,
                name,
                self.app_id,
                self._state_url(),
                ClockSetting.of(self._clock),
                self._ray,
                self._placement(),
            )
        return actor

    def _host_name_for(self, query: QueryConfig) -> str:
        """A dedicated host, or the shared host running the fewest queries (the lowest index
        of those)."""
        if query.dedicated_host:
            return names.dedicated_host(query.id)
        if self._fused:
            return fused.HOST
        if self._shared_hosts == 0:
            self._shared_hosts = self._scaling.query_hosts or launch.default_hosts(1)
        load = {names.shared_host(index): 0 for index in range(self._shared_hosts)}
        for host in self._host_of.values():
            if host in load:
                load[host] += 1
        return min(load, key=lambda host: (load[host], int(host.rsplit("-", 1)[1])))

    def _start_analytics(self) -> str | None:
        """Start the change-log actor if analytics are enabled; its name (None: disabled)."""
        if not self._analytics_config.enabled:
            return None
        from drasi_ray.analytics.actor import ANALYTICS_ACTOR, AnalyticsActor
        from drasi_ray.analytics.facade import Analytics

        actor = AnalyticsActor.options(  # type: ignore[attr-defined]
            name=ANALYTICS_ACTOR,
            namespace=self.namespace,
            get_if_exists=True,
            num_cpus=self._ray.actor_num_cpus,
        ).remote(self._analytics_config)
        self._analytics = Analytics(actor, self._analytics_config)
        return ANALYTICS_ACTOR

    @property
    def analytics(self) -> Analytics:
        """The change log and its Spark analytics (:class:`drasi_ray.analytics.facade.Analytics`).

        Needs ``analytics.enabled`` and a running app; Spark starts on first use.
        """
        if not self._analytics_config.enabled:
            raise ConfigError("analytics are not enabled (analytics: {enabled: true})")
        if self._analytics is None:
            raise NotRunningError("the app is not running; call start()")
        return self._analytics

    def _state_url(self) -> str | None:
        """The Redis holding durable state (:meth:`StateConfig.state_redis_url`)."""
        first = next(iter(self._sources.values()), None)
        return self._state.state_redis_url(None if first is None else first.config.redis_url)

    def _chained(self) -> set[str]:
        """Ids of the queries other queries read as a source (query chaining)."""
        return {
            source
            for query in self._queries.values()
            for source in query.sources
            if source in self._queries and source not in self._sources
        } | self._chain_sources

    def _add_chain_sources(self) -> None:
        """A platform source per chained query, reading its chain stream from the start
        (:mod:`drasi_ray.reactions.chain`). Chained queries must be added before start()."""
        url = self._chain_url()
        for query_id in sorted(self._chained() - self._chain_sources):
            if url is None:
                raise ConfigError(
                    f"query {query_id!r} is read by another query: chaining needs a Redis "
                    "(add a source or set state.redis_url)"
                )
            self._sources[query_id] = (
                PlatformSource.builder(query_id)
                .with_redis_url(url)
                .with_stream_key(keys.chain_stream(self.app_id, query_id))
                .with_consumer_group(keys.consumer_group(self.app_id))
                .with_start_id("0")
                .with_block_ms(100)
                .build()
            )
            self._chain_sources.add(query_id)

    def _chain_url(self) -> str | None:
        """The Redis holding chain streams: the state Redis, else the first source's."""
        if self._state.redis_url is not None:
            return self._state.redis_url
        first = next((s for s in self._sources.values() if s.id not in self._chain_sources), None)
        return None if first is None else first.config.redis_url

    def _check_sources(self, query: QueryConfig) -> None:
        missing = [source for source in query.sources if source not in self._sources]
        if missing:
            raise ConfigError(f"query {query.id!r} reads unknown source(s) {missing}")

    def _ensure_ray(self) -> None:
        if ray.is_initialized():
            self._ray_connection = self._ray_connection or RayConnection(None, "ray.init", False)
            return
        self._ray_connection = cluster.connect(self._ray, self.namespace, self._connect_timeout_s)
        self._owns_ray = self._ray_connection.owned
        logger.info("app %s runs on %s", self.app_id, self._ray_connection.describe())

    def _start_queries(self, queries: Sequence[QueryConfig]) -> None:
        """Host the queries, then register them: this returns once each is bootstrapped from
        every shard. All are hosted together, then registered together (one call: the
        control plane bootstraps them concurrently), so a start's cost grows little with the
        number of queries."""
        if not queries:
            return
        registrations: list[QueryRegistration] = []
        for query in queries:
            registrations.append(registration := self._registration(query))
            self._host_of[query.id] = registration.host  # the next one's host counts it
        try:
            ray.get([self._host(r.host).add_query.remote(r) for r in registrations])
        except BaseException:
            for registration in registrations:
                del self._host_of[registration.query_id]
            raise
        ray.get(self._coordinator.register_queries.remote(registrations))

    def _registration(self, query: QueryConfig) -> QueryRegistration:
        engine = self._engines[query.id]
        if self._with_result_stream(query) is not query:
            self._given_stream.add(query.id)
        return QueryRegistration(
            self._with_reaction_defaults(query),
            self._host_name_for(query),
            _label_tuple(engine.node_labels),
            _label_tuple(engine.relation_labels),
            engine.history_limits,
            self._chain_url() if query.id in self._chain_sources else None,
        )

    def _start_source(self, source: PlatformSource) -> None:
        config = source.config
        # The group exists before start() returns, so nothing published after it is missed.
        admin.ensure_group(self._client(config.redis_url), config)
        first: list[Any] = []
        if self._fused and source.id not in self._fused_sources:  # added while the app runs
            ray.get(self._coordinator.add_consumer.remote(_fused_spec(source)))
            self._fused_sources.add(source.id)
        if source.id in self._fused_sources:  # consumer 0 runs in the fused actor
            ray.get(self._coordinator.consumer_ready.remote(source.id))
            first = [FusedConsumer(self._coordinator, source.id)]
        actors = self._created.pop(source.id, None)
        if actors is None:
            actors = launch.create_consumers(
                self.namespace, source, self._ray, self._placement(), first=len(first)
            )
        launch.start_consumers(actors)
        self._consumers[source.id] = first + actors
        if source.id in self._postgres:
            self._start_reader(self._postgres[source.id])

    def _start_reader(self, source: PostgresSource) -> None:
        """Start a PostgreSQL source's reader (after its consumers, so its snapshot is read
        as it is written) and wait until it streams (:func:`~drasi_ray.actors.launch.
        start_reader`: a startup error is raised as it is)."""
        self._readers[source.id] = launch.start_reader(
            self.namespace,
            source,
            self._sources[source.id].config.consumer_group,
            self.app_id,
            self._ray,
            self._placement(),
        )

    def stop(self) -> None:
        """Drain in-flight batches, stop every actor, and shut Ray down if we started it
        (also after a start that was interrupted or failed half-way)."""
        if not self.running:
            if self._owns_ray:
                ray.shutdown()
                self._owns_ray = False
            return
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
        hosts = list(self._hosts.values())
        launch.stop_actors(
            self.namespace,
            self._coordinator,
            self._shards,
            hosts,
            {**self._created, **self._consumers},
            readers=list(self._readers.values()),
            after_hosts=self._after_hosts_stopped,
        )
        self._readers.clear()
        self._consumers.clear()
        self._created.clear()
        self._hosts.clear()
        self._host_of.clear()
        self._given_stream.clear()
        self._shards = []
        self._shared_hosts = 0
        self._fused = False
        self._fused_sources = set()
        self._coordinator = None
        for client in self._redis.values():
            client.close()
        self._redis.clear()
        if self._analytics is not None:
            launch.best_effort(self._analytics.stop)  # Spark, then the change log's actor
            self._analytics = None
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False

    def _after_hosts_stopped(self) -> None:
        """Once the hosts signalled ``stopped``: the log reactions' last lines reach the user,
        then the app's reactions deliver what the hosts flushed."""
        if self._forwarded is not None:
            self._forwarded.wait_for(
                [(f'"queryId":"{q}"', STOPPED_LINE) for q in self._log_reaction_queries()],
                LOG_FORWARD_TIMEOUT_S,
            )
            self._forwarded.close()
            self._forwarded = None
        self._reactions.stop()

    def __enter__(self) -> DrasiRay:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- results ------------------------------------------------------------------------

    def subscribe(
        self,
        query_id: str,
        *,
        capacity: int | None = None,
        mode: DispatchMode | None = None,
        include_control: bool = False,
        timeout: float = READ_TIMEOUT_S,
    ) -> Subscription:
        """Subscribe to a query's results from now on.

        The buffer's size and dispatch mode default to the ``dispatch_buffer_capacity`` and
        ``dispatch_mode`` of the query's first source. The subscription outlives restarts of
        the query's host and of the coordinator, together too with durable state
        (:class:`~drasi_ray.actors.subscription.Subscription`). While the coordinator restarts
        this waits, up to ``timeout`` (then ComponentUnavailableError).
        """
        host = self._query_host(query_id)
        source = self._sources[self._queries[query_id].sources[0]]
        spec = SubscriberSpec(
            query_id,
            f"sub-{uuid.uuid4().hex[:12]}",
            capacity or source.dispatch_buffer_capacity,
            mode or source.dispatch_mode,
        )
        coordinator = self._coordinator
        barriers.read_restartable(
            lambda: coordinator.subscribe.remote(spec), "the coordinator", timeout
        )
        return Subscription(spec, host, coordinator, include_control)

    def results(self, query_id: str, timeout: float = READ_TIMEOUT_S) -> list[dict[str, Any]]:
        """The query's current result rows. While its host restarts this waits, up to
        ``timeout``, then raises ComponentUnavailableError."""
        host = self._query_host(query_id)
        rows: list[dict[str, Any]] = barriers.read_restartable(
            lambda: host.results.remote(query_id, timeout),
            f"the host of query {query_id!r}",
            timeout,
        )
        return rows

    def _query_host(self, query_id: str) -> Any:
        if query_id not in self._queries:
            raise UnknownComponentError(f"unknown query {query_id!r}")
        if not self.running or query_id not in self._host_of:
            raise NotRunningError(f"query {query_id!r} is not running; call start()")
        return self._hosts[self._host_of[query_id]]

    def flush_reactions(self, timeout: float = 30.0) -> None:
        """Return once every query's reactions wrote every result produced so far, and every
        reaction of the app took in what the result streams then hold.

        Call after :meth:`wait_until_idle` to read a result stream or file deterministically.
        Raises TimeoutError if a reaction is still behind (e.g. failing) after ``timeout``.
        """
        hosts = list(self._hosts.values())
        deadline = time.monotonic() + timeout
        behind = sorted(
            query_id
            for late in ray.get([host.flush_reactions.remote(timeout) for host in hosts])
            for query_id in late
        )
        if behind:
            raise TimeoutError(f"reactions of {behind} not flushed within {timeout:.1f}s")
        late = self._reactions.flush(max(deadline - time.monotonic(), 0.001))
        if late:
            raise TimeoutError(f"reactions {late} not flushed within {timeout:.1f}s")

    def wait_until_idle(self, timeout: float = 30.0) -> None:
        """Return once every entry appended to the source streams (every stream of each
        source) before this call is acked and its results are delivered to the subscriptions:
        consumers ack once the shards applied a batch durably, and the coordinator's delivery
        barrier then waits for the query hosts (:mod:`drasi_ray.actors.barriers`). With
        chained queries this repeats once per level of the chain, after the upstream queries
        wrote their rows to their chain streams. Raises TimeoutError otherwise.
        """
        if not self.running:
            raise NotRunningError("the app is not running; call start()")
        deadline = time.monotonic() + timeout
        for _level in range(len(self._chain_sources) + 1):
            self._drain_once(deadline, timeout)
            if not self._chain_sources:
                return
            for query_id in sorted(self._chain_sources):
                barriers.flush_chain(self._query_host, query_id, deadline, timeout)

    def _drain_once(self, deadline: float, timeout: float) -> None:
        barriers.sync_readers(self._readers, deadline, timeout)
        sources = [
            (self._client(src.config.redis_url), src.config)
            for src in self._sources.values()
            if src.id in self._consumers
        ]
        barriers.drain_streams(sources, deadline, timeout)
        barriers.flush_deliveries(self._coordinator, deadline, timeout)
        remaining = max(deadline - time.monotonic(), 0.001)
        barriers.call_restartable(self._stateful_calls(), "settle", remaining)

    def _stateful_calls(self, *args: Any) -> list[tuple[Any, tuple[Any, ...]]]:
        """(host, arguments) of each running query that schedules re-evaluations: its host,
        its id and ``args``."""
        return [
            (self._hosts[host], (query_id, *args))
            for query_id, host in self._host_of.items()
            if self._engines[query_id].stateful
        ]

    def _clock_moved(self, now_ms: int) -> None:
        """A manual clock moved: record its time (a restarted query actor resumes at it), then
        move every query's clock and wait until they ran what came due."""
        url = self._state_url()
        if url is not None:
            self._client(url).set(keys.manual_clock(self.app_id), now_ms)
        barriers.call_restartable(self._stateful_calls(now_ms), "advance_clock", CLOCK_TIMEOUT_S)

    def _client(self, url: str) -> redis.Redis:
        client = self._redis.get(url)
        if client is None:
            client = self._redis[url] = connections.client(url)
        return client

    # -- introspection ------------------------------------------------------------------

    def status(self, timeout: float = READ_TIMEOUT_S) -> AppStatus:
        """A snapshot of every component (:class:`~drasi_ray.actors.status.AppStatus`):
        consumers, store shards (``coordinator`` adds them up), query hosts and queries (each
        with the memory its state holds); ``as_dict()`` is its plain-data form. An actor that
        does not answer is reported unavailable; while the coordinator restarts this waits, up
        to ``timeout``, then raises ComponentUnavailableError."""
        if not self.running:
            return AppStatus(self.app_id, False)
        return gather_status(
            self.app_id,
            self._coordinator,
            self._hosts,
            self._host_of,
            self._consumers,
            readers=self._readers,
            reactions=self._reactions.status(),
            timeout=timeout,
        )

    def coordinator_actor(self) -> Any:
        """The Ray handle of the coordinator, store shard 0 (for operations and tests)."""
        if not self.running:
            raise NotRunningError("the app is not running; call start()")
        return self._coordinator

    def shard_actors(self) -> list[Any]:
        """The Ray handles of every store shard, by index (0 is the coordinator)."""
        if not self.running:
            raise NotRunningError("the app is not running; call start()")
        return [self._coordinator, *self._shards]

    def query_actor(self, query_id: str) -> Any:
        """The Ray handle of the query host that runs ``query_id`` (operations, crash tests)."""
        return self._query_host(query_id)

    def placement_plan(self) -> dict[str, str]:
        """Actor name -> the id of the node ``round_robin`` placement dealt it (empty with
        ``spread`` or ``pack``). The affinity is soft: an actor may run elsewhere
        (:mod:`drasi_ray.actors.placement`)."""
        return dict(self._placement().plan)

    def query_host_actors(self) -> dict[str, Any]:
        """The Ray handles of the query hosts, by name."""
        return dict(self._hosts)

    def host_of(self, query_id: str) -> str:
        """The name of the query host that runs ``query_id``."""
        self._query_host(query_id)
        return self._host_of[query_id]

    def reader_actor(self, source_id: str) -> Any:
        """The Ray handle of a PostgreSQL source's reader (for operations and tests)."""
        if source_id not in self._readers:
            raise UnknownComponentError(f"source {source_id!r} has no running reader")
        return self._readers[source_id]

    def consumer_actors(self, source_id: str) -> list[Any]:
        """The Ray handles of a source's consumer actors (for operations and tests)."""
        if source_id not in self._consumers:
            raise UnknownComponentError(f"source {source_id!r} is not running")
        return list(self._consumers[source_id])

    def elements(self, source_id: str) -> list[Any]:
        """The current graph of a source (every shard's elements)."""
        if not self.running:
            raise NotRunningError("the app is not running; call start()")
        return list(ray.get(self._coordinator.elements.remote(source_id)))


def _fused_spec(source: PlatformSource) -> FusedConsumerSpec:
    """Consumer 0 of ``source`` as the fused actor runs it."""
    return FusedConsumerSpec(source.id, source.config.in_fused_actor(), source.consumer_names[0])


def _label_tuple(labels: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if labels is None else tuple(sorted(labels))
