"""Which Ray an app runs on: a private local one unless an address was given.

``ray.init()`` without an address attaches to whatever Ray the machine runs (and, with
several, the latest one), so an app could land on someone else's cluster. :func:`connect`
never does that:

- a process already connected to Ray (it called ``ray.init`` itself) keeps that Ray;
- ``ray.address``, else the ``RAY_ADDRESS`` variable (Ray's own, which ``ray job submit``
  sets for its driver), names the cluster to join; ``local`` means a new local Ray;
- otherwise a new local Ray starts, bound to 127.0.0.1 only (Ray's services, its workers and
  the actors' direct lines listen on loopback; Ray's token authentication, on by default for
  a new local Ray since 2.52, stays on).

A configured address that does not answer within the deadline is one error naming it, not a
hang. The returned :class:`RayConnection` says which case it was, for the user.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import ray

from drasi_ray.model.config import RayConfig
from drasi_ray.model.errors import RayUnavailableError

LOCAL = "local"
_LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's own switch: when off, Ray takes 127.0.0.1 as the node's address (as on macOS)."""
_TOKEN_NOTE = "Token authentication is enabled for this Ray cluster"


@dataclass(frozen=True, slots=True)
class RayConnection:
    """How the app reached Ray: ``owned`` when it started a local Ray it must shut down."""

    address: str | None
    origin: str
    owned: bool

    def describe(self) -> str:
        """``a local Ray (127.0.0.1 only)`` or ``the Ray at head:6379 (RAY_ADDRESS)``."""
        if self.owned:
            return "a new local Ray (127.0.0.1 only)"
        if self.address is None:
            return "the Ray this process was already connected to"
        return f"the Ray at {self.address} ({self.origin})"


def connect(config: RayConfig, namespace: str, timeout_s: float) -> RayConnection:
    """Connect this process to the Ray ``config`` (or ``RAY_ADDRESS``) names, else start a
    local one; see the module doc. Raises :class:`RayUnavailableError` when a configured
    address does not answer within ``timeout_s``."""
    if ray.is_initialized():
        return RayConnection(None, "ray.init", owned=False)
    address, origin = config.address, "ray.address"
    if address is None and os.environ.get("RAY_ADDRESS"):
        address, origin = os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    options: dict[str, Any] = {"namespace": namespace, "log_to_driver": True}
    if address is None or address == LOCAL:
        if config.num_cpus is not None:
            options["num_cpus"] = config.num_cpus
        if config.include_dashboard is not None:
            options["include_dashboard"] = config.include_dashboard
        try:
            with _loopback_only(), _own_sigterm_handler_kept():
                ray.init(address=LOCAL, **options)
        except BaseException:  # interrupted or failed half-way: stop what did start
            ray.shutdown()
            raise
        return RayConnection(None, origin if address else "default", owned=True)
    _check_reachable(address, origin, timeout_s)
    try:
        with _own_sigterm_handler_kept():
            ray.init(address=address, **options)
    except (ConnectionError, TimeoutError, RuntimeError) as exc:
        raise RayUnavailableError(
            f"cannot join the Ray at {address} ({origin}): {exc}; check the address and that "
            "the cluster runs (ray status), and its token (RAY_AUTH_TOKEN) if it asks for one"
        ) from exc
    return RayConnection(address, origin, owned=False)


def _check_reachable(address: str, origin: str, timeout_s: float) -> None:
    """A TCP connection to ``address``'s host and port within ``timeout_s`` (``auto`` and
    addresses without a port are left to Ray)."""
    parts = urlsplit(address if "://" in address else f"gcs://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if host is None or port is None:
        return
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=max(min(remaining, 5.0), 0.1)):
                return
        except OSError as exc:
            if time.monotonic() + 0.5 >= deadline:
                raise RayUnavailableError(
                    f"cannot reach the Ray at {address} ({origin}) within {timeout_s:g}s: "
                    f"{exc.strerror or exc}; check the address and that the cluster runs"
                ) from exc
        time.sleep(0.5)


@contextlib.contextmanager
def _own_sigterm_handler_kept() -> Iterator[None]:
    """``ray.init`` replaces the SIGTERM handler with one that exits at once; a handler the
    process set itself (``drasi-ray run`` stops the app cleanly on SIGTERM) is put back."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and callable(previous):
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _loopback_only() -> Iterator[None]:
    """While a local Ray starts: Ray takes 127.0.0.1 as the node address, so every service it
    starts (GCS, raylet, agents, workers, and the actors' lines) listens on loopback; and
    Ray's note that token authentication is on (it is, by default) is not printed."""
    from ray._private import ray_constants  # Ray reads this switch when it picks the node IP

    saved = ray_constants.ENABLE_RAY_CLUSTER, os.environ.get(_LOOPBACK_SWITCH)
    note_filter = _DropTokenNote()
    token_logger = logging.getLogger("ray._private.authentication.authentication_token_setup")
    token_logger.addFilter(note_filter)
    ray_constants.ENABLE_RAY_CLUSTER = False
    os.environ[_LOOPBACK_SWITCH] = "0"  # the processes Ray starts read it at import
    try:
        yield
    finally:
        token_logger.removeFilter(note_filter)
        ray_constants.ENABLE_RAY_CLUSTER = saved[0]
        if saved[1] is None:
            os.environ.pop(_LOOPBACK_SWITCH, None)
        else:
            os.environ[_LOOPBACK_SWITCH] = saved[1]


class _DropTokenNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _TOKEN_NOTE not in record.getMessage()
