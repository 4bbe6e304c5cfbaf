"""The calls on the pipeline's direct lines, typed: one protocol per callee.

Every batch makes three calls between processes: a consumer hands a store shard its part
(:meth:`ShardCalls.apply_batch`), the shard hands each query host the deltas of its queries
(:meth:`HostCalls.deliver`), and a subscriber takes its results from the query's host
(:meth:`HostCalls.take`). They travel on direct lines (:mod:`drasi_ray.actors.line`), which
name a call by the protocol's function (``line.call(HostCalls.deliver, ...)``), so mypy checks
each call site against the protocol, and each server against it where the line is served
(``LineServer(core, HostCalls)``). The in-process pipeline (:mod:`drasi_ray.testing.inprocess`)
calls the same cores through the same protocols, without a line.

Both protocols live here, in the lowest stage both ends of each call import: the store shard
serves :class:`ShardCalls` and calls :class:`HostCalls`; the query host (:mod:`drasi_ray.host`)
serves :class:`HostCalls`; the fused actor, both (:class:`FusedCalls`). Within one process
the same calls are made without a line (:mod:`drasi_ray.shards.local`, :mod:`drasi_ray.host.
local`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.shards import BatchTag, BootstrapPart
from drasi_ray.model.wire import HostPacket, ResultBatch
from drasi_ray.shards.reports import BatchReport
from drasi_ray.streams.records import Rejection


class ShardCalls(Protocol):
    """What a store shard serves on its line (:class:`~drasi_ray.shards.service.ShardService`)."""

    async def apply_batch(
        self,
        source_id: str,
        entries: Sequence[DecodedEntry],
        tag: BatchTag | None,
        shards: int,
    ) -> BatchReport:
        """Apply this shard's part of a consumer batch; return once it is durable and its
        deltas are sent. ``tag`` names a batch that touched several shards; ``shards`` is the
        shard count the consumer split it for (ShardMapChangedError if it is not the shard's)."""
        ...


class HostCalls(Protocol):
    """What a query host serves on its line (:class:`~drasi_ray.host.core.QueryHost`)."""

    async def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> list[Rejection]:
        """Delivery ``number`` of ``shard``'s link ``epoch``; returns once every query it
        concerns applied its share, with the entries a query's pipeline failed on."""
        ...

    async def take(
        self, query_id: str, subscriber_id: str, max_items: int | None, timeout_s: float
    ) -> ResultBatch:
        """Up to ``max_items`` results of a subscriber's buffer, waiting up to ``timeout_s``
        for one (an unknown query or subscriber: none)."""
        ...


class FusedCalls(ShardCalls, HostCalls, Protocol):
    """What the fused actor serves on its one line (:mod:`drasi_ray.actors.fused`): it is
    store shard 0 and the app's shared query host at once, so consumers of other actors call
    its ``apply_batch``, other shards its ``deliver`` and subscribers its ``take``."""
