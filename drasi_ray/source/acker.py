"""A lane's acker: acknowledge a batch once it is applied, then let its entries go.

Entries are acked only after the dispatch returned (the shards applied them durably), every
entry of the batch, dead-lettered ones included, in one ``XACK``: on its own
(:meth:`Acker.ack_batch`), or riding on the lane's next read (:meth:`Acker.ride`: the XACK
and the ``XREADGROUP`` in one write, which spares a round trip per batch when the stream is
drained). While an ack is on its way (:attr:`Acker.acking`) the reclaim timer stays still: the
entries being acked are still pending in Redis and would look idle to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from drasi_ray.source.lane import LaneState
from drasi_ray.source.reader import Screened


class Riding:
    """The XACK of one applied batch, riding on a read (:meth:`Acker.ride`). :meth:`settle`
    it once with its outcome: the reply's count, or why it failed (``failure``)."""

    def __init__(self, ids: list[str], done: Callable[[Riding, bool], None]) -> None:
        self.ids = ids
        self.failure: BaseException | None = None
        self._done: Callable[[Riding, bool], None] | None = done

    @property
    def settled(self) -> bool:
        return self._done is None

    def settle(self, outcome: int | BaseException) -> None:
        """The XACK answered ``outcome``; the batch is done with (later calls do nothing)."""
        done, self._done = self._done, None
        if done is None:
            return
        if isinstance(outcome, BaseException):
            self.failure = outcome
        done(self, self.failure is None)


class Acker:
    """The acking stage of one lane (module docstring)."""

    def __init__(self, lane: LaneState) -> None:
        self._lane = lane
        self._acking = 0

    @property
    def acking(self) -> bool:
        """Whether an ack is on its way."""
        return self._acking > 0

    async def ack_batch(self, screened: Screened) -> None:
        """Ack every entry of an applied batch."""
        self._acking += 1
        try:
            await self.ack(screened.ids)
        finally:
            self._acking -= 1

    def ride(self, screened: Screened) -> Riding:
        """The XACK of an applied batch, to be sent with the next read: its entries no longer
        count against ``max_in_flight`` (so that read always has room), and the batch stays in
        hand until :meth:`Riding.settle`."""
        self._acking += 1
        self._lane.in_flight.release(len(screened.ids))
        return Riding(screened.ids, self._rode)

    async def ack_riding(self, riding: Riding) -> None:
        """Send ``riding``'s XACK on its own (the read it was to ride on will not happen)."""
        lane = self._lane
        try:
            await lane.backend.ack(lane.stream, lane.group, list(riding.ids))
        except BaseException as exc:
            riding.settle(exc)
            raise
        riding.settle(len(riding.ids))

    def _rode(self, riding: Riding, acked: bool) -> None:
        self._acking -= 1
        lane = self._lane
        lane.end_batch(0)  # its entries stopped counting as in flight when it set off
        if acked:
            lane.stats.acked += len(riding.ids)

    async def ack(self, ids: Sequence[str]) -> None:
        lane = self._lane
        await lane.backend.ack(lane.stream, lane.group, list(ids))
        lane.stats.acked += len(ids)
