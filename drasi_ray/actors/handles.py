"""The Ray side of the cores' protocols: a Ray actor handle (or a direct line to one) wrapped
as the protocol a Ray-free core calls.

The cores (:class:`~drasi_ray.shards.service.ShardService`,
:class:`~drasi_ray.coordinator.control.ControlPlane`, :class:`~drasi_ray.host.core.QueryHost`)
are handed their peers as protocols; in the app each peer is another actor, reached through
one of these. A call that finds the actor restarting (``ActorUnavailableError``) waits for it
where the control plane needs an answer (:func:`~drasi_ray.model.backoff.outlasting`); an actor
that is gone raises ``RayActorError``, which the cores are told means "gone" (:data:`GONE`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import ray

from drasi_ray.actors import names
from drasi_ray.actors.line import Line
from drasi_ray.model.backoff import Backoff, outlasting
from drasi_ray.model.changes import ControlEvent, DecodedEntry, Element
from drasi_ray.model.errors import UnknownComponentError
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec, TableCopy
from drasi_ray.model.shards import BatchTag, BootstrapPart
from drasi_ray.model.wire import HostPacket, ResultBatch
from drasi_ray.shards.calls import HostCalls, ShardCalls
from drasi_ray.shards.records import ChangeRecord
from drasi_ray.shards.reports import BatchReport, ShardReport
from drasi_ray.shards.service import MovedRecords
from drasi_ray.streams.records import Rejection

logger = logging.getLogger("drasi_ray.handles")

GONE: tuple[type[BaseException], ...] = (ray.exceptions.RayActorError,)
"""The errors that mean a peer actor is gone (dead, or restarted under the call)."""
UNAVAILABLE: tuple[type[BaseException], ...] = (ray.exceptions.ActorUnavailableError,)
"""The errors of a peer that Ray is restarting: worth waiting out."""


def actor(name: str, namespace: str) -> Any:
    """The handle of the actor ``name``; UnknownComponentError if none runs by that name."""
    try:
        return ray.get_actor(name, namespace=namespace)
    except ValueError as exc:
        raise UnknownComponentError(f"no actor {name!r} runs in {namespace}") from exc


class HostLine:
    """A query host over a direct line (Ray calls while the line is down): what a shard
    delivers to (:class:`~drasi_ray.shards.service.HostConnection`)."""

    def __init__(self, handle: Any) -> None:
        self._line = Line[HostCalls](handle)

    async def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> list[Rejection]:
        return await self._line.call(HostCalls.deliver, shard, epoch, number, payload)

    async def take(
        self, query_id: str, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> ResultBatch:
        return await self._line.call(HostCalls.take, query_id, subscriber_id, max_items, timeout_s)

    def close(self) -> None:
        self._line.close()


def host_line(namespace: str) -> Callable[[str], HostLine]:
    """``connect`` of a shard service: a :class:`HostLine` to the host named ``host``."""

    def connect(host: str) -> HostLine:
        return HostLine(actor(host, namespace))

    return connect


class ShardLine:
    """A store shard over a direct line (Ray calls while the line is down): what a consumer's
    dispatcher calls (:class:`~drasi_ray.shards.dispatch.ShardConnection`)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._line = Line[ShardCalls](handle)

    async def apply_batch(
        self,
        source_id: str,
        entries: Sequence[DecodedEntry],
        tag: BatchTag | None,
        shards: int,
    ) -> BatchReport:
        return await self._line.call(ShardCalls.apply_batch, source_id, entries, tag, shards)

    async def back(self) -> None:
        await answering(self._handle)

    def close(self) -> None:
        self._line.close()


def shard_line(namespace: str) -> Callable[[int], ShardLine]:
    """``connect`` of a dispatcher: a :class:`ShardLine` to store shard ``index``."""

    def connect(index: int) -> ShardLine:
        return ShardLine(actor(names.shard_actor(index), namespace))

    return connect


async def answering(handle: Any) -> None:
    """Return once the actor answers a ping (backing off while it does not)."""
    backoff = Backoff()
    while True:
        try:
            await handle.ping.remote()
            return
        except GONE:
            await backoff.wait()


