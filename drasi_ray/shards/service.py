"""A store shard's data plane without Ray: apply batches, persist them, deliver their deltas.

Shard ``k`` of K owns the elements with ``shard_of(id, K) == k`` (:mod:`drasi_ray.model.shards`)
and is their single writer: :class:`ShardService` applies their changes to its
:class:`~drasi_ray.shards.core.ShardCore` (the versioned stores, middleware pipelines, a copy of
the subscription table), writes the changed records to Redis and sends each query host the
deltas of its queries. Its Ray shell is :mod:`drasi_ray.actors.shard` (shard 0 runs inside the
coordinator actor); :mod:`drasi_ray.testing.inprocess` runs it without Ray. What it calls out
to is handed in: the query hosts (``connect``: a :class:`~drasi_ray.shards.calls.HostCalls`
per host), the change log (:class:`ChangeLogSink`), and which errors mean a host is gone.

Contract with the consumers: :meth:`ShardService.apply_batch` returns once every change of the
part is applied and (with durable state) written to Redis; a consumer acks a batch once every
shard it touched returned, so an acked entry is always in the durable store. The deltas are
*sent* to the query hosts in the step that applies them (one call per host per batch), and
delivered while the consumer goes on; at most :data:`DELIVERIES_IN_FLIGHT` batches per host are
undelivered (``apply_batch`` waits for room: backpressure).

A batch that touched several shards carries a :class:`~drasi_ray.model.shards.BatchTag`: each
of its shards then sends every host with a query on the batch's source its part, empty if
nothing of it goes there, so the host can apply the parts together in the batch's order
(:mod:`drasi_ray.host.merge`).

Links: a shard numbers its deliveries to each host (from 0 within an *epoch*, a new one per
link); a new link is opened when the host restarted (its *incarnation* changed). Bootstrap parts
(:class:`~drasi_ray.model.shards.BootstrapPart`) travel on the same links, so each one sits in
the link exactly between the deltas its snapshot includes and those it does not.

Resume contract: a restarted shard loads the records it owns from Redis, then tells the
coordinator (:meth:`ShardService.recover`), which starts a new bootstrap round for every query
(every shard sends its part again); a batch that was applied but not acked comes again and
changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from drasi_ray.model.backoff import outlasting
from drasi_ray.model.changes import DecodedEntry, Element, PipedChange
from drasi_ray.model.errors import ShardMapChangedError, StaleDeliveryError
from drasi_ray.model.history import ElementHistory
from drasi_ray.model.registrations import QueryRegistration, TableCopy
from drasi_ray.model.shards import BatchTag, BootstrapPart, shard_of
from drasi_ray.model.wire import DeltaPacket, EntryPacket, HostPacket, PipedPacket
from drasi_ray.shards.core import ApplyProbe, Routed, ShardCore
from drasi_ray.shards.records import ChangeRecord, change_record
from drasi_ray.shards.reports import BatchReport, ShardReport
from drasi_ray.shards.routing import SubscriptionTable
from drasi_ray.shards.state import REDIS_TRANSIENT, StateStore
from drasi_ray.shards.store import ElementStore
from drasi_ray.streams.records import Rejection

logger = logging.getLogger("drasi_ray.shard")

DELIVERIES_IN_FLIGHT = 4
"""Batches sent to one query host and not yet delivered, at most (then ``apply_batch`` waits)."""

MovedRecords = list[tuple[str, str, bytes, bool]]
"""Records moving to another shard: (source id, element id, persisted record, whether the
record changed since it was last written to Redis: the new owner writes it then)."""


class HostConnection(Protocol):
    """A shard's way to one query host (a direct line in the app, the host's core in process)."""

    def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> Awaitable[list[Rejection]]:
        """:meth:`HostCalls.deliver <drasi_ray.shards.calls.HostCalls.deliver>`: a call on a
        line, or for a host of this process the delivery taken at once and its outcome."""
        ...

    def close(self) -> None:
        """Stop using it (the host restarted: a new connection replaces it)."""


class ChangeLogSink(Protocol):
    """Where a shard forwards the changes it applied (the analytics change log)."""

    def append(
        self, source_id: str, records: list[ChangeRecord], unapplied: list[ChangeRecord]
    ) -> None:
        """Fire and forget: one call per batch, never waited on. ``records`` the store
        applied; ``unapplied`` valid changes it took nothing visible from (overtaken by a
        newer change, or duplicates: the log drops the latter by their position)."""

    async def flush(self) -> int:
        """Seal what was appended so far (after every earlier append); the rows it holds."""
        ...


class ControlCalls(Protocol):
    """What a restarted shard asks the control plane (:meth:`ShardService.recover`)."""

    async def shard_count(self) -> int:
        """The shard count of now (a rescale may have changed it since the shard started)."""
        ...

    async def shard_restarted(self, index: int) -> None:
        """Start a new bootstrap round for every query (this shard's parts are gone)."""


@dataclass(slots=True)
class HostLink:
    """A shard's side of one query host: its connection, incarnation and delivery numbering."""

    host: str
    incarnation: str
    connection: HostConnection
    gone: tuple[type[BaseException], ...] = ()
    """Errors of a delivery that mean the host is gone (its queries are bootstrapped again)."""
    sources: set[str] = field(default_factory=set)
    next_delivery: int = 0
    in_flight: set[asyncio.Future[Any]] = field(default_factory=set)
    # False once a delivery found the host dead or restarted: its queries' results are behind
    # until it re-registers them (a new link, with a new round of bootstrap parts).
    ready: bool = True
    epoch: int = field(default_factory=time.time_ns)

    def take_delivery(self) -> int:
        number = self.next_delivery
        self.next_delivery += 1
        return number

    def send(self, shard: int, payload: HostPacket | BootstrapPart) -> asyncio.Future[Any]:
        """Number ``payload`` and send it; the delivery is followed until done."""
        call = self.connection.deliver(shard, self.epoch, self.take_delivery(), payload)
        future = asyncio.ensure_future(call)
        self.in_flight.add(future)
        future.add_done_callback(self._settled)
        return future

    def _settled(self, future: asyncio.Future[Any]) -> None:
        self.in_flight.discard(future)
        if future.cancelled() or future.exception() is None:
            return
        error = future.exception()
        if isinstance(error, (*self.gone, StaleDeliveryError)):
            self.ready = False
        logger.warning(
            "a delivery to query host %s failed (%s); its queries catch up from the store "
            "when it registers them again",
            self.host,
            error,
        )

    async def room(self, limit: int) -> None:
        """Wait until at most ``limit`` deliveries are in flight."""
        while len(self.in_flight) > limit:
            await asyncio.wait(set(self.in_flight), return_when=asyncio.FIRST_COMPLETED)

    async def settled(self) -> None:
        while self.in_flight:
            await asyncio.wait(set(self.in_flight))


class ShardService:
    """One store shard's data plane (module docstring). Create it in an event loop."""

    def __init__(
        self,
        index: int,
        shards: int,
        connect: Callable[[str], HostConnection],
        *,
        state: StateStore | None = None,
        probe: ApplyProbe | None = None,
        change_log: ChangeLogSink | None = None,
        gone: tuple[type[BaseException], ...] = (),
        restarted: bool = False,
    ) -> None:
        """``connect(host)`` opens a connection to the query host named ``host``; ``state``:
        the durable state (None: in memory only); ``probe`` (tests only) sees each change's
        element id before it is applied; ``gone``: the errors that mean a host is gone;
        ``restarted``: this shard is a restart (:meth:`recover` rejoins the app)."""
        self.index = index
        self.shards = shards
        self.core = ShardCore(probe, durable=state is not None)
        self._connect = connect
        self._state = state
        self._change_log = change_log
        if change_log is not None:
            self.core.applied = []
        self._gone = gone
        self._hosts: dict[str, str] = {}  # query id -> host name
        self._links: dict[str, HostLink] = {}  # host name -> link
        self._table_version = -1
        self._persist_lock = asyncio.Lock()
        self.resharding = False
        self._applying = 0  # batches accepted and not yet returned (applied and persisted)
        self._quiet = asyncio.Event()
        self._quiet.set()
        self.restarted = restarted
        self._rejoining: asyncio.Task[None] | None = None
        self.line_calls: Callable[[], int] = lambda: 0
        """The calls the shell answered on lines (its status reports them)."""

    def owns(self, element_id: str) -> bool:
        return shard_of(element_id, self.shards) == self.index

    # -- recovery -----------------------------------------------------------------------

    async def recover(self, control: ControlCalls | None) -> None:
        """Load the records this shard owns. After a restart, with the shard count of now
        (``control`` tells it), then ask ``control`` for new bootstrap rounds, in the
        background (the rounds call this shard, which must be up first)."""
        if not self.restarted or control is None:
            await self.load()
            return
        self.shards = await control.shard_count()
        await self.load()
        logger.warning("shard %d restarted: asking for new bootstrap rounds", self.index)
        self._rejoining = asyncio.ensure_future(self._rejoin(control))

    async def _rejoin(self, control: ControlCalls) -> None:
        try:
            await control.shard_restarted(self.index)
        except Exception as exc:  # the control plane's own restart rebootstraps every query
            logger.warning("shard %d: asking for new rounds failed: %s", self.index, exc)

    async def load(self) -> None:
        """Load the records this shard owns, and their element histories, from Redis (waiting
        out an outage)."""
        if self._state is None:
            return
        stores, histories = await outlasting(
            self._load_stores, REDIS_TRANSIENT, f"shard {self.index}: loading its store", logger
        )
        self.core.stores.update(stores)
        self.core.histories.update(histories)
        gc.freeze()  # the loaded stores are long-lived: keep them out of later GC passes

    async def _load_stores(self) -> tuple[dict[str, ElementStore], dict[str, ElementHistory]]:
        assert self._state is not None
        stores = {
            source_id: await self._state.load_store(source_id, self.owns)
            for source_id in await self._state.stored_sources()
        }
        return stores, await self._state.load_histories(self.owns)

    # -- the table and the queries ------------------------------------------------------

    async def set_table(self, table: TableCopy) -> None:
        """Take the coordinator's table, unless this shard holds a newer copy already."""
        self.take_table(table)

    def take_table(self, table: TableCopy) -> None:
        """:meth:`set_table`, in the caller's step."""
        if table.version > self._table_version:
            self._table_version = table.version
            self.core.table = SubscriptionTable.from_records(table.records)

    async def attach(
        self, registration: QueryRegistration, round_: int, incarnation: str, table: TableCopy
    ) -> int:
        """Route ``registration``'s query to its host from now on and send the host this
        shard's part of bootstrap round ``round_``; return once the part is delivered, with
        the number of elements it held.

        Everything up to the send happens in ONE event-loop step (no await before it), so the
        part holds exactly the changes applied before it. Raises ConfigError if the query's
        middleware is invalid.
        """
        delivery, elements = self._send_part(registration, round_, incarnation, table)
        await self.save_histories()
        await delivery
        return elements

    def _send_part(
        self, registration: QueryRegistration, round_: int, incarnation: str, table: TableCopy
    ) -> tuple[asyncio.Future[Any], int]:
        config = registration.config
        self.core.pipe(config.id, [source for source, names in config.pipelines.items() if names])
        self.take_table(table)
        self.core.keep_history(config.id, registration.history)
        link = self._link(registration.host, incarnation)
        link.sources.update(config.sources)
        self._hosts[config.id] = registration.host
        elements = tuple(self.core.snapshot(config.id, config.sources))
        history = self.core.history_records(config.id, elements)
        piped = {
            source: tuple(snapshot)
            for source, snapshot in self.core.piped_snapshot(config.id, config.sources).items()
        }
        part = BootstrapPart(config.id, round_, self.index, self.shards, elements, history, piped)
        return link.send(self.index, part), len(elements) + sum(map(len, piped.values()))

    async def detach(self, query_id: str, table: TableCopy) -> None:
        self.take_table(table)
        self.core.pipe(query_id, ())
        self.core.keep_history(query_id, None)
        self._hosts.pop(query_id, None)

    def _link(self, host: str, incarnation: str) -> HostLink:
        """The link to ``host``'s current incarnation: a new one (a new epoch, numbered from
        0) when the host restarted since the last."""
        link = self._links.get(host)
        if link is not None and link.incarnation == incarnation:
            return link
        if link is not None:
            link.connection.close()
        link = self._links[host] = HostLink(host, incarnation, self._connect(host), self._gone)
        return link

    # -- batches ------------------------------------------------------------------------

    async def apply_batch(
        self,
        source_id: str,
        entries: Sequence[DecodedEntry],
        tag: BatchTag | None = None,
        shards: int = 1,
    ) -> BatchReport:
        """Apply this shard's part of a consumer batch; return once it is durable and its
        deltas are sent (module docstring). ``shards``: the shard count the consumer split
        the batch for; ShardMapChangedError if it is not this shard's (a rescale).

        The deltas go to the hosts even when the state write fails: a retry of the batch finds
        its changes already applied (duplicates, routed nowhere), so holding them back would
        lose them. The failure is raised afterwards, so the consumer does not ack, and the
        retry persists the still-dirty records.
        """
        if shards != self.shards or self.resharding:
            raise ShardMapChangedError(
                f"shard {self.index} is one of {self.shards} shards"
                + (" and being rescaled" if self.resharding else "")
                + f"; the batch was split for {shards}"
            )
        self._applying += 1
        self._quiet.clear()
        try:
            links, piping, report = self._apply(source_id, entries, tag)
            if links:  # one step first: the replies the deliveries woke go out before the write
                await asyncio.sleep(0)
            persisted = await self._try_persist(source_id, report)
            for link in links:
                await link.room(DELIVERIES_IN_FLIGHT)
            await self._collect_rejections(piping, report)
        finally:
            self._applying -= 1
            if self._applying == 0:
                self._quiet.set()
        if persisted is not None:
            raise persisted
        return report

    def _apply(
        self, source_id: str, entries: Sequence[DecodedEntry], tag: BatchTag | None
    ) -> tuple[list[HostLink], list[asyncio.Future[Any]], BatchReport]:
        """Update the store and send the deliveries, in ONE event-loop step (no await), so
        each host receives this shard's deltas in store order. Returns the links used, the
        deliveries to wait for before confirming (those that pipe changes through
        middleware: a change a pipeline fails on is dead-lettered before the ack) and the
        report."""
        json_values = isinstance(entries, EntryPacket) and entries.json_values
        routed, report = self.core.apply_entries(source_id, entries, json_values)
        self._forward_applied(source_id)
        by_host = self._by_host(routed)
        if tag is not None:  # every host with a query on the source hears from every shard
            for host, link in self._links.items():
                if source_id in link.sources and link.ready:
                    by_host.setdefault(host, {})
        links, piping = [], []
        piped = self.core.piped.get(source_id, ())
        for host, per_query in by_host.items():
            target = self._links.get(host)
            if target is None:
                continue
            delivery = target.send(self.index, host_packet(per_query, self.core.json_values, tag))
            links.append(target)
            if any(query_id in piped for query_id in per_query):
                piping.append(delivery)
        return links, piping, report

    async def _collect_rejections(
        self, piping: list[asyncio.Future[Any]], report: BatchReport
    ) -> None:
        """Wait for the deliveries that ran changes through pipelines; add the changes they
        failed on to the report (a host that is gone rejected nothing: its queries are
        bootstrapped again)."""
        for delivery in piping:
            with contextlib.suppress(Exception):
                rejected: list[Rejection] = await asyncio.shield(delivery)
                report.rejected.extend(rejected or ())

    def _by_host(self, routed: Mapping[str, list[Routed]]) -> dict[str, dict[str, list[Routed]]]:
        by_host: dict[str, dict[str, list[Routed]]] = {}
        hosts = self._hosts
        for query_id, deltas in routed.items():
            host = hosts.get(query_id)
            if host is not None:
                by_host.setdefault(host, {})[query_id] = deltas
        return by_host

    def _forward_applied(self, source_id: str) -> None:
        """One fire-and-forget call per batch to the change log (never waits on analytics)."""
        applied = self.core.applied
        if not applied or self._change_log is None:
            return
        records = [change_record(entry_id, change, delta) for entry_id, change, delta in applied]
        took = [delta is not None for _, _, delta in applied]
        applied.clear()
        self._change_log.append(
            source_id,
            [record for record, yes in zip(records, took, strict=True) if yes],
            [record for record, yes in zip(records, took, strict=True) if not yes],
        )

    async def _try_persist(self, source_id: str, report: BatchReport) -> Exception | None:
        try:
            await self._persist(source_id, report)
        except Exception as exc:
            logger.warning("shard %d: could not persist batch state: %s", self.index, exc)
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
            store = self.core.store(source_id)
            await self._state.save_elements(source_id, store, store.take_dirty(), counters)
            await self._save_histories()

    async def save_histories(self) -> None:
        """Write what changed in the element histories kept (after an attach recorded the
        versions of its snapshot)."""
        if self._state is not None and self.core.histories:
            async with self._persist_lock:
                await self._save_histories()

    async def _save_histories(self) -> None:
        """Write what changed in the kept histories (under the persist lock). A failed write
        is taken back, to be written with the next batch (the failure fails this one)."""
        assert self._state is not None
        for query_id, history in self.core.histories.items():
            writes = history.take_writes()
            try:
                await self._state.save_history(query_id, writes)
            except BaseException:
                history.retry_writes(writes)
                raise

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        """Forget the tombstones of ``source_id`` older than stream position ``bound``, in
        memory and in Redis; returns how many.

        The caller (a consumer's sweep) guarantees no change older than ``bound`` can come
        again. Done under the persist lock, so every record it keeps or drops was persisted
        first: a failed delete leaves tombstones in Redis, never an older live record.
        """
        store = self.core.stores.get(source_id)
        if store is None:
            return 0
        async with self._persist_lock:
            forgotten = store.forget_tombstones(bound)
            self.core.stats.tombstones_forgotten += len(forgotten)
            if forgotten and self._state is not None:
                await self._state.forget_elements(source_id, forgotten)
        if forgotten:
            logger.info(
                "shard %d: forgot %d tombstones of %s", self.index, len(forgotten), source_id
            )
        return len(forgotten)

    async def drop_source(self, source_id: str) -> int:
        """Forget ``source_id``'s elements, in memory and in Redis, and its counters (the app
        removed the source; its consumers are stopped and no query reads it). Done under the
        persist lock, so no write of its records lands after the delete. Returns how many
        elements (and tombstones) this shard held."""
        async with self._persist_lock:
            store = self.core.stores.pop(source_id, None)
            self.core.piped.pop(source_id, None)
            self.core.stats.per_source.pop(source_id, None)
            if self._state is not None:
                await self._state.forget_source(source_id)
        return 0 if store is None else len(store.record_ids())

    # -- barriers and status ------------------------------------------------------------

    async def flush_analytics(self) -> int:
        """Seal what this shard applied so far into the change log (its calls to the log are
        made in order, so this one comes after them); the rows the log holds."""
        if self._change_log is None:
            return 0
        return await self._change_log.flush()

    async def flush_deliveries(self) -> bool:
        """Wait until every delivery sent so far is done; whether every host link is ready
        (False: a host restarted and has not registered its queries again yet)."""
        for link in list(self._links.values()):
            await link.settled()
        return all(link.ready for link in self._links.values())

    async def stats(self) -> ShardReport:
        """The shard's live status."""
        durable = await self._durable_counters()
        return self.core.report(self.restarted, self.line_calls(), durable, self.index)

    async def _durable_counters(self) -> dict[str, dict[str, int]]:
        if self._state is None:
            return {}
        return {source: await self._state.load_counters(source) for source in self.core.stores}

    async def elements(self, source_id: str) -> list[Element]:
        return list(self.core.store(source_id).elements())

    # -- rescaling ----------------------------------------------------------------------

    async def fence(self) -> None:
        """First step of a rescale: refuse batches from now on, and return once every batch
        accepted before is applied and persisted (none is half done when records move)."""
        self.resharding = True
        await self._quiet.wait()

    async def export_moving(self, shards: int) -> list[MovedRecords]:
        """Hand over the records this shard will no longer own with ``shards`` shards, per
        new owner (after :meth:`fence`). They leave its memory; their durable records stay,
        now the new owner's (one still dirty here is written by the new owner)."""
        self.resharding = True
        moving: list[MovedRecords] = [[] for _ in range(shards)]
        for source_id, store in self.core.stores.items():
            dirty = store.dirty_ids()
            leaving = []
            for element_id in store.record_ids():
                owner = shard_of(element_id, shards)
                if owner != self.index:
                    record = store.snapshot_element(element_id)
                    moving[owner].append((source_id, element_id, record, element_id in dirty))
                    leaving.append(element_id)
            store.drop(leaving)
        return moving

    async def import_records(self, records: MovedRecords) -> int:
        """Load the records another shard handed over (during a rescale). Their durable
        records are these already, unless the old owner had not written them yet."""
        for source_id, element_id, record, dirty in records:
            store = self.core.store(source_id)
            store.load_element(element_id, record)
            if not dirty:
                store.mark_clean((element_id,))
        return len(records)

    async def finish_rescale(self, shards: int) -> None:
        """Own ``shards``-way slices from now on and accept batches split for that count."""
        self.shards = shards
        self.resharding = False


def host_packet(
    per_query: Mapping[str, list[Routed]], json_values: bool, tag: BatchTag | None
) -> HostPacket:
    """One host's packet: each delta (or piped change) once, and which queries see which."""
    deltas = {q: items for q, items in per_query.items() if not _is_piped(items)}
    piped = {q: items for q, items in per_query.items() if _is_piped(items)}
    unique_deltas, routes = _indexed(deltas)
    packet = HostPacket(DeltaPacket(unique_deltas, json_values), routes, tag)
    if piped:
        unique_changes, piped_routes = _indexed(piped)
        packet.changes = PipedPacket(unique_changes, json_values)
        packet.piped = piped_routes
    return packet


def _is_piped(items: Sequence[Routed]) -> bool:
    """A query's items of one batch are all deltas or all piped changes (one source)."""
    return bool(items) and isinstance(items[0], PipedChange)


def _indexed(
    per_query: Mapping[str, Sequence[Any]],
) -> tuple[list[Any], dict[str, list[int] | None]]:
    """Each item once, and per query the indices of its items (None: all, in order)."""
    if len(per_query) == 1:
        ((query_id, items),) = per_query.items()
        return list(items), {query_id: None}
    unique: list[Any] = []
    position: dict[int, int] = {}
    routes: dict[str, list[int] | None] = {}
    for query_id, items in per_query.items():
        indices = []
        for item in items:
            index = position.get(id(item))
            if index is None:
                index = position[id(item)] = len(unique)
                unique.append(item)
            indices.append(index)
        routes[query_id] = indices
    return unique, routes
