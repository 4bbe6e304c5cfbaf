"""The whole pipeline in one process, without Ray or Redis: for tests, debugging and examples.

:class:`InProcessApp` wires the same Ray-free cores the actors wrap: platform events are
decoded by the consumer's decoder (:func:`~drasi_ray.source.decode.decode_entry`), split over
the store shards by a :class:`~drasi_ray.shards.dispatch.ShardDispatcher`, applied by each
shard's :class:`~drasi_ray.shards.service.ShardService`, delivered to the query hosts'
:class:`~drasi_ray.host.core.QueryHost` (each query a :class:`~drasi_ray.host.hosted.
HostedQuery`: merge order, inbox, pipelines, engine, result numbering, reactions), registered
and bootstrapped by the :class:`~drasi_ray.coordinator.control.ControlPlane`. The calls between
them go through the direct lines' protocols (:mod:`drasi_ray.shards.calls`); with ``carry``
(the default) every payload is pickled and unpickled on the way, as a line carries it
(:mod:`drasi_ray.model.wire`), so a value that would not survive the trip fails here too.

What is left out: Ray (placement, restarts, the lines' sockets), Redis (the streams, acks,
dead letters and durable state: everything is in memory), and the consumer's loop (each
:meth:`InProcessApp.publish` is one entry, applied before it returns). Reactions that need no
Redis (callback, log, jsonl) run; a platform reaction needs one.

The app runs its own event loop, only while one of its methods runs; it is used from plain
(not async) code::

    with InProcessApp(shards=2) as app:
        app.add_query(QueryConfig(id="hot", query="MATCH (s:Sensor) WHERE s.t > 70 "
                                  "RETURN s.id AS id", sources=("sensors",)))
        feed = app.subscribe("hot")
        app.publish("sensors", change_event("i", node("s1", ["Sensor"], {"t": 75}), ts_ns))
        feed.drain()  # [QueryResult(... ADD {"id": "s1"} ...)]
"""

from __future__ import annotations

import asyncio
import itertools
import pickle
import uuid
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from drasi_ray.coordinator.control import ControlPlane
from drasi_ray.coordinator.local import LocalControl
from drasi_ray.host.core import QueryHost
from drasi_ray.host.local import LocalHost
from drasi_ray.host.runner import make_engine
from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.clock import Clock, ClockSetting
from drasi_ray.model.config import DispatchMode, QueryConfig
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec
from drasi_ray.model.results import Delivered, QueryResult
from drasi_ray.model.wire import ResultBatch
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.shards.dispatch import ShardDispatcher
from drasi_ray.shards.local import LocalShard
from drasi_ray.shards.reports import BatchReport
from drasi_ray.shards.service import ShardService
from drasi_ray.source.decode import decode_entry, encode_cloud_event
from drasi_ray.source.middleware import check_middleware

T = TypeVar("T")

APP_ID = "inprocess"


def carried(value: T) -> T:
    """``value`` after the trip a line makes it (pickled, then unpickled)."""
    copy: T = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return copy


class _Cluster:
    """The shards and hosts of an :class:`InProcessApp`, as its control plane finds them."""

    def __init__(self, shards: list[ShardService], hosts: dict[str, QueryHost]) -> None:
        self._shards = shards
        self._hosts = hosts

    def shard(self, index: int) -> ShardService:
        return self._shards[index]

    def host(self, name: str) -> QueryHost:
        return self._hosts[name]

    def shards_alive(self) -> int:
        return len(self._shards)

    def hosts_alive(self) -> list[str]:
        return sorted(self._hosts)


class InProcessSubscription:
    """A subscription to a query's results in an :class:`InProcessApp`."""

    def __init__(self, app: InProcessApp, spec: SubscriberSpec, include_control: bool) -> None:
        self._app = app
        self.spec = spec
        self._include_control = include_control

    def drain(self) -> list[Delivered]:
        """Every result since the last call (control signals only if asked for)."""
        spec = self.spec
        items = self._app.run(self._app.take(spec.query_id, spec.subscriber_id))
        if self._include_control:
            return list(items)
        return [item for item in items if isinstance(item, QueryResult)]


