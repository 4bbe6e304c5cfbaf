"""A lane's reader: the group, its own pending entries, new entries, and screening.

It reads at most what ``max_in_flight`` leaves room for (:class:`~drasi_ray.source.lane.
InFlight`), its own pending entries one at a time (:meth:`Reader.read_own_pending`), new ones in
reads that grow while there is a backlog (:meth:`Reader.read_new`), and screens each batch
(:meth:`Reader.screen`): decoded entries go on to the dispatcher; entries over
``max_payload_bytes``, delivered more than ``max_deliveries`` times, or that do not decode are
dead-lettered first. The order in which these happen is the consumer's
(:class:`~drasi_ray.source.consumer.StreamConsumer`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.errors import DecodeError, StreamError
from drasi_ray.source.formats import decoder_for
from drasi_ray.source.lane import LaneState
from drasi_ray.streams.records import DeadLetter, StreamEntry

logger = logging.getLogger("drasi_ray.consumer")


@dataclass(slots=True)
class Screened:
    """A screened batch: every entry id (all are acked), the good entries to dispatch, and
    whether they are applied downstream (set before the ack is sent)."""

    ids: list[str]
    batch: tuple[DecodedEntry, ...] | None
    entries: Sequence[StreamEntry] = ()
    applied: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        """Let go of the entries and their decoded changes: the batch is applied (and what
        was rejected dead-lettered), and its ack needs only the ids. A backlog keeps a read
        or two more in hand until their acks: they then hold only their ids, and each
        batch's objects are freed while still in the CPU's cache (docs/performance.md)."""
        self.batch = None
        self.entries = ()


class Reader:
    """The reading stage of one lane (module docstring)."""

    def __init__(self, lane: LaneState) -> None:
        self._lane = lane
        self._read_size = lane.settings.batch_size  # adapts to load: _adapt_read_size
        self._decode = decoder_for(lane.settings)  # the source's format: platform, debezium, ...

    async def ensure_group(self, recreating: bool) -> None:
        """Create the group if it is missing: at ``start_id`` at first, at
        ``recreate_start_id`` when it went missing after the lane was ready (reported)."""
        lane = self._lane
        start = lane.settings.recreate_start_id if recreating else lane.settings.start_id
        created = await lane.backend.ensure_group(lane.stream, lane.group, start)
        if created and recreating:
            lane.stats.group_recreated += 1
            logger.warning(
                "consumer %s: group %s of stream %s was missing; recreated at %r",
                lane.name,
                lane.group,
                lane.stream,
                start,
            )

    async def read_own_pending(self) -> list[StreamEntry]:
        """The oldest of this consumer's own pending entries (one, or none left)."""
        lane = self._lane
        entries = await self._read_reserved(
            1, lambda count: lane.backend.read_pending(lane.stream, lane.group, lane.name, count)
        )
        lane.stats.redelivered += len(entries)
        return entries

    async def read_new(
        self, ack: Sequence[str] = (), acked: Callable[[int | StreamError], None] | None = None
    ) -> tuple[list[StreamEntry], bool]:
        """The next new entries (waiting up to ``block_ms``) and whether the read was full.
        ``ack`` and ``acked``: an XACK that rides on the read (:meth:`RedisStreamBackend.
        read_new <drasi_ray.streams.backend.RedisStreamBackend.read_new>`)."""
        lane, wanted = self._lane, self._read_size
        entries = await self._read_reserved(
            wanted,
            lambda count: lane.backend.read_new(
                lane.stream,
                lane.group,
                lane.name,
                count,
                lane.settings.block_ms,
                ack=ack,
                acked=acked,
            ),
        )
        full = len(entries) >= wanted
        self._adapt_read_size(full)
        return entries, full

    def _adapt_read_size(self, full: bool) -> None:
        """Double the next read after a full one (a backlog: fewer, larger batches, less
        per-batch cost in every actor), back to ``batch_size`` after a partial one (low
        latency when the stream is drained)."""
        settings = self._lane.settings
        if full:
            self._read_size = min(self._read_size * 2, settings.read_size_limit)
        else:
            self._read_size = settings.batch_size

    async def _read_reserved(
        self, wanted: int, read: Callable[[int], Awaitable[list[StreamEntry]]]
    ) -> list[StreamEntry]:
        """Read at most as many entries as ``max_in_flight`` leaves room for."""
        in_flight = self._lane.in_flight
        granted = await in_flight.reserve(wanted)
        try:
            entries = await read(granted)
        except BaseException:
            in_flight.release(granted)
            raise
        in_flight.release(granted - len(entries))
        return entries

    async def screen(self, entries: Sequence[StreamEntry], first_delivery: bool) -> Screened:
        """Decode the batch and dead-letter what must never reach the dispatch.

        That is entries over ``max_payload_bytes`` (unparsed), entries delivered more than
        ``max_deliveries`` times, and entries that do not decode. Entries whose data was
        deleted are just acked. The batch is in hand from now until the acker is done with it.
        """
        lane = self._lane
        lane.begin_batch()
        try:
            lane.stats.read += len(entries)
            lane.stats.batches += 1
            counts = {} if first_delivery else await self._delivery_counts(entries)
            decoded, dead = self._screen(entries, counts)
            if dead:
                await lane.dead_letter(dead)
        except BaseException:
            lane.end_batch(len(entries))
            raise
        return Screened(
            [entry.id for entry in entries], tuple(decoded) if decoded else None, entries
        )

    async def _delivery_counts(self, entries: Sequence[StreamEntry]) -> dict[str, int]:
        lane = self._lane
        return await lane.backend.delivery_counts(
            lane.stream, lane.group, [entry.id for entry in entries]
        )

    def _screen(
        self, entries: Sequence[StreamEntry], counts: dict[str, int]
    ) -> tuple[list[DecodedEntry], list[DeadLetter]]:
        lane = self._lane
        decoded: list[DecodedEntry] = []
        add = decoded.append  # per-entry hot loop: names bound once
        dead: list[DeadLetter] = []
        decode = self._decode
        limit = lane.settings.max_deliveries
        max_bytes = lane.settings.max_payload_bytes
        for entry in entries:
            entry_id, fields = entry.id, entry.fields
            if fields is None:
                lane.stats.deleted_acked += 1
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
            logger.warning("consumer %s: dead-lettering entry %s: %s", lane.name, entry_id, reason)
            dead.append(lane.letter(entry, reason, deliveries))
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
            f"({self._lane.settings.max_payload_bytes}); not parsed"
        )
