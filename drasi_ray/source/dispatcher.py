"""A lane's dispatcher: one screened batch downstream at a time, its claims kept meanwhile.

:meth:`Dispatcher.dispatch` hands a batch's decoded entries to the consumer's
:data:`Dispatch` in ONE call (the store shards, in the app), one
batch at a time whether it came from the read loop or the reclaim timer, renews this consumer's
claim on the batch's entries while the call runs, dead-letters the entries the dispatch
reported as rejected (a query's pipeline failed on them), and then marks the batch applied: it
may be acked.
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
        done = asyncio.Event()
        renewer = asyncio.get_running_loop().create_task(self._renew_claims(ids, done))
        try:
            yield
        finally:
            done.set()
            await asyncio.gather(renewer, return_exceptions=True)

    async def _renew_claims(self, ids: list[str], done: asyncio.Event) -> None:
        lane = self._lane
        period = max(lane.settings.claim_idle_ms / 3000, 0.01)
        while not done.is_set():
            try:
                await asyncio.wait_for(done.wait(), period)
            except asyncio.TimeoutError:
                await lane.backend.renew_claim(lane.stream, lane.group, lane.name, ids)
                lane.stats.claims_renewed += 1
