"""The control plane in the caller's own process, as a consumer reaches it.

The fused actor (:mod:`drasi_ray.actors.fused`) runs its consumers beside the
:class:`~drasi_ray.coordinator.control.ControlPlane`, and the in-process app
(:mod:`drasi_ray.testing.inprocess`) runs every part in one process: a consumer's dispatcher
asks it the shard count and hands it control events
(:class:`~drasi_ray.shards.dispatch.DispatchControl`), and its tombstone sweep asks it to
forget tombstones, all as direct calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from drasi_ray.coordinator.control import ControlPlane
from drasi_ray.model.changes import ControlEvent


class LocalControl:
    """A consumer's way to a control plane of this process."""

    def __init__(self, control: ControlPlane) -> None:
        self._control = control

    async def shard_count(self) -> int:
        return await self._control.shard_count()

    async def apply_controls(self, source_id: str, controls: Sequence[ControlEvent]) -> int:
        return await self._control.apply_controls(source_id, controls)

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        return await self._control.forget_tombstones(source_id, bound)

    async def back(self) -> None:
        """The control plane of this process is never gone (it dies with the caller)."""
