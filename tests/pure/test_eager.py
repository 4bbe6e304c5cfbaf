"""start_eagerly: a coroutine run at once up to its first wait, then as a task would run it."""

from __future__ import annotations

import asyncio

import pytest

from drasi_ray.model.eager import start_eagerly


async def _returns(log: list[str]) -> int:
    log.append("ran")
    return 7


async def _fails() -> None:
    raise ValueError("bad row")


async def _waits_on(future: asyncio.Future[int], log: list[str]) -> int:
    log.append("before")
    value = await future
    log.append("after")
    return value * 2


def test_a_coroutine_that_does_not_wait_is_done_in_the_call() -> None:
    async def main() -> None:
        log: list[str] = []
        done = start_eagerly(_returns(log))
        assert log == ["ran"] and done.done() and done.result() == 7

    asyncio.run(main())


def test_a_failure_without_waiting_is_the_futures() -> None:
    async def main() -> None:
        done = start_eagerly(_fails())
        assert done.done()
        with pytest.raises(ValueError, match="bad row"):
            done.result()

    asyncio.run(main())


def test_a_coroutine_that_waits_goes_on_in_a_task_with_what_it_awaited() -> None:
    async def main() -> None:
        log: list[str] = []
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        running = start_eagerly(_waits_on(future, log))
        assert log == ["before"] and not running.done()
        future.set_result(21)
        assert await running == 42
        assert log == ["before", "after"]

    asyncio.run(main())


def test_the_exception_of_what_it_awaited_is_raised_in_the_coroutine() -> None:
    async def catches(future: asyncio.Future[int]) -> str:
        try:
            await future
        except KeyError as exc:
            return f"caught {exc}"
        return "not raised"

    async def main() -> None:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        running = start_eagerly(catches(future))
        future.set_exception(KeyError("k"))
        assert await running == "caught 'k'"

    asyncio.run(main())


def test_cancelling_the_task_cancels_what_it_waits_on_and_raises_in_it() -> None:
    seen: list[str] = []

    async def cleans_up(future: asyncio.Future[int]) -> int:
        try:
            return await future
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> None:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        running = start_eagerly(cleans_up(future))
        await asyncio.sleep(0)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert future.cancelled() and seen == ["cancelled"]

    asyncio.run(main())


def test_a_coroutine_that_waits_several_times_and_yields_bare_runs_to_its_end() -> None:
    async def steps(lock: asyncio.Lock, order: list[str]) -> str:
        await asyncio.sleep(0)  # a bare yield
        async with lock:  # held by main: waits on the lock's future
            order.append("eager")
        await asyncio.sleep(0.001)
        return "end"

    async def main() -> None:
        lock = asyncio.Lock()
        order: list[str] = []
        await lock.acquire()
        running = start_eagerly(steps(lock, order))
        await asyncio.sleep(0.01)
        assert not running.done()
        order.append("main")
        lock.release()
        assert await running == "end"
        assert order == ["main", "eager"]

    asyncio.run(main())
