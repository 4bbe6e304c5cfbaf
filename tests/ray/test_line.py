"""Direct lines between actors (drasi_ray.actors.line), against real Ray actors.

Each test checks both what the caller gets and which way the call went (the callee's count
of calls served on lines), since a line that silently fell back to Ray would return the
same values.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct
from typing import Any, Protocol

import psutil
import pytest
import ray

from drasi_ray.actors.line import Line, LineAddress, LineServer, SyncLine
from drasi_ray.model.errors import StaleDeliveryError
from drasi_ray.testing.waiting import wait_until

pytestmark = pytest.mark.usefixtures("ray_session")


class _EchoCalls(Protocol):
    """What the callee serves on its line."""

    async def echo(self, value: Any) -> Any: ...

    async def slow(self, value: Any, seconds: float) -> Any: ...

    async def fail(self, message: str) -> None: ...

    async def pid(self) -> int: ...


class _WiderCalls(_EchoCalls, Protocol):
    """A caller's idea of the callee with one method more than it serves on its line."""

    async def counts(self) -> tuple[int, int]: ...


@ray.remote
class _Callee:
    def __init__(self, lines: bool = True) -> None:
        self._server = LineServer[_EchoCalls](self, _EchoCalls, enabled=lines)
        self.calls = 0

    async def line_address(self) -> LineAddress | None:
        return await self._server.address()

    async def echo(self, value: Any) -> Any:
        self.calls += 1
        return value

    async def slow(self, value: Any, seconds: float) -> Any:
        self.calls += 1
        await asyncio.sleep(seconds)
        return value

    async def fail(self, message: str) -> None:
        raise StaleDeliveryError(message)

    async def pid(self) -> int:
        return os.getpid()

    async def counts(self) -> tuple[int, int]:
        """(calls made, calls that came over a line)."""
        return self.calls, self._server.served


@ray.remote
class _Caller:
    def __init__(self, callee: Any, deadline_s: float = 10.0) -> None:
        self._line = Line[_EchoCalls](callee, deadline_s)

    async def fallbacks(self) -> int:
        return self._line.fallbacks

    async def line_open(self) -> bool:
        return await self._line.opened(0.0)

    async def call(self, method: str, *args: Any) -> Any:
        return await self._line.call(getattr(_EchoCalls, method), *args)

    async def many(self, count: int) -> list[int]:
        calls = (self._line.call(_EchoCalls.echo, i) for i in range(count))
        return list(await asyncio.gather(*calls))

    async def error(self) -> str:
        try:
            await self._line.call(_EchoCalls.fail, "epoch 3 was replaced")
        except StaleDeliveryError as exc:
            return f"StaleDeliveryError: {exc}"
        return "no error"


def _callee(retries: int = -1) -> Any:
    options = {"max_restarts": -1, "max_task_retries": retries}
    return _Callee.options(**options).remote()  # type: ignore[attr-defined]


def _served(callee: Any) -> int:
    served: int = ray.get(callee.counts.remote())[1]
    return served


def _open_line(caller: Any, callee: Any) -> tuple[int, int]:
    """Call until a call came over the line (the first ones go through Ray while it opens) and
    the line is open still (on a starved machine a call may already have broken it); the
    callee's counts then."""
    wait_until(
        lambda: (
            ray.get(caller.call.remote("pid"))
            and _served(callee) > 0
            and ray.get(caller.line_open.remote())
        ),
        what="a call over the line",
    )
    counts: tuple[int, int] = ray.get(callee.counts.remote())
    return counts


def _kill_and_wait(callee: Any, pid: int) -> None:
    ray.kill(callee, no_restart=False)
    wait_until(lambda: not psutil.pid_exists(pid), what=f"the end of process {pid}")


def test_calls_go_over_the_line_in_either_direction_of_data() -> None:
    callee = _callee()
    caller = _Caller.remote(callee)  # type: ignore[attr-defined]
    calls, served = _open_line(caller, callee)
    payload = {"rows": [(1, "a", 2.5, None)] * 100, "blob": b"\x00" * 300_000}
    assert ray.get(caller.call.remote("echo", payload)) == payload
    assert ray.get(caller.many.remote(50)) == list(range(50))
    assert ray.get(callee.counts.remote()) == (calls + 51, served + 51)


def test_the_method_s_exception_reaches_the_caller_as_itself() -> None:
    callee = _callee()
    caller = _Caller.remote(callee)  # type: ignore[attr-defined]
    _open_line(caller, callee)
    assert ray.get(caller.error.remote()) == "StaleDeliveryError: epoch 3 was replaced"