class ChangeLogActor:
    """The analytics change-log actor as a shard's :class:`~drasi_ray.shards.service.
    ChangeLogSink` (its calls run in the order they are submitted: the actor is not async)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def append(
        self, source_id: str, records: list[ChangeRecord], unapplied: list[ChangeRecord]
    ) -> None:
        self._handle.append.remote(source_id, records, unapplied)

    async def flush(self) -> int:
        rows: int = await self._handle.flush.remote()
        return rows


class _Named:
    """An actor found by its name: looked up once, and again when a call finds the actor gone
    (another may run by that name now: a host stopped and started again, a shard after a
    rescale), the call then made once more on the one found. A lookup is a round trip to
    Ray's control store that blocks the event loop, so it is not made per call."""

    def __init__(self, name: str, namespace: str, where: str) -> None:
        self.name = name
        self._namespace = namespace
        self._where = where
        self._handle: Any = None

    def handle(self) -> Any:
        """The actor's handle (UnknownComponentError if none runs by that name)."""
        if self._handle is None:
            self._handle = actor(self.name, self._namespace)
        return self._handle

    async def call(self, call: Callable[[Any], Any], *, outlast: bool = True) -> Any:
        """``call(handle)``; with ``outlast``, waiting out a restart of the actor."""
        handle = self.handle()
        try:
            return await self._run(call, handle, outlast)
        except GONE:
            self._handle = None
            found = self.handle()
            if found == handle:  # the same actor, gone for good
                raise
            return await self._run(call, found, outlast)

    async def _run(self, call: Callable[[Any], Any], handle: Any, outlast: bool) -> Any:
        if not outlast:
            return await call(handle)
        return await outlasting(lambda: call(handle), UNAVAILABLE, self._where, logger)


class CoordinatorHandle:
    """The coordinator actor, as a restarted shard or host asks it things (waiting out its
    own restart)."""

    def __init__(self, namespace: str, asker: str) -> None:
        self._asker = asker
        self._coordinator = _Named(names.COORDINATOR, namespace, asker)

    def _handle(self) -> Any:
        """The coordinator's handle, looked up once (it stays valid across its restarts)."""
        return self._coordinator.handle()

    async def _ask(self, what: str, call: Any) -> Any:
        handle = self._handle()
        return await outlasting(lambda: call(handle), UNAVAILABLE, f"{self._asker}: {what}", logger)

    async def shard_count(self) -> int:
        count: int = await self._ask("the shard count", lambda h: h.shard_count.remote())
        return count

    async def shard_restarted(self, index: int) -> None:
        await self._handle().shard_restarted.remote(index)

    async def queries_of(self, host: str) -> list[QueryRegistration]:
        found: list[QueryRegistration] = await self._ask(
            "its queries", lambda h: h.queries_of.remote(host)
        )
        return found

    async def subscribers_of(self, host: str) -> list[SubscriberSpec]:
        found: list[SubscriberSpec] = await self._ask(
            "its subscribers", lambda h: h.subscribers_of.remote(host)
        )
        return found

    async def host_restarted(self, host: str) -> None:
        await self._ask("rejoining", lambda h: h.host_restarted.remote(host))

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        forgotten: int = await self._handle().forget_tombstones.remote(source_id, bound)
        return forgotten

    async def apply_controls(self, source_id: str, controls: Sequence[ControlEvent]) -> int:
        applied: int = await self._handle().apply_controls.remote(source_id, controls)
        return applied

    async def back(self) -> None:
        await answering(self._handle())


