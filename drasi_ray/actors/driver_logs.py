"""Waiting for the log reaction's last lines to reach the driver before Ray shuts down.

A ``kind: log`` reaction writes to its query host's stdout (or stderr); Ray's log monitor tails
the worker's log file and forwards new lines to the driver, a moment later. An app that stops
right after its last result (``drasi-ray run --exit-when-idle``) would shut Ray down before
those lines arrive, and the user would never see them. :class:`ForwardedLines` watches the lines
Ray forwards to this driver (the hook Ray's own printing uses), so ``stop()`` can wait, within a
bound, until each such query's ``stopped`` control line (the last one its reaction writes) has
come through.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

logger = logging.getLogger("drasi_ray.app")

_HANDLER = "drasi_ray_forwarded_lines"


class ForwardedLines:
    """The lines holding ``keep`` that Ray forwarded to this driver since :meth:`start`."""

    def __init__(self, keep: str) -> None:
        self._keep = keep
        self._seen: list[str] = []
        self._changed = threading.Condition()
        self._dispatcher: Any = None

    def start(self) -> ForwardedLines:
        """Watch from now on (no-op when Ray does not forward worker output here)."""
        from ray._private import worker

        dispatcher = getattr(worker, "global_worker_stdstream_dispatcher", None)
        if dispatcher is None:  # another Ray version: nothing to wait for
            return self
        dispatcher.add_handler(_HANDLER, self._take)
        self._dispatcher = dispatcher
        return self

    def _take(self, data: dict[str, Any]) -> None:
        with self._changed:
            self._seen.extend(line for line in data.get("lines", ()) if self._keep in line)
            self._changed.notify_all()

    def wait_for(self, markers: Iterable[tuple[str, ...]], timeout_s: float) -> bool:
        """Wait until, for each tuple of ``markers``, one forwarded line holds all of its
        parts; False (logged) if that did not happen within ``timeout_s``."""
        wanted = list(markers)
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                wanted = [parts for parts in wanted if not self._found(parts)]
                remaining = deadline - time.monotonic()
                if not wanted or remaining <= 0 or self._dispatcher is None:
                    break
                self._changed.wait(remaining)
        if wanted:
            logger.info("log reaction lines not forwarded within %.1fs: %s", timeout_s, wanted)
        return not wanted

    def _found(self, parts: tuple[str, ...]) -> bool:
        return any(all(part in line for part in parts) for line in self._seen)

    def close(self) -> None:
        if self._dispatcher is not None:
            self._dispatcher.remove_handler(_HANDLER)
            self._dispatcher = None
