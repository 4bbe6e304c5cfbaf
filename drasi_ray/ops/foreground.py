"""An app run in the foreground of a command (``run``, ``dashboard``) until Ctrl-C or SIGTERM.

:func:`serve` owns the app's whole life in the command: Ctrl-C and SIGTERM interrupt start-up
at any moment (importing, checking Redis, starting Ray or the actors), which then stops what
did start and returns 130; once the app runs, either signal asks the command's loop to finish,
and the app is stopped cleanly (a second signal cannot cut that short). An error during
start-up stops what did start and goes up to :func:`drasi_ray.ops.cli.main`, which prints it on
one line. The signal handlers it sets are put back when it returns. Off the main thread (a
test driving it) it sets none: the caller's ``stop`` event is the only way to stop it.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM)
INTERRUPTED = 130
"""The exit status of a command interrupted during start-up (as for any Ctrl-C)."""

Started = TypeVar("Started")


def say(text: str) -> None:
    print(text, flush=True)


def serve(
    app: Any,
    start: Callable[[], Started],
    loop: Callable[[Started, threading.Event], None],
    *,
    stop: threading.Event | None = None,
    echo: Callable[[str], Any] = say,
) -> int:
    """Run ``start()`` (which starts ``app``), then ``loop(started, stop)`` until it returns
    (it should once ``stop`` is set: by a signal, by the caller, or by itself), then stop the
    app. 0 once stopped; 130 if interrupted during start-up (module docstring)."""
    stop = stop or threading.Event()
    with _handlers_restored():
        started = _start(app, start, stop, echo)
        if started is None:
            return INTERRUPTED
        try:
            loop(started[0], stop)
        finally:
            _on_signals(signal.SIG_IGN)
            app.stop()
            echo("drasi-ray: stopped")
    return 0


def _start(
    app: Any, start: Callable[[], Started], stop: threading.Event, echo: Callable[[str], Any]
) -> tuple[Started] | None:
    """``(start(),)``, the signals then setting ``stop``; None when a signal interrupted it
    (the app then stopped)."""
    interrupted = threading.Event()

    def interrupt(signum: int, _frame: Any) -> None:
        interrupted.set()
        raise KeyboardInterrupt(signal.Signals(signum).name)

    _on_signals(interrupt)  # until the app runs, a signal interrupts whatever start-up does
    try:
        started = start()
        _on_signals(lambda *_: stop.set())
        if interrupted.is_set():  # code that start-up ran swallowed the interrupt: honour it
            raise KeyboardInterrupt
    except (KeyboardInterrupt, SystemExit):  # SystemExit: Ray's own SIGTERM handler, which
        # is in place while ray.init runs
        _on_signals(signal.SIG_IGN)
        print("drasi-ray: interrupted during start-up; stopping", file=sys.stderr, flush=True)
        app.stop()
        echo("drasi-ray: stopped")
        return None
    except BaseException:
        _on_signals(signal.SIG_IGN)
        app.stop()
        raise
    return (started,)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _on_signals(handler: Any) -> None:
    """Handle Ctrl-C and SIGTERM with ``handler`` (on the main thread only: Python's rule)."""
    if _main_thread():
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, handler)


@contextmanager
def _handlers_restored() -> Iterator[None]:
    previous = {signum: signal.getsignal(signum) for signum in STOPPING_SIGNALS}
    try:
        yield
    finally:
        if _main_thread():
            for signum, handler in previous.items():
                signal.signal(signum, handler)
