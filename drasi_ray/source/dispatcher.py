"""A lane's dispatcher: one screened batch downstream at a time, its claims kept meanwhile.

:meth:`Dispatcher.dispatch` hands a batch's decoded entries to the consumer's
:data:`Dispatch` in ONE call (the store shards, in the app), one
batch at a time whether it came from the read loop or the reclaim timer, renews this consumer's
claim on the batch's entries while the call runs, dead-letters the entries the dispatch
reported as rejected (a query's pipeline failed on them), and then marks the batch applied: it
may be acked, and only its ids are kept for that (:meth:`~drasi_ray.source.reader.Screened.
release`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from drasi_ray.model.changes import DecodedEntry
from drasi_ray.source.lane import LaneState
from drasi_ray.source.reader import Screened
from drasi_ray.streams.records import Rejection

logger = logging.getLogger("drasi_ray.consumer")

Dispatch = Callable[[tuple[DecodedEntry, ...]], Awaitable[object]]
"""Hands one decoded batch downstream; returns when it is applied (raises if it was not). What
it returns may list entries to dead-letter in a ``rejected`` attribute (:class:`Rejection`)."""


class Dispatcher:
    """The dispatching stage of one lane (module docstring)."""

    def __init__(self, lane: LaneState, dispatch: Dispatch) -> None:
        self._lane = lane
        self._dispatch = dispatch
        self._batch_lock = asyncio.Lock()  # ONE dispatch at a time (read loop and reclaim)

    async def dispatch(self, screened: Screened) -> None:
        """Dispatch the good entries in ONE call (none: nothing to do), dead-letter what the
        dispatch rejected, then mark the batch applied. Raises if it was not applied."""
        if screened.batch is not None:
            async with self._batch_lock:
                report = await self._dispatch_renewing(screened.ids, screened.batch)
            self._lane.stats.dispatched += len(screened.batch)
            await self._dead_letter_rejected(screened, report)
        screened.release()
        screened.applied.set()

    async def _dead_letter_rejected(self, screened: Screened, report: object) -> None:
        """Dead-letter the entries the dispatch rejected (one dead letter per entry, every
        distinct reason joined: the shards of a batch may report the same one), before the
        batch is acked."""
        rejected: Sequence[Rejection] = getattr(report, "rejected", ())
        if not rejected:
            return
        lane = self._lane
        reasons: dict[str, dict[str, None]] = {}
        for rejection in rejected:
            reasons.setdefault(rejection.entry_id, {})[rejection.reason] = None
        dead = [
            lane.letter(entry, "; ".join(reasons[entry.id]), 1)
            for entry in screened.entries
            if entry.id in reasons
        ]
        for letter in dead:
            logger.warning(
                "consumer %s: dead-lettering entry %s: %s",
                lane.name,
                letter.entry_id,
                letter.reason,
            )
        await lane.dead_letter(dead)

    async def _dispatch_renewing(self, ids: list[str], batch: tuple[DecodedEntry, ...]) -> object:
        """Dispatch, renewing our claim on ``ids`` while it runs so peers do not steal them.

        A live but slow batch would otherwise look idle to the peers' reclaim timers after
        ``claim_idle_ms`` and be processed twice. The renewer is told to stop rather than
        cancelled, so a Redis command is never abandoned halfway through its reply.
        """
        async with self.renewing(ids):
            return await self._dispatch(batch)

    @contextlib.asynccontextmanager
    async def renewing(self, ids: list[str]) -> AsyncIterator[None]:
        """Keep renewing our claim on ``ids`` (if any) for the duration of the block."""
        if not ids:
            yield
            return
        renewal = _Renewal(self._lane, ids)
        try:
            yield
        finally:
            await renewal.stop()


class _Renewal:
    """Renews a consumer's claim on ``ids`` every ``claim_idle_ms / 3`` until stopped.

    A timer, not a task: most batches are done long before the first renewal is due, and a
    timer that never fires costs next to nothing. A renewal under way is let finish, never
    cancelled, so a Redis command is not abandoned halfway through its reply.
    """

    def __init__(self, lane: LaneState, ids: list[str]) -> None:
        self._lane = lane
        self._ids = ids
        self._period = max(lane.settings.claim_idle_ms / 3000, 0.01)
        self._loop = asyncio.get_running_loop()
        self._running: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(self._period, self._due)

    def _due(self) -> None:
        self._timer = None
        self._running = self._loop.create_task(self._renew())

    async def _renew(self) -> None:
        lane = self._lane
        try:
            await lane.backend.renew_claim(lane.stream, lane.group, lane.name, self._ids)
            lane.stats.claims_renewed += 1
        except Exception as exc:  # the batch goes on; the next renewal tries again
            lane.note_side_error("renewing claims", exc)
        finally:
            self._running = None
            if self._ids:  # not stopped meanwhile: the next one
                self._timer = self._loop.call_later(self._period, self._due)

    async def stop(self) -> None:
        """No more renewals; wait for one under way (its failure is the next batch's)."""
        self._ids = []
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        running = self._running
        if running is not None:
            await asyncio.gather(running, return_exceptions=True)