class ShardHandle:
    """Store shard ``index`` (>= 1) as the control plane calls it
    (:class:`~drasi_ray.coordinator.control.ShardControl`), each call waiting out a restart."""

    def __init__(self, namespace: str, index: int) -> None:
        self.index = index
        self._named = _Named(names.shard_actor(index), namespace, f"coordinator: shard {index}")

    async def _call(self, call: Any) -> Any:
        return await self._named.call(call)

    async def attach(
        self, registration: QueryRegistration, round_: int, incarnation: str, table: TableCopy
    ) -> int:
        elements: int = await self._call(
            lambda h: h.attach.remote(registration, round_, incarnation, table)
        )
        return elements

    async def detach(self, query_id: str, table: TableCopy) -> None:
        await self._call(lambda h: h.detach.remote(query_id, table))

    async def set_table(self, table: TableCopy) -> None:
        await self._call(lambda h: h.set_table.remote(table))

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        forgotten: int = await self._call(lambda h: h.forget_tombstones.remote(source_id, bound))
        return forgotten

    async def drop_source(self, source_id: str) -> int:
        dropped: int = await self._call(lambda h: h.drop_source.remote(source_id))
        return dropped

    async def flush_deliveries(self) -> bool:
        ready: bool = await self._call(lambda h: h.flush_deliveries.remote())
        return ready

    async def flush_analytics(self) -> int:
        rows: int = await self._call(lambda h: h.flush_analytics.remote())
        return rows

    async def stats(self) -> ShardReport:
        report: ShardReport = await self._call(lambda h: h.stats.remote())
        return report

    async def elements(self, source_id: str) -> list[Element]:
        elements: list[Element] = await self._call(lambda h: h.elements.remote(source_id))
        return elements

    async def fence(self) -> None:
        await self._call(lambda h: h.fence.remote())

    async def export_moving(self, shards: int) -> list[MovedRecords]:
        moving: list[MovedRecords] = await self._call(lambda h: h.export_moving.remote(shards))
        return moving

    async def import_records(self, records: MovedRecords) -> int:
        loaded: int = await self._call(lambda h: h.import_records.remote(records))
        return loaded

    async def finish_rescale(self, shards: int) -> None:
        await self._call(lambda h: h.finish_rescale.remote(shards))


class HostHandle:
    """A query host as the control plane calls it (:class:`~drasi_ray.coordinator.control.
    HostControl`), each call waiting out a restart of the host."""

    def __init__(self, namespace: str, name: str) -> None:
        self.name = name
        self._named = _Named(name, namespace, f"coordinator: host {name}")

    async def _call(self, call: Any) -> Any:
        return await self._named.call(call)

    async def incarnation(self) -> str:
        token: str = await self._call(lambda h: h.incarnation.remote())
        return token

    async def subscribe(self, spec: SubscriberSpec) -> None:
        await self._call(lambda h: h.subscribe.remote(spec))

    async def unsubscribe(self, query_id: str, subscriber_id: str) -> None:
        await self._named.call(
            lambda h: h.unsubscribe.remote(query_id, subscriber_id), outlast=False
        )

    async def all_settled(self) -> bool:
        settled: bool = await self._call(lambda h: h.all_settled.remote())
        return settled

    async def registrations(self) -> list[QueryRegistration]:
        found: list[QueryRegistration] = await self._named.call(
            lambda h: h.registrations.remote(), outlast=False
        )
        return found

    async def subscriber_specs(self) -> list[SubscriberSpec]:
        found: list[SubscriberSpec] = await self._named.call(
            lambda h: h.subscriber_specs.remote(), outlast=False
        )
        return found


class RayCluster:
    """The shards and query hosts of the app in ``namespace``, as the control plane finds
    them (:class:`~drasi_ray.coordinator.control.Cluster`)."""

    def __init__(self, namespace: str) -> None:
        self._namespace = namespace
        self._shards: dict[int, ShardHandle] = {}
        self._hosts: dict[str, HostHandle] = {}

    def shard(self, index: int) -> ShardHandle:
        found = self._shards.get(index)
        if found is None:
            found = self._shards[index] = ShardHandle(self._namespace, index)
        return found

    def host(self, name: str) -> HostHandle:
        found = self._hosts.get(name)
        if found is None:
            found = self._hosts[name] = HostHandle(self._namespace, name)
        return found

    def shards_alive(self) -> int:
        shards = 1
        while _named(names.shard_actor(shards), self._namespace):
            shards += 1
        return shards

    def hosts_alive(self) -> list[str]:
        actors = ray.util.list_named_actors(all_namespaces=True)
        return sorted(
            entry["name"]
            for entry in actors
            if entry.get("namespace") == self._namespace and names.is_query_host(entry["name"])
        )


def _named(name: str, namespace: str) -> bool:
    try:
        ray.get_actor(name, namespace=namespace)
    except ValueError:
        return False
    return True
