"""drasi_ray.shards.dispatch without Ray: how a consumer's batch reaches the store shards.

The shards and the control plane are stand-ins that record calls in one log, so the order of
a batch's changes and control events, the tags of batches over several shards, a rescale's
refusal and a shard's outage show.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from drasi_ray.model.changes import (
    ControlEvent,
    DecodedEntry,
    ElementChange,
    Op,
    SubscriptionControl,
    Timing,
    node,
)
from drasi_ray.model.errors import ShardMapChangedError
from drasi_ray.model.shards import BatchTag, shard_of
from drasi_ray.shards.dispatch import ShardDispatcher
from drasi_ray.shards.reports import BatchReport


class Gone(Exception):
    """A shard that is gone (RayActorError in the app)."""


class World:
    """The shards and the control plane, as stand-ins writing to one log."""

    def __init__(self, shards: int) -> None:
        self.shards = shards
        self.log: list[tuple[str, ...]] = []
        self.refuse: dict[int, Exception] = {}
        self.backs: list[int] = []

    async def shard_count(self) -> int:
        self.log.append(("shard_count",))
        return self.shards

    async def apply_controls(self, source_id: str, controls: Sequence[ControlEvent]) -> int:
        self.log.append(("controls", *(c.query_id for c in controls)))  # type: ignore[union-attr]
        return len(controls)

    async def back(self) -> None:
        self.backs.append(-1)

    def connect(self, index: int) -> Shard:
        return Shard(self, index)


class Shard:
    def __init__(self, world: World, index: int) -> None:
        self._world = world
        self.index = index

    async def apply_batch(
        self, source_id: str, entries: Sequence[DecodedEntry], tag: BatchTag | None, shards: int
    ) -> BatchReport:
        failure = self._world.refuse.pop(self.index, None)
        if failure is not None:
            raise failure
        ids = tuple(entry.entry_id for entry in entries)
        self._world.log.append((f"shard {self.index}/{shards}", *ids, repr(tag)))
        changes = sum(len(entry.changes) for entry in entries)
        return BatchReport(changes=changes, applied=changes)

    async def back(self) -> None:
        self._world.backs.append(self.index)

    def close(self) -> None:
        pass


def _change(number: int, element_id: str) -> DecodedEntry:
    element = node(element_id, ["Sensor"])
    return DecodedEntry(
        f"{number}-0", (ElementChange(Op.INSERT, element, (number, 0, 0), Timing(number)),)
    )


def _control(number: int) -> DecodedEntry:
    return DecodedEntry(
        f"{number}-0", controls=(SubscriptionControl(Op.INSERT, f"q{number}", "n"),)
    )


def _on(shard: int, shards: int, start: int = 0) -> str:
    """An element id ``shard`` owns among ``shards``."""
    return next(f"e{n}" for n in range(start, 10_000) if shard_of(f"e{n}", shards) == shard)


def test_controls_apply_between_the_changes_around_them_in_stream_order() -> None:
    async def scenario() -> None:
        world = World(shards=1)
        dispatcher = ShardDispatcher("c", world, world.connect, (Gone,))
        entries = [_change(1, "a"), _change(2, "b"), _control(3), _change(4, "c")]
        report = await dispatcher.dispatch("s", entries)
        assert world.log == [
            ("shard_count",),
            ("shard 0/1", "1-0", "2-0", "None"),
            ("controls", "q3"),
            ("shard 0/1", "4-0", "None"),
        ]
        assert (report.changes, report.applied, report.controls) == (3, 3, 1)

    asyncio.run(scenario())


def test_a_batch_over_several_shards_is_tagged_and_numbered() -> None:
    async def scenario() -> None:
        world = World(shards=3)
        dispatcher = ShardDispatcher("c", world, world.connect, (Gone,))
        one, two = _on(0, 3), _on(2, 3)
        await dispatcher.dispatch("s", [_change(1, one)])  # one shard: no tag
        await dispatcher.dispatch("s", [_change(2, one), _change(3, two)])
        await dispatcher.dispatch("s", [_change(4, two), _change(5, one)])
        tags = [entry[-1] for entry in world.log[1:]]
        assert tags[0] == "None"
        assert all("shards=(0, 2)" in tag for tag in tags[1:])
        assert [tag.split("number=")[1].split(",")[0] for tag in tags[1:]] == ["0", "0", "1", "1"]

    asyncio.run(scenario())


def test_a_rescale_refusal_fails_the_batch_and_the_next_takes_the_new_map() -> None:
    async def scenario() -> None:
        world = World(shards=1)
        dispatcher = ShardDispatcher("c", world, world.connect, (Gone,))
        await dispatcher.dispatch("s", [_change(1, "a")])
        world.shards = 2
        world.refuse[0] = ShardMapChangedError("the shards were rescaled")
        with pytest.raises(ShardMapChangedError):
            await dispatcher.dispatch("s", [_change(2, "a")])
        assert dispatcher.shards == 0  # to be asked again
        await dispatcher.dispatch("s", [_change(2, _on(1, 2))])
        assert world.log[-2:] == [("shard_count",), ("shard 1/2", "2-0", "None")]

    asyncio.run(scenario())


def test_a_shard_that_is_gone_is_waited_for_before_the_batch_fails() -> None:
    async def scenario() -> None:
        world = World(shards=1)
        dispatcher = ShardDispatcher("c", world, world.connect, (Gone,))
        world.refuse[0] = Gone("shard 0")
        with pytest.raises(Gone):
            await dispatcher.dispatch("s", [_change(1, "a")])
        assert world.backs == [0]

    asyncio.run(scenario())


def test_a_paused_dispatcher_finishes_the_batch_in_hand_and_holds_the_next() -> None:
    async def scenario() -> None:
        world = World(shards=1)
        dispatcher = ShardDispatcher("c", world, world.connect, (Gone,))
        await dispatcher.pause()
        held = asyncio.ensure_future(dispatcher.dispatch("s", [_change(1, "a")]))
        await asyncio.sleep(0.01)
        assert not held.done() and world.log == []
        dispatcher.resume()
        assert (await held).applied == 1

    asyncio.run(scenario())
