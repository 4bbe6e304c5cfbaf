"""``ServerProcess``: the plumbing every throwaway test server shares.

:class:`~drasi_ray.testing.embedded_redis.EmbeddedRedis` and
:class:`~drasi_ray.testing.postgres.EmbeddedPostgres` each run one server process on
127.0.0.1, on a free port, with its own data directory (a fresh temp dir unless one is given).
This base holds what they do alike: the port and data directory (a port chosen at the first
start is kept for every later one, so a restarted server comes back on the same address), the
start with up to three ports tried, the wait until the server is ready, the stop by signal,
the log tail of a failed start, and the ``atexit`` hook that stops a server still running when
the Python process ends. A server says how it is spawned, when it is ready and how it stops.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TypeVar

from drasi_ray.model.errors import DrasiRayError

_Server = TypeVar("_Server", bound="ServerProcess")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class ServerProcess:
    """One private server process; a subclass says how to spawn it, when it is ready and how
    it stops. Use as a context manager, or ``start()``/``close()``.

    ``stop()`` ends the process but keeps the data directory (``start()`` again resumes from
    it); ``close()`` stops it and removes a temp data directory this object created.
    """

    host = "127.0.0.1"
    program = "the server"
    """Its name in messages."""
    error: type[DrasiRayError] = DrasiRayError
    """What a failure to find, start or stop it raises."""
    dir_prefix = "drasi-server-"
    log_name = "server.log"
    poll_s = 0.05
    """How often a starting server is asked whether it is ready."""

    def __init__(
        self, *, data_dir: str | Path | None, port: int | None, startup_timeout: float
    ) -> None:
        self._fixed_port = port
        self._port = port
        self._startup_timeout = startup_timeout
        self._owns_dir = data_dir is None
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._atexit_registered = False

    # -- what a server says --------------------------------------------------------------

    def _prepare(self) -> None:
        """Before each start, once the data directory is known (nothing by default)."""

    def _spawn(self) -> subprocess.Popen[bytes]:
        raise NotImplementedError

    def _ready(self) -> bool:
        """True once the server serves clients."""
        raise NotImplementedError

    def _abort(self) -> None:
        """End a process that did not become ready in time."""
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    # -- properties ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise self.error("the server has no port yet: call start()")
        return self._port

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise self.error("the server has no data dir yet: call start()")
        return self._data_dir

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def _log_path(self) -> Path:
        return self.data_dir / self.log_name

    # -- lifecycle -----------------------------------------------------------------------

    def start(self: _Server) -> _Server:
        """Start the server and wait until it is ready. No-op if already running.

        A port chosen here (none given) is kept for every later start, so ``restart()`` and
        ``stop()``+``start()`` come back on the same address.
        """
        if self.running:
            return self
        if self._data_dir is None:
            self._data_dir = Path(tempfile.mkdtemp(prefix=self.dir_prefix))
        if not self._atexit_registered:
            atexit.register(self.close)
            self._atexit_registered = True
        self._prepare()
        attempts = 1 if self._port is not None else 3
        for attempt in range(attempts):
            if self._fixed_port is None and (self._port is None or attempt > 0):
                self._port = free_port(self.host)
            if self._launch():
                return self
        raise self._startup_error()

    def _launch(self) -> bool:
        """Spawn once; True when ready, False if the process died (e.g. port taken)."""
        self._proc = self._spawn()
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if self._ready():
                return True
            time.sleep(self.poll_s)
        self._abort()
        return False

    def _startup_error(self) -> DrasiRayError:
        log = ""
        with contextlib.suppress(OSError):
            log = "\n".join(self._log_path.read_text(errors="replace").splitlines()[-15:])
        return self.error(
            f"{self.program} did not start on {self.host}:{self._port} within "
            f"{self._startup_timeout}s; log tail:\n{log}"
        )

    def _signal(self, signum: int, wait: float | None, then: int) -> None:
        """Send ``signum`` and wait ``wait`` seconds (None: for ever) for the process to end;
        send ``then`` if it did not, and wait for that."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signum)
            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                proc.send_signal(then)
                proc.wait()
        self._proc = None

    def _forget_atexit(self) -> None:
        if self._atexit_registered:
            atexit.unregister(self.close)
            self._atexit_registered = False

    def close(self) -> None:
        """Stop the server and remove the data dir if this object created it. Idempotent."""
        self.stop()
        if self._owns_dir and self._data_dir is not None:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._data_dir = None
        self._forget_atexit()

    def __enter__(self: _Server) -> _Server:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"{type(self).__name__}({self.host}:{self._port}, {state})"
