"""The injectable clocks."""

from __future__ import annotations

import asyncio

import pytest

from drasi_ray.model.clock import ActorClock, ClockSetting, ManualClock, SystemClock, wall_ms


def test_a_manual_clock_moves_only_forward_and_tells_its_listeners() -> None:
    clock = ManualClock(1_000)
    heard: list[int] = []
    stop = clock.listen(heard.append)
    clock.advance(500)
    clock.set(2_000)
    with pytest.raises(ValueError, match="does not go back"):
        clock.set(1_999)
    stop()
    clock.advance(1)
    assert heard == [1_500, 2_000] and clock.now_ms() == 2_001


def test_settings_for_actors() -> None:
    assert ClockSetting.of(ManualClock(7)) == ClockSetting(True, 7)
    assert ClockSetting.of(SystemClock()) == ClockSetting.of(None) == ClockSetting()


def test_an_actor_clock_on_manual_time_waits_until_moved() -> None:
    async def run() -> tuple[bool, int]:
        clock = ActorClock(ClockSetting(True, 100))
        waiter = asyncio.ensure_future(clock.wait(150))
        await asyncio.sleep(0)  # let it start waiting: due times alone never end the wait
        still_waiting = not waiter.done()
        clock.move(150)
        await waiter
        return still_waiting, clock.now_ms()

    assert asyncio.run(run()) == (True, 150)


def test_an_actor_clock_on_the_wall_clock_returns_at_a_past_due_time() -> None:
    async def run() -> int:
        clock = ActorClock(ClockSetting())
        await clock.wait(wall_ms() - 1)
        return clock.now_ms()

    assert asyncio.run(run()) >= wall_ms() - 1_000
