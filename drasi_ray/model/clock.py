"""The clock that decides when scheduled re-evaluations are due.

Drasi's future functions (``drasi.trueFor`` and friends) schedule re-evaluations of rows at due
times; a query actor runs them when its clock reaches them. Which clock is injectable:

- :class:`SystemClock`, the default: the wall clock. Re-evaluations fire at their due time.
- :class:`ManualClock`, for tests and replays: time stands still until the owner moves it
  (:meth:`ManualClock.set`, :meth:`ManualClock.advance`). Pass one to
  :class:`~drasi_ray.app.DrasiRay` (``DrasiRay(app_id, clock=ManualClock(start_ms))``): moving
  it moves the clock of every query actor of the app, and returns once what came due has run.

Evaluation itself never reads this clock: a change is evaluated at its own time (its
``effective_from``), a due re-evaluation at its due time. So results depend on the changes and
due times, not on when the actor happened to run them.

Actors get a :class:`ClockSetting` (plain data, picklable) and build their own
:class:`ActorClock` from it; the :class:`ManualClock` object stays with its owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

MAX_WAIT_S = 60.0
"""Longest a system clock sleeps at once (a wake-up re-reads the queue and the time)."""


def wall_ms() -> int:
    """The wall-clock time in milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


class Clock(Protocol):
    """A source of "now" in milliseconds since the epoch."""

    def now_ms(self) -> int: ...


class SystemClock:
    """The wall clock."""

    def now_ms(self) -> int:
        return wall_ms()


class ManualClock:
    """A clock that moves only when told to (it never goes back).

    Listeners (an app, while it runs) are called with the new time on every move, in the mover's
    thread; a move returns once they returned.
    """

    def __init__(self, start_ms: int) -> None:
        self._now = start_ms
        self._listeners: list[Callable[[int], None]] = []

    def now_ms(self) -> int:
        return self._now

    def set(self, millis: int) -> None:
        """Move to ``millis`` (not before the current time: a clock does not go back)."""
        if millis < self._now:
            raise ValueError(f"a clock does not go back (from {self._now} to {millis})")
        self._now = millis
        for listener in list(self._listeners):
            listener(millis)

    def advance(self, millis: int) -> None:
        """Move ``millis`` milliseconds forward."""
        self.set(self._now + millis)

    def listen(self, listener: Callable[[int], None]) -> Callable[[], None]:
        """Call ``listener(now_ms)`` on every move; returns the function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)


@dataclass(frozen=True, slots=True)
class ClockSetting:
    """How an actor keeps time: the wall clock, or a manual time starting at ``start_ms`` and
    moved by its app."""

    manual: bool = False
    start_ms: int = 0

    @staticmethod
    def of(clock: Clock | None) -> ClockSetting:
        if isinstance(clock, ManualClock):
            return ClockSetting(True, clock.now_ms())
        return ClockSetting()


class ActorClock:
    """An actor's clock: :meth:`now_ms`, and :meth:`wait` for a due time or an early wake-up.

    A manual clock's time is :attr:`manual_ms`, moved by :meth:`move`; waiting on it ends only
    when it is woken (its time does not pass by itself).
    """

    def __init__(self, setting: ClockSetting) -> None:
        self.manual = setting.manual
        self.manual_ms = setting.start_ms
        self.wake = asyncio.Event()

    def now_ms(self) -> int:
        return self.manual_ms if self.manual else wall_ms()

    def move(self, millis: int) -> None:
        """Set a manual clock's time (never back) and wake its waiter."""
        self.manual_ms = max(self.manual_ms, millis)
        self.wake.set()

    async def wait(self, until_ms: int | None) -> None:
        """Return at ``until_ms`` (wall clock only; None: no due time) or once woken."""
        timeout: float | None = None
        if until_ms is not None and not self.manual:
            timeout = min(max(until_ms - wall_ms(), 0) / 1000, MAX_WAIT_S)
        elif not self.manual:
            timeout = MAX_WAIT_S
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            await asyncio.wait_for(self.wake.wait(), timeout)
        self.wake.clear()