def test_a_method_not_served_on_lines_is_refused_by_name() -> None:
    callee = _callee()
    address = ray.get(callee.line_address.remote())
    line = SyncLine[_WiderCalls](callee)
    with pytest.raises(AttributeError, match="'counts' is not served on this line"):
        line.call(_WiderCalls.counts)
    line.close()
    assert address.port > 0


def test_without_a_line_server_calls_go_through_ray() -> None:
    callee = _Callee.remote(False)  # type: ignore[attr-defined]
    caller = _Caller.remote(callee)  # type: ignore[attr-defined]
    assert ray.get(caller.call.remote("echo", "through ray")) == "through ray"
    assert SyncLine[_EchoCalls](callee).call(_EchoCalls.echo, 7) == 7
    assert ray.get(callee.counts.remote()) == (2, 0)


def test_a_connection_without_the_token_is_closed_before_any_call_runs() -> None:
    callee = _callee()
    address = ray.get(callee.line_address.remote())
    with socket.create_connection((address.host, address.port), 3) as sock:
        sock.sendall(b"x" * len(address.token))
        sock.sendall(struct.pack("!Q", 4) + b"junk")
        sock.settimeout(5)
        assert sock.recv(1) == b""  # closed by the server, nothing answered
    assert ray.get(callee.counts.remote()) == (0, 0)


def test_a_call_whose_callee_dies_is_made_again_through_ray_after_the_restart() -> None:
    callee = _callee()
    caller = _Caller.remote(callee)  # type: ignore[attr-defined]
    _open_line(caller, callee)
    first_pid = ray.get(caller.call.remote("pid"))
    calls, served = ray.get(callee.counts.remote())
    pending = caller.call.remote("slow", "survived", 1.0)
    wait_until(
        lambda: ray.get(callee.counts.remote()) == (calls + 1, served + 1),
        what="the slow call running on the line",
    )
    _kill_and_wait(callee, first_pid)
    assert ray.get(pending, timeout=60) == "survived"
    assert ray.get(callee.counts.remote()) == (1, 0)  # the new life: the retry, through Ray
    # Later calls reconnect to the restarted actor's new line.
    _open_line(caller, callee)
    assert ray.get(caller.call.remote("pid")) != first_pid


def test_sync_line_from_the_driver_and_after_a_restart() -> None:
    callee = _callee()
    line = SyncLine[_EchoCalls](callee)
    assert line.call(_EchoCalls.slow, "polled", 0.2) == "polled"
    first_pid = line.call(_EchoCalls.pid)
    _kill_and_wait(callee, first_pid)
    assert line.call(_EchoCalls.echo, "again") == "again"  # broken: through Ray, after restart
    assert line.call(_EchoCalls.pid) != first_pid  # then a new line
    assert ray.get(callee.counts.remote()) == (1, 1)
    line.close()


def test_a_frozen_callee_costs_a_call_the_deadline_then_ray_never_a_hang() -> None:
    """SIGSTOP the callee mid-line: the waiting call hears nothing (no reply, no heartbeat),
    gives the line up after its deadline and is made again through Ray, which completes
    once the callee runs again (SIGCONT)."""
    callee = _callee()
    caller = _Caller.remote(callee, 2.5)  # type: ignore[attr-defined]
    _open_line(caller, callee)
    before = ray.get(caller.fallbacks.remote())  # a starved machine may have failed over once
    pid = ray.get(callee.pid.remote())
    os.kill(pid, signal.SIGSTOP)
    try:
        pending = caller.call.remote("echo", "through the fallback")
        wait_until(
            lambda: ray.get(caller.fallbacks.remote()) == before + 1,
            what=f"the line's failover (from {before} fallbacks)",
        )
        assert ray.wait([pending], timeout=0.5)[0] == []  # the Ray call waits for the callee
    finally:
        os.kill(pid, signal.SIGCONT)
    assert ray.get(pending, timeout=60) == "through the fallback"
    assert ray.get(caller.fallbacks.remote()) == before + 1


def test_a_call_that_waits_long_keeps_its_line_through_heartbeats() -> None:
    """A call may wait far beyond the deadline (backpressure): the callee's heartbeats keep
    the line, so it is neither given up nor run twice."""
    callee = _callee()
    caller = _Caller.remote(callee, 2.5)  # type: ignore[attr-defined]
    calls, served = _open_line(caller, callee)
    before = ray.get(caller.fallbacks.remote())
    assert ray.get(caller.call.remote("slow", "waited", 6.0)) == "waited"
    assert ray.get(caller.fallbacks.remote()) == before
    assert ray.get(callee.counts.remote()) == (calls + 1, served + 1)
