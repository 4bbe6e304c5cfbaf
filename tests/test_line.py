"""Direct lines between actors (drasi_ray.actors.line), against real Ray actors.

Each test checks both what the caller gets and which way the call went (the callee's count
of calls served on lines), since a line that silently fell back to Ray would return the
same values.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import time
from typing import Any

import psutil
import pytest
import ray

from drasi_ray.actors.line import Line, LineAddress, LineServer, SyncLine
from drasi_ray.model.errors import StaleDeliveryError

pytestmark = pytest.mark.usefixtures("ray_session")


@ray.remote
class _Callee:
    def __init__(self, lines: bool = True) -> None:
        self._server = LineServer(self, ("echo", "slow", "fail", "pid"), enabled=lines)
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
    def __init__(self, callee: Any) -> None:
        self._line = Line(callee)

    async def call(self, method: str, *args: Any) -> Any:
        return await self._line.call(method, *args)

    async def many(self, count: int) -> list[int]:
        return list(await asyncio.gather(*(self._line.call("echo", i) for i in range(count))))

    async def error(self) -> str:
        try:
            await self._line.call("fail", "epoch 3 was replaced")
        except StaleDeliveryError as exc:
            return f"StaleDeliveryError: {exc}"
        return "no error"


def _callee(retries: int = -1) -> Any:
    options = {"max_restarts": -1, "max_task_retries": retries}
    return _Callee.options(**options).remote()  # type: ignore[attr-defined]


def _open_line(caller: Any, callee: Any) -> tuple[int, int]:
    """Call until a call came over the line (the first ones go through Ray while it opens);
    the callee's counts then."""
    deadline = time.monotonic() + 30
    while ray.get(callee.counts.remote())[1] == 0:
        assert time.monotonic() < deadline, "the line never opened"
        ray.get(caller.call.remote("pid"))
        time.sleep(0.02)
    counts: tuple[int, int] = ray.get(callee.counts.remote())
    return counts


def _kill_and_wait(callee: Any, pid: int) -> None:
    ray.kill(callee, no_restart=False)
    deadline = time.monotonic() + 30
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


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
    line = SyncLine(callee)
    with pytest.raises(AttributeError, match="'counts' is not served on this line"):
        line.call("counts")
    line.close()
    assert address.port > 0


def test_without_a_line_server_calls_go_through_ray() -> None:
    callee = _Callee.remote(False)  # type: ignore[attr-defined]
    caller = _Caller.remote(callee)  # type: ignore[attr-defined]
    assert ray.get(caller.call.remote("echo", "through ray")) == "through ray"
    assert SyncLine(callee).call("echo", 7) == 7
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
    pending = caller.call.remote("slow", "survived", 1.0)
    time.sleep(0.3)  # the slow call is running on the line
    _kill_and_wait(callee, first_pid)
    assert ray.get(pending, timeout=60) == "survived"
    assert ray.get(callee.counts.remote()) == (1, 0)  # the new life: the retry, through Ray
    # Later calls reconnect to the restarted actor's new line.
    _open_line(caller, callee)
    assert ray.get(caller.call.remote("pid")) != first_pid


def test_sync_line_from_the_driver_and_after_a_restart() -> None:
    callee = _callee()
    line = SyncLine(callee)
    assert line.call("slow", "polled", 0.2, call_timeout_s=0.2) == "polled"
    first_pid = line.call("pid")
    _kill_and_wait(callee, first_pid)
    assert line.call("echo", "again") == "again"  # broken line: through Ray, waits the restart
    assert line.call("pid") != first_pid  # then a new line
    assert ray.get(callee.counts.remote()) == (1, 1)
    line.close()