class InProcessApp:
    """Decode, shards, hosts, engine and reactions in one process (module docstring).

    ``shards``: store shards (K); ``hosts``: query hosts the queries are dealt over;
    ``clock``: the clock of Drasi's future functions (the wall clock by default; a
    :class:`~drasi_ray.model.clock.ManualClock` stays where it was made); ``carry``: pickle
    every payload between the parts, as the lines do; ``strict``: a query that fails to apply
    a change raises its error from :meth:`apply` (in the app it records it and goes on).
    """

    def __init__(
        self,
        *,
        shards: int = 1,
        hosts: int = 1,
        clock: Clock | None = None,
        carry: bool = True,
        strict: bool = True,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._carry = carry
        self._strict = strict
        self._entry_ids: dict[str, itertools.count[int]] = {}
        self._host_names = [f"host-{index}" for index in range(max(hosts, 1))]
        self._placed: dict[str, str] = {}  # query id -> host name
        self._engines: dict[str, ContinuousQuery] = {}
        self.run(self._start(max(shards, 1), ClockSetting.of(clock)))

    async def _start(self, shard_count: int, clock: ClockSetting) -> None:
        self.hosts = {name: QueryHost(name, APP_ID, clock=clock) for name in self._host_names}
        self.shards = [self._shard(index, shard_count) for index in range(shard_count)]
        self.control = ControlPlane(self.shards[0], _Cluster(self.shards, self.hosts))
        await self.control.loaded
        carry = carried if self._carry else None
        self._dispatcher = ShardDispatcher(
            "inprocess",
            LocalControl(self.control),
            lambda index: LocalShard(self.shards[index], carry),
        )

    def _shard(self, index: int, shards: int) -> ShardService:
        carry = carried if self._carry else None
        return ShardService(index, shards, lambda host: LocalHost(self.hosts[host], carry))

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the app's event loop until it is done."""
        return self._loop.run_until_complete(work)

    # -- queries ------------------------------------------------------------------------

    def add_query(self, config: QueryConfig) -> int:
        """Host ``config``'s query (on the host running the fewest) and register it: it is
        bootstrapped from every shard when this returns; the elements it was loaded with.
        Raises QuerySyntaxError or ConfigError as ``DrasiRay.add_query`` does."""
        engine = make_engine(config)
        check_middleware(config.middleware, config.pipelines)
        load = {name: 0 for name in self._host_names}
        for name in self._placed.values():
            load[name] += 1
        host = min(self._host_names, key=lambda name: load[name])
        registration = QueryRegistration(
            config,
            host,
            _labels(engine.node_labels),
            _labels(engine.relation_labels),
            engine.history_limits,
        )
        self._placed[config.id] = host
        return self.run(self._register(registration))

    async def _register(self, registration: QueryRegistration) -> int:
        await self.hosts[registration.host].add_query(registration)
        return await self.control.register_query(registration)

    def subscribe(
        self,
        query_id: str,
        *,
        capacity: int = 100_000,
        mode: DispatchMode = DispatchMode.BROADCAST,
        include_control: bool = False,
    ) -> InProcessSubscription:
        """Subscribe to ``query_id``'s results from now on (a broadcast buffer by default:
        nothing reads it while the app does not run, so a channel buffer could block)."""
        spec = SubscriberSpec(query_id, f"sub-{uuid.uuid4().hex[:12]}", capacity, mode)
        self.run(self.control.subscribe(spec))
        return InProcessSubscription(self, spec, include_control)

    async def take(self, query_id: str, subscriber_id: str) -> ResultBatch:
        """What a subscriber's buffer holds now (as a subscription's line takes it)."""
        host = LocalHost(self.hosts[self._placed[query_id]], carried if self._carry else None)
        return await host.take(query_id, subscriber_id, None, 0.0)

    def engine(self, query_id: str) -> ContinuousQuery:
        """The query's engine now (a bootstrap after a restart makes a new one)."""
        return self.hosts[self._placed[query_id]].hosted(query_id).runner.engine

    def results(self, query_id: str) -> list[dict[str, Any]]:
        """The query's current result rows."""
        return self.engine(query_id).results()

    # -- changes ------------------------------------------------------------------------

    def publish(
        self, source_id: str, *events: Mapping[str, Any], entry_id: str | None = None
    ) -> BatchReport:
        """One stream entry of ``source_id`` holding the platform ``events``
        (:func:`~drasi_ray.source.decode.change_event`), decoded as a consumer decodes it and
        applied; returns once its results are delivered (DecodeError if it is malformed).
        ``entry_id``: its stream entry id (the next of the source's ``<n>-0`` by default)."""
        if entry_id is None:
            counter = self._entry_ids.setdefault(source_id, itertools.count(1))
            entry_id = f"{next(counter)}-0"
        entry = decode_entry(entry_id, {b"data": encode_cloud_event(events)})
        return self.apply(source_id, [entry])

    def apply(self, source_id: str, entries: Iterable[DecodedEntry]) -> BatchReport:
        """Apply decoded entries as one consumer batch; return once their results are
        delivered to the subscribers (the report lists the entries a pipeline rejected)."""
        return self.run(self._apply(source_id, tuple(entries)))

    async def _apply(self, source_id: str, entries: tuple[DecodedEntry, ...]) -> BatchReport:
        report = await self._dispatcher.dispatch(source_id, entries)
        await self.control.flush_deliveries()
        if self._strict:
            self._raise_failures()
        return report

    def _raise_failures(self) -> None:
        for host in self.hosts.values():
            for hosted in host.queries.values():
                failure, hosted.failure = hosted.failure, None
                if failure is not None:
                    raise failure

    def rescale(self, shards: int) -> int:
        """Partition the elements over ``shards`` store shards, as ``DrasiRay.scale_shards``
        does (dispatching paused meanwhile); the records that moved."""
        return self.run(self._rescale(max(shards, 1)))

    async def _rescale(self, shards: int) -> int:
        await self._dispatcher.pause()
        try:
            before = len(self.shards)
            self.shards += [self._shard(index, shards) for index in range(before, shards)]
            moved = await self.control.rescale(shards)
            del self.shards[shards:]
            return moved
        finally:
            self._dispatcher.resume()

    def flush_reactions(self, timeout_s: float = 10.0) -> list[str]:
        """Let every query's reactions write what they were handed; the queries still behind."""
        return self.run(self._flush_reactions(timeout_s))

    async def _flush_reactions(self, timeout_s: float) -> list[str]:
        behind = await asyncio.gather(*(h.flush_reactions(timeout_s) for h in self.hosts.values()))
        return sorted(query_id for late in behind for query_id in late)

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Stop every query (reactions flushed and closed) and the event loop."""
        if self._loop.is_closed():
            return
        self.run(self._stop())
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _stop(self) -> None:
        await asyncio.gather(*(host.stop(1.0) for host in self.hosts.values()))

    def __enter__(self) -> InProcessApp:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _labels(labels: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if labels is None else tuple(sorted(labels))
