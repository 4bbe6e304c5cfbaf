"""A query host in the caller's own process, as a store shard (or a subscriber) reaches it.

The fused actor (:mod:`drasi_ray.actors.fused`) runs the app's shared query host beside store
shard 0, and the in-process app (:mod:`drasi_ray.testing.inprocess`) runs every part in one
process: the shard delivers to the host's :class:`~drasi_ray.shards.calls.HostCalls` directly,
each :class:`~drasi_ray.model.wire.HostPacket` handed over as it is (no line, no MessagePack,
no copy: the deltas are immutable structs). ``carry`` (the in-process app's option) is applied
to every payload and result batch on the way, to make them cross as a line would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from drasi_ray.host.core import QueryHost
from drasi_ray.model.shards import BootstrapPart
from drasi_ray.model.wire import HostPacket, ResultBatch
from drasi_ray.streams.records import Rejection


class LocalHost:
    """A :class:`~drasi_ray.shards.service.HostConnection` to a host of this process."""

    def __init__(self, host: QueryHost, carry: Callable[[Any], Any] | None = None) -> None:
        self._host = host
        self._carry = carry

    def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> asyncio.Future[list[Rejection]]:
        """The delivery taken by the host now (:meth:`QueryHost.offer`); its outcome."""
        if self._carry is not None:
            payload = self._carry(payload)
        return self._host.offer(shard, epoch, number, payload)

    async def take(
        self, query_id: str, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> ResultBatch:
        batch = await self._host.take(query_id, subscriber_id, max_items, timeout_s)
        if self._carry is not None:
            carried: ResultBatch = self._carry(batch)
            return carried
        return batch

    def close(self) -> None:
        """Nothing to close: the host lives as long as this process."""
