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
import dataclasses
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from drasi_ray.model.backoff import Backoff
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import ConfigError, GroupMissingError
from drasi_ray.source.acker import Acker, Riding
from drasi_ray.source.dispatcher import Dispatch, Dispatcher
from drasi_ray.source.housekeeping import ForgetTombstones, Housekeeping
from drasi_ray.source.lane import ConsumerStats, LaneState
from drasi_ray.source.reader import Reader, Screened
from drasi_ray.streams.backend import RedisStreamBackend
from drasi_ray.streams.records import StreamEntry


@dataclass(frozen=True, slots=True)
class ConsumerReport:
    """One consumer actor's live status (``DrasiRay.status().sources[id][i]``): its
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


@dataclass(frozen=True, slots=True)
class _InHand:
    """A batch of the read loop and the task dispatching and acking it."""

    screened: Screened
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


class StreamConsumer:
    """One consumer on one stream, as explicit stages (no Ray: tested directly).

    The stages (:mod:`drasi_ray.source.lane` says what they share): the :class:`~drasi_ray.
    source.reader.Reader` (the group, own pending and new entries, screening), the
    :class:`~drasi_ray.source.dispatcher.Dispatcher` (one batch downstream at a time, claims
    renewed), the :class:`~drasi_ray.source.acker.Acker` and the
    :class:`~drasi_ray.source.housekeeping.Housekeeping` timers (reclaim, trim, sweep). This
    class is their order: the consume loop, its prefetch, and the lifecycle.
    """

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
        own_stream = _own_stream(settings, stream)
        if forget_tombstones is not None and len(settings.stream_keys) > 1:
            raise ConfigError("a consumer of one stream of several cannot sweep tombstones alone")
        self.source_id = source_id
        self.settings = settings
        self.name = consumer_name
        self._lane = LaneState(source_id, settings, consumer_name, own_stream, backend)
        self.stats: ConsumerStats = self._lane.stats
        self._forget_tombstones = forget_tombstones
        self._ready = asyncio.Event()
        # Own pending entries are all accounted for (dispatching, or prefetched and renewed)
        # only while new entries are read and no ack is on its way; otherwise the reclaim
        # timer would claim them back from ourselves and process them again (out of turn).
        self._reading_new = False
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._in_hand: set[asyncio.Task[None]] = set()  # dispatch-and-ack tasks running
        self._reader = Reader(self._lane)
        self._dispatcher = Dispatcher(self._lane, dispatch)
        self._acker = Acker(self._lane)
        self._housekeeping = Housekeeping(
            self._lane,
            self._acker,
            lambda entries: self._handle(entries, first_delivery=False),
            lambda: self._reading_new and not self._acker.acking,
            lambda: self._ready.is_set(),
        )

    @property
    def stream(self) -> str:
        """The stream this consumer reads."""
        return self._lane.stream

    @property
    def ready(self) -> bool:
        """True once the group exists and own pending entries were drained (it stays true)."""
        return self._ready.is_set()

    @property
    def in_flight(self) -> int:
        """Entries read and not yet acked (bounded by ``max_in_flight``)."""
        return self._lane.in_flight.held

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the consume loop and the housekeeping timers as tasks of the running loop."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._consume_loop(), name=f"consume:{self.name}"),
            *self._housekeeping.tasks(self._forget_tombstones),
        ]

    async def wait_ready(self) -> None:
        """Return once the group exists and this consumer's pending entries are drained."""
        await self._ready.wait()

    async def stop(self) -> None:
        """Stop reading; let the batches in hand finish (and be acked); close the client."""
        self._stopping = self._housekeeping.stopping = True
        await self._lane.idle.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.stats.state = "stopped"
        await self._lane.backend.close()

    # -- the consume loop ---------------------------------------------------------------

    async def _consume_loop(self) -> None:
        backoff = Backoff()
        while not self._stopping:
            try:
                await self._reader.ensure_group(recreating=self._ready.is_set())
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
                self._lane.note_error(exc)
            except Exception as exc:  # any failure: back off, then resume from own pending
                self._reading_new = False
                await self._settle_in_hand()
                self._lane.note_error(exc)
                await backoff.wait()
            else:
                backoff.reset()

    async def _settle_in_hand(self) -> None:
        """Let a dispatched batch finish (acked or not) before own pending is re-read."""
        while self._in_hand:
            await asyncio.gather(*self._in_hand, return_exceptions=True)

    async def _drain_own_pending(self) -> None:
        """Re-read own pending entries ONE at a time, oldest first.

        Own pending entries exist only after a crash or a failed dispatch, and one of them may
        be what failed. Taking them singly means a poison entry fails alone: its delivery count
        rises once per attempt until it exceeds ``max_deliveries`` and is dead-lettered, while
        the entries behind it are read (and counted) only when their turn comes.
        """
        while not self._stopping:
            entries = await self._reader.read_own_pending()
            if not entries:
                return
            await self._handle(entries, first_delivery=False)

    async def _read_new_forever(self) -> None:
        """Read and screen the next batch while the previous one is dispatched; dispatch it
        once the previous is applied and the one before is acked. Raises their failure.

        When a read was not full (the stream is drained) there is nothing to read ahead: its
        batch is dispatched right here, and its XACK rides on the next read (one write, one
        round trip, no task: what a batch costs at low rates is mostly such fixed costs)."""
        previous: _InHand | None = None  # dispatching (or applied and being acked)
        acking: _InHand | None = None  # the one before: applied, its ack may be on its way
        riding: Riding | None = None  # applied here; its XACK goes with the next read
        try:
            while not self._stopping:
                entries, full = await self._read(riding)
                riding = None
                screened = (
                    await self._reader.screen(entries, first_delivery=True) if entries else None
                )
                if previous is not None and (screened is not None or previous.task.done()):
                    async with self._dispatcher.renewing(screened.ids if screened else []):
                        if acking is not None:
                            await self._after(acking.task, screened)
                        await self._applied(previous, screened)
                    acking, previous = previous, None
                if screened is None:
                    continue
                if full:  # a backlog: read the next batch while this one is dispatched
                    previous = _InHand(screened, self._start(self._dispatch_and_ack(screened)))
                    continue
                if acking is not None:
                    await self._after(acking.task, screened)
                    acking = None
                await self._dispatch_here(screened)
                riding = self._acker.ride(screened)
        finally:
            if riding is not None and not riding.settled:  # stopping: ack it on its own
                await self._acker.ack_riding(riding)
        for last in (acking, previous):
            if last is not None:
                await last.task

    async def _read(self, riding: Riding | None) -> tuple[list[StreamEntry], bool]:
        """The next read, with ``riding``'s XACK in the same write. Raises the XACK's failure
        once the read is back (the entries it read stay pending, to be read again)."""
        if riding is None:
            return await self._reader.read_new()
        try:
            entries, full = await self._reader.read_new(riding.ids, riding.settle)
        except BaseException as exc:
            riding.settle(exc)  # the XACK may not have reached Redis: read again later
            raise
        if riding.failure is not None:
            self._lane.in_flight.release(len(entries))
            raise riding.failure
        return entries, full

    async def _dispatch_here(self, screened: Screened) -> None:
        """Dispatch ``screened`` in the read loop itself; on failure the batch is given up
        (its entries stay pending) and the failure raised."""
        try:
            await self._dispatcher.dispatch(screened)
        except BaseException:
            self._lane.end_batch(len(screened.ids))
            raise

    async def _after(self, previous: asyncio.Task[None], held: Screened | None) -> None:
        """Wait for ``previous``; if it failed, give up the ``held`` batch (its entries stay
        pending, to be re-read in order after the failed ones) and raise the failure."""
        try:
            await previous
        except BaseException:
            if held is not None:
                self._lane.end_batch(len(held.ids))
            raise

    async def _applied(self, previous: _InHand, held: Screened | None) -> None:
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

    # -- one batch ----------------------------------------------------------------------

    async def _handle(self, entries: Sequence[StreamEntry], first_delivery: bool) -> None:
        """Screen, dispatch and ack one batch (raises if it was not applied)."""
        screened = await self._reader.screen(entries, first_delivery)
        await self._start(self._dispatch_and_ack(screened))

    def _start(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._in_hand.add(task)
        task.add_done_callback(self._in_hand.discard)
        return task

    async def _dispatch_and_ack(self, screened: Screened) -> None:
        """Dispatch the good entries in ONE call, then ack every entry of the batch."""
        try:
            await self._dispatcher.dispatch(screened)
            await self._acker.ack_batch(screened)
        finally:
            self._lane.end_batch(len(screened.ids))
