"""The fused actor: the smallest deployment's pipeline in one process.

With one store shard and one shared query host (``scaling.layout``: ``auto`` picks this for
an app with default scaling and durable state, ``fused`` asks for it), the coordinator actor
``drasi/coordinator`` runs every part of the pipeline itself: the control plane and store
shard 0 (:class:`~drasi_ray.coordinator.control.ControlPlane` over a
:class:`~drasi_ray.shards.service.ShardService`), the app's shared query host (a
:class:`~drasi_ray.host.core.QueryHost` named ``drasi/coordinator`` too) and consumer 0 of
every source, those the app starts with and those added while it runs
(:class:`~drasi_ray.actors.consumer.ConsumerRole`). The consumer's lanes dispatch straight
into the shard service and the shard delivers straight to the host, in the same event loop:
no hop, no serialisation, no process wake-up between them (:mod:`drasi_ray.shards.local`,
:mod:`drasi_ray.host.local`, :mod:`drasi_ray.coordinator.local`). The cores, their contracts
and their order are the same as in separate actors; only the calls between them are direct.

What stays an actor of its own: consumers 1 .. of a source (``consumers`` above 1; they reach
shard 0 on the fused actor's line), store shards 1 .. K-1 after a rescale (``drasi-ray scale
--shards``: the fused actor stays shard 0 and the shared host), the hosts of ``dedicated_host``
queries, PostgreSQL readers, the app's reactions and the change log. The fused actor's one
line serves shard 0's calls and the host's (:class:`~drasi_ray.shards.calls.FusedCalls`).

Resume contract: a SIGKILLed fused actor is restarted by Ray (``max_restarts=-1``) as all of
its parts at once, each by its own contract: the control plane and shard 0 reload from Redis
and start a new bootstrap round of every query; the host is a new incarnation that hosts its
queries again (the control plane of the same process tells it which, with their
subscriptions) and asks for rounds of its own; each consumer re-reads its own pending entries
first (it starts reading at once after a restart, without waiting to be told). Which consumers
run is kept in Redis (``keys.fused_consumers``: written when the actor starts, when a source is
added and when one is removed), so a restart runs those of the sources added since, and not
those of the sources removed. Durable state is required (``DrasiRay`` refuses the fused
layout without it): without it a restart would find no registration of the queries it hosted,
nor the consumers it ran.

The driver handles the fused consumer of a source as a consumer actor through
:class:`FusedConsumer`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import ray

from drasi_ray.actors import names
from drasi_ray.actors.consumer import ConsumerRole
from drasi_ray.actors.coordinator import CoordinatorShell
from drasi_ray.actors.handles import GONE, RayCluster, host_line, shard_line
from drasi_ray.actors.line import LineServer
from drasi_ray.actors.query_host import QueryHostShell, query_metrics
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc, was_restarted
from drasi_ray.actors.shard import LoadedShard, ShardSettings, shard_service
from drasi_ray.coordinator.control import ControlPlane, HostControl, ShardControl
from drasi_ray.coordinator.local import LocalControl
from drasi_ray.host.core import QueryHost
from drasi_ray.host.local import LocalHost
from drasi_ray.model import urls
from drasi_ray.model.backoff import outlasting
from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.clock import ClockSetting
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import ConfigError, UnknownComponentError
from drasi_ray.model.shards import BatchTag, BootstrapPart
from drasi_ray.model.wire import HostPacket, ResultBatch
from drasi_ray.shards.calls import FusedCalls
from drasi_ray.shards.dispatch import ShardConnection
from drasi_ray.shards.local import LocalShard
from drasi_ray.shards.reports import BatchReport
from drasi_ray.shards.service import HostConnection
from drasi_ray.shards.state import REDIS_TRANSIENT, StateStore
from drasi_ray.source.consumer import ConsumerReport
from drasi_ray.streams.records import Rejection

logger = logging.getLogger("drasi_ray.fused")

HOST = names.COORDINATOR
"""The name of the fused actor's query host: the actor's own (the app's hosts are found by it)."""


@dataclass(frozen=True, slots=True)
class FusedConsumerSpec:
    """Consumer 0 of a source, run by the fused actor."""

    source_id: str
    settings: PlatformSourceConfig
    consumer_name: str

    def to_json(self) -> bytes:
        """The stored form: the source's Redis URL without its password (secrets are never
        stored; :meth:`from_json` gives it back from the URLs the app was started with)."""
        url = urls.without_password(self.settings.redis_url)
        stored = self.settings.model_copy(update={"redis_url": url})
        return orjson.dumps(
            {
                "source": self.source_id,
                "consumer": self.consumer_name,
                "settings": stored.model_dump(mode="json"),
            }
        )

    @classmethod
    def from_json(cls, data: bytes, credentials: Sequence[str] = ()) -> FusedConsumerSpec:
        """A stored spec, its Redis URL given back its password from ``credentials`` (the
        full URLs the app runs with)."""
        doc = orjson.loads(data)
        settings = PlatformSourceConfig.model_validate(doc["settings"])
        url = urls.with_password(settings.redis_url, credentials)
        return cls(doc["source"], settings.model_copy(update={"redis_url": url}), doc["consumer"])


@dataclass(frozen=True, slots=True)
class FusedSettings:
    """What the fused actor is given when it starts (a restart gets the same)."""

    shard: ShardSettings
    clock: ClockSetting
    consumers: tuple[FusedConsumerSpec, ...] = ()


class _Cluster:
    """The app's other actors as the control plane finds them, its own host in-process."""

    def __init__(self, cluster: RayCluster, host: QueryHost) -> None:
        self._cluster = cluster
        self._host = host

    def shard(self, index: int) -> ShardControl:
        return self._cluster.shard(index)

    def host(self, name: str) -> HostControl:
        return self._host if name == HOST else self._cluster.host(name)

    def shards_alive(self) -> int:
        return self._cluster.shards_alive()

    def hosts_alive(self) -> list[str]:
        return sorted({HOST, *self._cluster.hosts_alive()})


class _Served:
    """What the fused actor's line serves: store shard 0's call and the host's."""

    def __init__(self, shard: LoadedShard, host: QueryHost) -> None:
        self._shard = shard
        self._host = host

    async def apply_batch(
        self, source_id: str, entries: Sequence[DecodedEntry], tag: BatchTag | None, shards: int
    ) -> BatchReport:
        return await self._shard.apply_batch(source_id, entries, tag, shards)

    async def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> list[Rejection]:
        return await self._host.deliver(shard, epoch, number, payload)

    async def take(
        self, query_id: str, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> ResultBatch:
        return await self._host.take(query_id, subscriber_id, max_items, timeout_s)


def _host_connect(namespace: str, here: QueryHost) -> Callable[[str], HostConnection]:
    """A shard's ``connect``: the host of this process directly, any other over a line."""
    local = LocalHost(here)
    lines = host_line(namespace)

    def connect(host: str) -> HostConnection:
        return local if host == HOST else lines(host)

    return connect


def _shard_connect(namespace: str, here: LoadedShard) -> Callable[[int], ShardConnection]:
    """A dispatcher's ``connect``: shard 0 of this process directly, any other over a line."""
    local = LocalShard(here)
    lines = shard_line(namespace)

    def connect(index: int) -> ShardConnection:
        return local if index == 0 else lines(index)

    return connect


class FusedShell(CoordinatorShell, QueryHostShell):
    """The coordinator, the shared query host and consumer 0 of each source in one process
    (module docstring). It serves the coordinator's methods and the host's (where both have
    one, the coordinator's: the control plane reaches its host directly), and the consumers'
    as ``consumer_<method>(source_id, ...)`` (:class:`FusedConsumer` maps them)."""

    def __init__(self, settings: FusedSettings, niceness: int | None = PIPELINE_NICENESS) -> None:
        tune_for_latency(niceness)
        tune_gc()
        shard = settings.shard
        restarted = was_restarted()
        url = shard.state_url
        state = None if url is None else StateStore.from_url(url, shard.app_id)
        host = QueryHost(
            HOST, shard.app_id, state, settings.clock, metrics=query_metrics, restarted=restarted
        )
        self._host = host
        self._service = shard_service(shard, state, _host_connect(shard.namespace, host))
        self._control = ControlPlane(
            self._service,
            _Cluster(RayCluster(shard.namespace), host),
            state,
            GONE,
            shard.credentials,
        )
        self._shard = LoadedShard(self._service, self._control.loaded)
        self._line_server = LineServer[FusedCalls](
            _Served(self._shard, host), FusedCalls, enabled=shard.direct_calls
        )
        self._service.line_calls = host.line_calls = lambda: self._line_server.served
        if restarted:
            host.rejoin(self._control)
        self._state = state
        self._credentials = shard.credentials
        self._connect = _shard_connect(shard.namespace, self._shard)
        self._local_control = LocalControl(self._control)
        self._consumers: dict[str, ConsumerRole] = {}
        loop = asyncio.get_event_loop()
        if restarted:
            self._consumers_known = loop.create_task(self._restore_consumers(settings.consumers))
        else:
            for spec in settings.consumers:
                self._consumers[spec.source_id] = self._role_of(spec, restarted=False)
            records = {spec.source_id: spec.to_json() for spec in settings.consumers}
            self._consumers_known = loop.create_task(self._record(records, replace=True))

    def pid(self) -> int:
        """The process id (chaos tests SIGKILL it)."""
        return os.getpid()

    # -- consumer 0 of each source ------------------------------------------------------

    def _role_of(self, spec: FusedConsumerSpec, restarted: bool) -> ConsumerRole:
        return ConsumerRole(
            spec.source_id,
            spec.settings,
            spec.consumer_name,
            self._local_control,
            self._connect,
            restarted,
        )

    async def _restore_consumers(self, given: Sequence[FusedConsumerSpec]) -> None:
        """After a restart: run the consumers recorded in Redis (those the actor was given
        and those added since, less those removed), reading again at once (the app had
        started them, or was about to)."""
        if self._state is None:
            specs = list(given)
        else:
            state = self._state
            records = await outlasting(
                state.load_fused_consumers, REDIS_TRANSIENT, f"{HOST}: its consumers", logger
            )
            specs = [FusedConsumerSpec.from_json(record, self._credentials) for record in records]
        for spec in specs:
            role = self._consumers[spec.source_id] = self._role_of(spec, restarted=True)
            role.start()

    async def _record(self, records: dict[str, bytes], replace: bool = False) -> None:
        """Keep consumer records in Redis (``replace``: these are all), for a restart."""
        await self._durably(
            "recording its consumers", lambda state: state.save_fused_consumers(records, replace)
        )

    async def _durably(self, what: str, write: Callable[[StateStore], Awaitable[None]]) -> None:
        """Run ``write`` on the durable state (if any), waiting out an unreachable Redis."""
        if self._state is not None:
            state = self._state
            await outlasting(lambda: write(state), REDIS_TRANSIENT, f"{HOST}: {what}", logger)

    async def consumes(self) -> list[str]:
        """The sources whose consumer 0 runs here, sorted."""
        await self._consumers_known
        return sorted(self._consumers)

    async def add_consumer(self, spec: FusedConsumerSpec) -> None:
        """Run consumer 0 of a source added while the app runs, as those the actor started
        with (recorded first: a restart runs it too); :meth:`consumer_ready` starts it.
        Raises ConfigError when the source has one here already."""
        await self._consumers_known
        if spec.source_id in self._consumers:
            raise ConfigError(f"source {spec.source_id!r} already has a consumer in {HOST}")
        await self._record({spec.source_id: spec.to_json()})
        self._consumers[spec.source_id] = self._role_of(spec, restarted=False)

    async def remove_consumer(self, source_id: str) -> None:
        """Stop the consumer of a removed source (its batches in hand finish and are acked)
        and forget it (its record first: a restart meanwhile does not run it again)."""
        role = await self._role(source_id)
        await self._durably(
            "forgetting a consumer", lambda state: state.forget_fused_consumer(source_id)
        )
        await role.stop()
        del self._consumers[source_id]

    async def _role(self, source_id: str) -> ConsumerRole:
        await self._consumers_known
        role = self._consumers.get(source_id)
        if role is None:
            raise UnknownComponentError(f"source {source_id!r} has no consumer in {HOST}")
        return role

    async def consumer_ready(self, source_id: str, timeout_s: float = 60.0) -> str:
        """Start ``source_id``'s consumer (once) and return its name once it reads."""
        role = await self._role(source_id)
        role.start()
        return await role.ready(timeout_s)

    async def consumer_stop(self, source_id: str) -> None:
        await (await self._role(source_id)).stop()

    async def consumer_pause(self, source_id: str) -> None:
        await (await self._role(source_id)).pause()

    async def consumer_resume(self, source_id: str) -> None:
        await (await self._role(source_id)).resume()

    async def consumer_stats(self, source_id: str) -> ConsumerReport:
        return (await self._role(source_id)).stats()


FusedActor = ray.remote(FusedShell)
"""The fused actor's Ray class (named ``drasi/coordinator``)."""


class _Bound:
    """A fused actor's consumer method with its source bound: ``.remote(*args)``."""

    def __init__(self, method: Any, source_id: str) -> None:
        self._method = method
        self._source_id = source_id

    def remote(self, *args: Any) -> Any:
        return self._method.remote(self._source_id, *args)


class FusedConsumer:
    """Consumer 0 of a source that runs in the fused actor, with a consumer actor's methods
    (``ready``, ``stop``, ``pause``, ``resume``, ``stats``, ``pid``, and Ray's
    ``__ray_call__`` that runs a function in its process; each called as ``.remote(...)``),
    so the app, its status and its scaling handle it as any consumer. ``actor`` is the fused
    actor's handle (killing it ends every part, not only this one)."""

    def __init__(self, actor: Any, source_id: str) -> None:
        self.actor = actor
        self.source_id = source_id
        self.ready = _Bound(actor.consumer_ready, source_id)
        self.stop = _Bound(actor.consumer_stop, source_id)
        self.pause = _Bound(actor.consumer_pause, source_id)
        self.resume = _Bound(actor.consumer_resume, source_id)
        self.stats = _Bound(actor.consumer_stats, source_id)
        self.pid = actor.pid
        self.__ray_call__ = actor.__ray_call__


def fused_consumers(actor: Any) -> dict[str, FusedConsumer]:
    """The fused consumers of the running app whose coordinator is ``actor``, by source (none
    when the app does not run the fused layout)."""
    try:
        sources: list[str] = ray.get(actor.consumes.remote())
    except AttributeError:
        return {}
    except ray.exceptions.RayTaskError:  # a coordinator of the separate layout
        return {}
    return {source_id: FusedConsumer(actor, source_id) for source_id in sources}
