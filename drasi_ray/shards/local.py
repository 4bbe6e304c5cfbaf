"""A store shard in the caller's own process, as a consumer's dispatcher reaches it.

The fused actor (:mod:`drasi_ray.actors.fused`) runs a source's consumer beside store shard 0,
and the in-process app (:mod:`drasi_ray.testing.inprocess`) runs every part in one process:
their dispatchers call the shard's :class:`~drasi_ray.shards.calls.ShardCalls` directly, the
decoded entries handed over as they are (no line, no MessagePack, no copy: the structs are
immutable). ``carry`` (the in-process app's option) is applied to every batch on the way, to
make it cross as a line would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.shards import BatchTag
from drasi_ray.shards.calls import ShardCalls
from drasi_ray.shards.reports import BatchReport


class LocalShard:
    """A :class:`~drasi_ray.shards.dispatch.ShardConnection` to a shard of this process."""

    def __init__(self, shard: ShardCalls, carry: Callable[[Any], Any] | None = None) -> None:
        self._shard = shard
        self._carry = carry

    async def apply_batch(
        self, source_id: str, entries: Sequence[DecodedEntry], tag: BatchTag | None, shards: int
    ) -> BatchReport:
        if self._carry is not None:
            entries = self._carry(entries)
        return await self._shard.apply_batch(source_id, entries, tag, shards)

    async def back(self) -> None:
        """A shard in this process is never gone (it dies with the caller)."""

    def close(self) -> None:
        """Nothing to close."""
