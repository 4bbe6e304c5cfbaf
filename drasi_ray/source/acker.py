"""A lane's acker: acknowledge a batch once it is applied, then let its entries go.

Entries are acked only after the dispatch returned (the shards applied them durably), every
entry of the batch, dead-lettered ones included, in one ``XACK``. While an ack is on its way
(:attr:`Acker.acking`) the reclaim timer stays still: the entries being acked are still pending
in Redis and would look idle to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from drasi_ray.source.lane import LaneState
from drasi_ray.source.reader import Screened


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

    async def ack(self, ids: Sequence[str]) -> None:
        lane = self._lane
        await lane.backend.ack(lane.stream, lane.group, list(ids))
        lane.stats.acked += len(ids)
