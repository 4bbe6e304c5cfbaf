"""One named consumer of a consumer group on one stream: read, decode, dispatch, ack; reclaim
on a timer. A source of several streams runs one per stream in each consumer actor
(:mod:`drasi_ray.source.lanes`).

Resume contract: on start (and after any failure) the consumer first re-reads its *own* pending
entries from id ``0`` until none are left, then reads new ones with ``>``. A peer that died for
good is covered by every live consumer's reclaim timer (``XAUTOCLAIM`` of entries idle longer
than ``claim_idle_ms``). Entries are acked only after the dispatch call returned, i.e. after the
coordinator confirmed the batch applied and delivered: at-least-once, and applying twice is a
no-op thanks to the versioned store.

Prefetch: while the coordinator applies a full batch (a backlog), the consumer reads and
decodes the next (``max_in_flight`` bounds the entries held unacked); after a partial batch it
waits until that batch is applied, leaving new entries to idle peers (lower latency at low
load). Read sizes adapt the same way: each full read doubles the next one (up to
``read_size_limit``), a partial read resets it to ``batch_size``. Dispatches stay one at a
time, the next starting when the previous is applied, so one consumer applies the stream in
stream order; the previous batch's ack overlaps the next dispatch (it must have succeeded
before the dispatch after that). A failed batch or ack stops the reading, and the prefetched
batch is left pending to be re-read (a re-read of an applied entry is a no-op).

Claims: the batch being dispatched and the batch read ahead both have their claims renewed
while they wait, and the reclaim timer runs only while new entries are read and no ack is on
its way. So every entry this consumer holds is either renewed, being acked or being re-read by
its own drain, never taken back by its own timer (which would apply it out of turn, and twice).

Malformed entries never reach the dispatch: they are written to the dead-letter stream with the
decode error and their raw fields, and only then acked. Entries the dispatch reports as
rejected (a query's source middleware failed on them: :class:`Rejection`) are dead-lettered the
same way, with the reason, after the dispatch and before the ack.

Failures never hot-loop: Redis outages and dispatch failures back off exponentially with jitter
(:class:`~drasi_ray.model.backoff.Backoff`, capped at 5 s); a missing group (NOGROUP after a
flush or restart) is recreated with the configured ``start_id`` and reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from drasi_ray.model.backoff import Backoff
from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import ConfigError, DecodeError, GroupMissingError, StreamError
from drasi_ray.source.formats import decoder_for
from drasi_ray.streams.backend import RedisStreamBackend
from drasi_ray.streams.records import DeadLetter, Rejection, StreamEntry

logger = logging.getLogger("drasi_ray.consumer")

Dispatch = Callable[[tuple[DecodedEntry, ...]], Awaitable[object]]
"""Hands one decoded batch downstream; returns when it is applied (raises if it was not). What
it returns may list entries to dead-letter in a ``rejected`` attribute (:class:`Rejection`)."""

ForgetTombstones = Callable[[tuple[int, int]], Awaitable[int]]
"""Tells the element store the stream position below which tombstones can go (a count back)."""


@dataclass(slots=True)
class ConsumerStats:
    """Counters of one consumer, reported by ``status()``."""

    read: int = 0
    batches: int = 0
    dispatched: int = 0
    dead_lettered: int = 0
    acked: int = 0
    reclaimed: int = 0
    redelivered: int = 0
    deleted_acked: int = 0
    errors: int = 0
    group_recreated: int = 0
    claims_renewed: int = 0
    trimmed: int = 0
    tombstones_forgotten: int = 0
    state: str = "starting"
    last_error: str | None = None
    extra: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConsumerReport:
    """One consumer actor's live status (``DrasiRay.status()["sources"][id][i]``): its
    :class:`ConsumerStats` counters at one moment, and what only the actor knows."""

    stats: ConsumerStats
    name: str
    restarted: bool
    in_flight: int
    rss_bytes: int
    streams: dict[str, ConsumerStats] = field(default_factory=dict)
    """Per stream of the source, the counters of that stream alone (``stats`` adds them up)."""

    def as_dict(self) -> dict[str, Any]:
        """The plain-data form: the counters, then the actor's fields, side by side, and
        ``streams``: per stream its own counters."""
        report = dataclasses.asdict(self.stats)
        report.update(
            name=self.name,
            restarted=self.restarted,
            in_flight=self.in_flight,
            rss_bytes=self.rss_bytes,
            streams={name: dataclasses.asdict(part) for name, part in self.streams.items()},
        )
        return report


def backend_for(settings: PlatformSourceConfig) -> RedisStreamBackend:
    """The stream backend a consumer with ``settings`` needs.

    redis-py 8 gives every connection a 5 s socket timeout by default, which would cut a
    blocking XREADGROUP with ``block_ms`` >= 5000 (Drasi's default) short with a timeout error
    on every idle read. The read timeout must exceed the block time; 10 s of margin also
    leaves room for a slow server, while a dead peer is still noticed.
    """
    return RedisStreamBackend.from_url(
        settings.redis_url,
        socket_timeout=settings.block_ms / 1000 + 10,
        socket_keepalive=True,
    )


@dataclass(slots=True)
class _Screened:
    """A screened batch: every entry id (all are acked), the good entries to dispatch, and
    whether they are applied downstream (set before the ack is sent)."""

    ids: list[str]
    batch: tuple[DecodedEntry, ...] | None
    entries: Sequence[StreamEntry] = ()
    applied: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True, slots=True)
class _InHand:
    """A batch of the read loop and the task dispatching and acking it."""

    screened: _Screened
    task: asyncio.Task[None]


def _own_stream(settings: PlatformSourceConfig, stream: str | None) -> str:
    if stream is None:
        if len(settings.stream_keys) > 1:
            raise ConfigError(
                f"the source reads {len(settings.stream_keys)} streams; name the consumer's one"
            )
        return settings.stream_keys[0]
    if stream not in settings.stream_keys:
        raise ConfigError(
            f"stream {stream!r} is not one of the source's ({settings.streams_label})"
        )
    return stream


class InFlight:
    """Bounds the entries a consumer holds unacked; readers reserve room before reading."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._changed = asyncio.Condition()

    async def reserve(self, wanted: int) -> int:
        """Wait for room, then hold up to ``wanted`` entries; returns how many were granted."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.held < self.limit)
            granted = min(wanted, self.limit - self.held)
            self.held += granted
            return granted

    async def release(self, count: int) -> None:
        if count <= 0:
            return
        async with self._changed:
            self.held -= count
            self._changed.notify_all()


class StreamConsumer:
    """The consume loop and reclaim timer of one consumer (no Ray: tested directly)."""

    def __init__(
        self,
        source_id: str,
        settings: PlatformSourceConfig,
        consumer_name: str,
        backend: RedisStreamBackend,
        dispatch: Dispatch,
        forget_tombstones: ForgetTombstones | None = None,
        *,
        stream: str | None = None,
    ) -> None:
        """``forget_tombstones(bound)`` (optional) is called every ``tombstone_sweep_ms`` with
        the stream position below which no change can come again (see
        :meth:`RedisStreamBackend.tombstone_bound`); it returns how many it forgot. Only a
        consumer of a one-stream source may sweep on its own: with several streams the bound is
        the lowest of them all (:class:`~drasi_ray.source.lanes.ConsumerLanes` sweeps).

        ``stream``: the stream of ``settings.stream_keys`` this consumer reads; None for a
        source of one stream. ConfigError if it is not one of them.
        """
        self.source_id = source_id
        self.settings = settings
        self.name = consumer_name
        self.stats = ConsumerStats()
        self._backend = backend
        self._dispatch = dispatch
        self._forget_tombstones = forget_tombstones
        self._stream = _own_stream(settings, stream)
        if forget_tombstones is not None and len(settings.stream_keys) > 1:
            raise ConfigError("a consumer of one stream of several cannot sweep tombstones alone")
        self._group = settings.consumer_group
        self._ready = asyncio.Event()
        # Own pending entries are all accounted for (dispatching, or prefetched and renewed)
        # only while new entries are read and no ack is on its way; otherwise the reclaim
        # timer would claim them back from ourselves and process them again (out of turn).
        self._reading_new = False
        self._acking = 0
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._batch_lock = asyncio.Lock()  # ONE dispatch at a time (read loop and reclaim)
        self._in_hand: set[asyncio.Task[None]] = set()  # dispatch-and-ack tasks running
        self._active = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._in_flight = InFlight(max(settings.max_in_flight, 1))
        self._read_size = settings.batch_size  # adapts to load: _adapt_read_size
        self._decode = decoder_for(settings)  # the source's format: platform, debezium, ...

    @property
    def stream(self) -> str:
        """The stream this consumer reads."""
        return self._stream

    @property
    def ready(self) -> bool:
        """True once the group exists and own pending entries were drained (it stays true)."""
        return self._ready.is_set()

    @property
    def in_flight(self) -> int:
        """Entries read and not yet acked (bounded by ``max_in_flight``)."""
        return self._in_flight.held

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the consume loop and the reclaim timer as tasks of the running loop."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._consume_loop(), name=f"consume:{self.name}"),
            loop.create_task(self._reclaim_loop(), name=f"reclaim:{self.name}"),
        ]
        settings, forget = self.settings, self._forget_tombstones
        if settings.trim_acked:
            trim = self._housekeeping("retention trim", settings.trim_interval_ms, self._trim_once)
            self._tasks.append(loop.create_task(trim, name=f"trim:{self.name}"))
        if forget is not None and (ttl_ms := settings.tombstone_ttl_ms) is not None:
            sweep = self._housekeeping(
                "tombstone sweep",
                settings.tombstone_sweep_ms,
                lambda: self._sweep_once(forget, ttl_ms),
            )
            self._tasks.append(loop.create_task(sweep, name=f"sweep:{self.name}"))

    async def wait_ready(self) -> None:
        """Return once the group exists and this consumer's pending entries are drained."""
        await self._ready.wait()

    async def stop(self) -> None:
        """Stop reading; let the batches in hand finish (and be acked); close the client."""
        self._stopping = True
        await self._idle.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.stats.state = "stopped"
        await self._backend.close()

    # -- loops --------------------------------------------------------------------------

    async def _consume_loop(self) -> None:
        backoff = Backoff()
        while not self._stopping:
            try:
                await self._ensure_group()
                await self._drain_own_pending()
                self._ready.set()
                self.stats.state = "running"
                self._reading_new = True
                await self._read_new_forever()
            except asyncio.CancelledError:
                raise
            except GroupMissingError as exc:
                self._reading_new = False
                await self._settle_in_hand()
                self._note_error(exc)
            except Exception as exc:  # any failure: back off, then resume from own pending
                self._reading_new = False
                await self._settle_in_hand()
                self._note_error(exc)
                await backoff.wait()
            else:
                backoff.reset()

    async def _settle_in_hand(self) -> None:
        """Let a dispatched batch finish (acked or not) before own pending is re-read."""
        while self._in_hand:
            await asyncio.gather(*self._in_hand, return_exceptions=True)

    async def _ensure_group(self) -> None:
        recreating = self._ready.is_set()
        start = self.settings.recreate_start_id if recreating else self.settings.start_id
        created = await self._backend.ensure_group(self._stream, self._group, start)
        if created and recreating:
            self.stats.group_recreated += 1
            logger.warning(
                "consumer %s: group %s of stream %s was missing; recreated at %r",
                self.name,
                self._group,
                self._stream,
                start,
            )

    async def _drain_own_pending(self) -> None:
        """Re-read own pending entries ONE at a time, oldest first.

        Own pending entries exist only after a crash or a failed dispatch, and one of them may
        be what failed. Taking them singly means a poison entry fails alone: its delivery count
        rises once per attempt until it exceeds ``max_deliveries`` and is dead-lettered, while
        the entries behind it are read (and counted) only when their turn comes.
        """
        while not self._stopping:
            entries = await self._read_reserved(
                1,
                lambda count: self._backend.read_pending(
                    self._stream, self._group, self.name, count
                ),
            )
            if not entries:
                return
            self.stats.redelivered += len(entries)
            await self._handle(entries, first_delivery=False)

    async def _read_new_forever(self) -> None:
        """Read and screen the next batch while the previous one is dispatched; dispatch it
        once the previous is applied and the one before is acked. Raises their failure."""
        previous: _InHand | None = None  # dispatching (or applied and being acked)
        acking: _InHand | None = None  # the one before: applied, its ack may be on its way
        while not self._stopping:
            wanted = self._read_size
            entries = await self._read_reserved(
                wanted,
                lambda count: self._backend.read_new(
                    self._stream, self._group, self.name, count, self.settings.block_ms
                ),
            )
            self._adapt_read_size(len(entries) >= wanted)
            screened = await self._screen_batch(entries, first_delivery=True) if entries else None
            if previous is not None and (screened is not None or previous.task.done()):
                async with self._renewing(screened.ids if screened else []):
                    if acking is not None:
                        await self._after(acking.task, screened)
                    await self._applied(previous, screened)
                acking, previous = previous, None
            if screened is not None:
                previous = _InHand(screened, self._start(self._dispatch_and_ack(screened)))
                if len(entries) < wanted:
                    # The stream is drained: reading ahead would only hold new entries back
                    # from idle peers. Prefetch when there is a backlog (full batches).
                    if acking is not None:
                        await self._after(acking.task, None)
                    await self._applied(previous, None)
                    acking, previous = previous, None
        for last in (acking, previous):
            if last is not None:
                await last.task

    def _adapt_read_size(self, full: bool) -> None:
        """Double the next read after a full one (a backlog: fewer, larger batches, less
        per-batch cost in every actor), back to ``batch_size`` after a partial one (low
        latency when the stream is drained)."""
        if full:
            self._read_size = min(self._read_size * 2, self.settings.read_size_limit)
        else:
            self._read_size = self.settings.batch_size

    async def _after(self, previous: asyncio.Task[None], held: _Screened | None) -> None:
        """Wait for ``previous``; if it failed, give up the ``held`` batch (its entries stay
        pending, to be re-read in order after the failed ones) and raise the failure."""
        try:
            await previous
        except BaseException:
            if held is not None:
                await self._done_with(len(held.ids))
            raise

    async def _applied(self, previous: _InHand, held: _Screened | None) -> None:
        """:meth:`_after`, but return as soon as ``previous`` is applied: its ack may still be
        on its way (the next dispatch need not wait a Redis round trip for it). A failure of
        that ack surfaces at the next :meth:`_after` of the same batch."""
        if not previous.screened.applied.is_set():
            applied = asyncio.ensure_future(previous.screened.applied.wait())
            try:
                await asyncio.wait((previous.task, applied), return_when=asyncio.FIRST_COMPLETED)
            finally:
                applied.cancel()
        if not previous.screened.applied.is_set():
            await self._after(previous.task, held)  # it ended before applying: raises

    async def _read_reserved(
        self, wanted: int, read: Callable[[int], Awaitable[list[StreamEntry]]]
    ) -> list[StreamEntry]:
        """Read at most as many entries as ``max_in_flight`` leaves room for."""
        granted = await self._in_flight.reserve(wanted)
        try:
            entries = await read(granted)
        except BaseException:
            await self._in_flight.release(granted)
            raise
        await self._in_flight.release(granted - len(entries))
        return entries

    async def _housekeeping(
        self, what: str, interval_ms: int, work: Callable[[], Awaitable[None]]
    ) -> None:
        """Run ``work`` every ``interval_ms``; a failure is noted and the next period tries
        again (consuming goes on)."""
        while not self._stopping:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await work()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._note_side_error(what, exc)

    async def _trim_once(self) -> None:
        """Opt-in retention: every consumer trims (XTRIM MINID is idempotent and cheap)."""
        self.stats.trimmed += await self._backend.trim_acked(self._stream)

    async def _sweep_once(self, forget: ForgetTombstones, ttl_ms: int) -> None:
        """Tell the store which tombstones can go (idempotent: every consumer sweeps), once
        the group is ready."""
        if not self._ready.is_set():
            return
        bound = await self._backend.tombstone_bound(self._stream, self._group, ttl_ms)
        if bound is not None:
            self.stats.tombstones_forgotten += await forget(bound)

    async def _reclaim_loop(self) -> None:
        interval = self.settings.reclaim_interval_ms / 1000
        while not self._stopping:
            await asyncio.sleep(interval)
            if not self._reading_new or self._acking:
                continue
            try:
                await self._reclaim_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._note_error(exc)

    async def _reclaim_once(self) -> None:
        """Claim peers' entries idle past ``claim_idle_ms``; they count against max_in_flight."""
        granted = await self._in_flight.reserve(self.settings.batch_size)
        try:
            claim = await self._backend.autoclaim(
                self._stream, self._group, self.name, self.settings.claim_idle_ms, granted
            )
        except BaseException:
            await self._in_flight.release(granted)
            raise
        await self._in_flight.release(granted - len(claim.entries))
        if claim.deleted_ids:
            await self._ack(claim.deleted_ids)
            self.stats.deleted_acked += len(claim.deleted_ids)
        if claim.entries:
            self.stats.reclaimed += len(claim.entries)
            self.stats.redelivered += len(claim.entries)
            logger.info("consumer %s reclaimed %d idle entries", self.name, len(claim.entries))
            await self._handle(list(claim.entries), first_delivery=False)

    # -- one batch ----------------------------------------------------------------------

    async def _handle(self, entries: Sequence[StreamEntry], first_delivery: bool) -> None:
        """Screen, dispatch and ack one batch (raises if it was not applied)."""
        screened = await self._screen_batch(entries, first_delivery)
        await self._start(self._dispatch_and_ack(screened))

    def _start(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._in_hand.add(task)
        task.add_done_callback(self._in_hand.discard)
        return task

    async def _screen_batch(
        self, entries: Sequence[StreamEntry], first_delivery: bool
    ) -> _Screened:
        """Decode the batch and dead-letter what must never reach the dispatch.

        That is entries over ``max_payload_bytes`` (unparsed), entries delivered more than
        ``max_deliveries`` times, and entries that do not decode. Entries whose data was
        deleted are just acked. The batch counts as active until :meth:`_dispatch_and_ack`.
        """
        self._active += 1
        self._idle.clear()
        try:
            self.stats.read += len(entries)
            self.stats.batches += 1
            counts = {} if first_delivery else await self._delivery_counts(entries)
            decoded, dead = self._screen(entries, counts)
            if dead:
                await self._backend.dead_letter(
                    self.settings.dead_letter_key, dead, self.settings.dead_letter_maxlen
                )
                self.stats.dead_lettered += len(dead)
        except BaseException:
            await self._done_with(len(entries))
            raise
        return _Screened(
            [entry.id for entry in entries], tuple(decoded) if decoded else None, entries
        )

    async def _dispatch_and_ack(self, screened: _Screened) -> None:
        """Dispatch the good entries in ONE call, then ack every entry of the batch."""
        try:
            if screened.batch is not None:
                async with self._batch_lock:
                    report = await self._dispatch_renewing(screened.ids, screened.batch)
                self.stats.dispatched += len(screened.batch)
                await self._dead_letter_rejected(screened, report)
            screened.applied.set()
            self._acking += 1
            try:
                await self._ack(screened.ids)
            finally:
                self._acking -= 1
        finally:
            await self._done_with(len(screened.ids))

    async def _done_with(self, count: int) -> None:
        await self._in_flight.release(count)
        self._active -= 1
        if self._active == 0:
            self._idle.set()

    async def _delivery_counts(self, entries: Sequence[StreamEntry]) -> dict[str, int]:
        return await self._backend.delivery_counts(
            self._stream, self._group, [entry.id for entry in entries]
        )

    def _screen(
        self, entries: Sequence[StreamEntry], counts: dict[str, int]
    ) -> tuple[list[DecodedEntry], list[DeadLetter]]:
        decoded: list[DecodedEntry] = []
        add = decoded.append  # per-entry hot loop: names bound once
        dead: list[DeadLetter] = []
        decode = self._decode
        limit = self.settings.max_deliveries
        max_bytes = self.settings.max_payload_bytes
        for entry in entries:
            entry_id, fields = entry.id, entry.fields
            if fields is None:
                self.stats.deleted_acked += 1
                continue
            deliveries = counts.get(entry_id, 1) if counts else 1
            size = sum(map(len, fields.values()))  # values dominate; names are a few bytes
            if deliveries > limit or size > max_bytes:
                reason = self._refusal(size, deliveries, limit)
            else:
                try:
                    add(decode(entry_id, fields))
                    continue
                except DecodeError as exc:
                    reason = exc.reason
            logger.warning("consumer %s: dead-lettering entry %s: %s", self.name, entry_id, reason)
            dead.append(self._dead_letter(entry, reason, deliveries))
        return decoded, dead

    def _refusal(self, size: int, deliveries: int, limit: int) -> str:
        """Why an entry is dead-lettered unparsed: delivered too often, or too large."""
        if deliveries > limit:
            return (
                f"delivered {deliveries} times, more than max_deliveries ({limit}): "
                "processing it failed every time"
            )
        return (
            f"entry of {size} bytes exceeds max_payload_bytes "
            f"({self.settings.max_payload_bytes}); not parsed"
        )

    async def _dead_letter_rejected(self, screened: _Screened, report: object) -> None:
        """Dead-letter the entries the dispatch rejected (one dead letter per entry, every
        distinct reason joined: the shards of a batch may report the same one), before the
        batch is acked."""
        rejected: Sequence[Rejection] = getattr(report, "rejected", ())
        if not rejected:
            return
        reasons: dict[str, dict[str, None]] = {}
        for rejection in rejected:
            reasons.setdefault(rejection.entry_id, {})[rejection.reason] = None
        dead = [
            self._dead_letter(entry, "; ".join(reasons[entry.id]), 1)
            for entry in screened.entries
            if entry.id in reasons
        ]
        for letter in dead:
            logger.warning(
                "consumer %s: dead-lettering entry %s: %s",
                self.name,
                letter.entry_id,
                letter.reason,
            )
        await self._backend.dead_letter(
            self.settings.dead_letter_key, dead, self.settings.dead_letter_maxlen
        )
        self.stats.dead_lettered += len(dead)

    async def _dispatch_renewing(self, ids: list[str], batch: tuple[DecodedEntry, ...]) -> object:
        """Dispatch, renewing our claim on ``ids`` while it runs so peers do not steal them.

        A live but slow batch would otherwise look idle to the peers' reclaim timers after
        ``claim_idle_ms`` and be processed twice. The renewer is told to stop rather than
        cancelled, so a Redis command is never abandoned halfway through its reply.
        """
        async with self._renewing(ids):
            return await self._dispatch(batch)

    @contextlib.asynccontextmanager
    async def _renewing(self, ids: list[str]) -> AsyncIterator[None]:
        """Keep renewing our claim on ``ids`` (if any) for the duration of the block."""
        if not ids:
            yield
            return
        done = asyncio.Event()
        renewer = asyncio.get_running_loop().create_task(self._renew_claims(ids, done))
        try:
            yield
        finally:
            done.set()
            await asyncio.gather(renewer, return_exceptions=True)

    async def _renew_claims(self, ids: list[str], done: asyncio.Event) -> None:
        period = max(self.settings.claim_idle_ms / 3000, 0.01)
        while not done.is_set():
            try:
                await asyncio.wait_for(done.wait(), period)
            except asyncio.TimeoutError:
                await self._backend.renew_claim(self._stream, self._group, self.name, ids)
                self.stats.claims_renewed += 1

    def _dead_letter(self, entry: StreamEntry, reason: str, deliveries: int) -> DeadLetter:
        return DeadLetter(
            entry_id=entry.id,
            reason=reason,
            fields=entry.fields,
            source_stream=self._stream,
            consumer=self.name,
            delivery_count=deliveries,
        )

    async def _ack(self, ids: Sequence[str]) -> None:
        await self._backend.ack(self._stream, self._group, list(ids))
        self.stats.acked += len(ids)

    def _note_side_error(self, what: str, exc: BaseException) -> None:
        """A failure of housekeeping (trim, sweep): counted and logged; consuming goes on, so
        the state is left alone. The next period tries again."""
        self.stats.errors += 1
        self.stats.last_error = f"{what}: {type(exc).__name__}: {exc}"
        logger.warning("consumer %s: %s", self.name, self.stats.last_error)

    def _note_error(self, exc: BaseException) -> None:
        self.stats.errors += 1
        self.stats.last_error = f"{type(exc).__name__}: {exc}"
        self.stats.state = "recovering"
        level = logging.WARNING if isinstance(exc, StreamError) else logging.ERROR
        logger.log(level, "consumer %s: %s", self.name, self.stats.last_error)
