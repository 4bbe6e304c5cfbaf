"""``drasi-ray run`` as a process: it prints the results of what the streams held when it
started, starts its own local Ray listening on loopback only, stops cleanly on Ctrl-C or
SIGTERM at any moment (start-up included), leaves no Ray process behind, and stores no password
in Redis (issue #27, items 1, 2, 4 and 5)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import redis

from drasi_ray.model import keys
from drasi_ray.ops.publish import event_payload, parse_event_line
from drasi_ray.testing.embedded_redis import EmbeddedRedis
from drasi_ray.testing.waiting import wait_until

ROOT = Path(__file__).parent.parent.parent
PASSWORD = "run-s3cret"
APP = """\
id: signals
sources:
  - id: sensors
    properties:
      redis_url: redis://:${{REDIS_PASSWORD}}@127.0.0.1:{port}/0
      stream_key: sensor-changes
      start_id: "0"
      block_ms: 100
queries:
  - id: hot-sensors
    sources: [sensors]
    query: "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id"
    reactions:
      - kind: platform
      - kind: log
ray:
  num_cpus: 1
  include_dashboard: false
"""


LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}


def _listening(process: psutil.Process) -> list[object]:
    """The sockets ``process`` listens on (none if it is gone)."""
    try:
        return [c for c in process.net_connections("inet") if c.status == psutil.CONN_LISTEN]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


@pytest.fixture(scope="module")
def locked_redis() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis() as server:
        with redis.Redis(port=server.port) as client:
            client.config_set("requirepass", PASSWORD)
        yield server


class Run:
    """``drasi-ray run APP`` in its own session, its output collected as it comes."""

    def __init__(self, app: Path) -> None:
        env = {**os.environ, "REDIS_PASSWORD": PASSWORD}
        env.pop("RAY_ADDRESS", None)
        command = [str(Path(sys.executable).parent / "drasi-ray"), "run", str(app)]
        self.process = subprocess.Popen(
            [*command, "--status-interval", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line.rstrip("\n"))

    def descendants(self) -> list[psutil.Process]:
        try:
            return list(psutil.Process(self.process.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            return []

    def stop(self, signum: int, deadline_s: float) -> tuple[int, float]:
        """Send ``signum``; (exit status, seconds it took); every process it started is gone."""
        left = self.descendants()
        started = time.monotonic()
        self.process.send_signal(signum)
        try:
            code = self.process.wait(deadline_s)
        except subprocess.TimeoutExpired as exc:  # never leave it (and its Ray) running
            for process in [*left, psutil.Process(self.process.pid)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
            raise AssertionError(f"still running {deadline_s}s after the signal") from exc
        spent = time.monotonic() - started
        for reader in self._readers:
            reader.join(10)

        def alive() -> list[str]:
            found = []
            for process in left:
                try:
                    if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                        found.append(" ".join(process.cmdline()[:3])[:120])
                except psutil.NoSuchProcess:
                    continue
            return found

        try:
            wait_until(
                lambda: not alive(), timeout_s=30, what="the Ray processes of the run to end"
            )
        except TimeoutError as exc:
            raise AssertionError(f"still running: {alive()}") from exc
        return code, spent


@pytest.mark.slow
def test_run_prints_the_backlog_and_stops_on_sigterm_storing_no_password(
    locked_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    client = redis.Redis(port=locked_redis.port, password=PASSWORD)
    events = (ROOT / "examples" / "sensor-events.jsonl").read_text().splitlines()
    for line in events:  # the backlog, there before the app starts
        client.xadd("sensor-changes", {"data": event_payload(parse_event_line(line.encode(), ""))})
    app = tmp_path / "app.yaml"
    app.write_text(APP.format(port=locked_redis.port))
    run = Run(app)
    try:
        wait_until(
            lambda: (
                sum('"kind":"change"' in line for line in run.out) == 4
                and sum(line.startswith("  ") for line in run.out) == 4
            ),
            timeout_s=120,
            what="the four results and the log reaction's four lines",
        )
        listening = {
            (process.name(), conn.laddr.ip)  # type: ignore[attr-defined]
            for process in run.descendants()
            for conn in _listening(process)
        }
        assert listening and all(ip in LOOPBACK for _, ip in listening), listening  # no other NIC
    finally:
        code, spent = run.stop(signal.SIGTERM, 60)
    assert code == 0 and spent < 30, (code, spent, run.err)
    assert "running on a new local Ray (127.0.0.1 only)" in "\n".join(run.out)
    assert run.out[-1] == "drasi-ray: stopped"
    assert not any("Traceback" in line for line in run.err), run.err
    assert not any("Token authentication is enabled" in line for line in run.err), run.err
    stored = client.hgetall(keys.query_registry("signals"))
    assert stored and not any(PASSWORD.encode() in value for value in stored.values())
    assert all(PASSWORD not in line for line in run.out + run.err)


@pytest.mark.parametrize("after_s", [1.0, 5.0])
def test_ctrl_c_during_start_up_stops_cleanly(
    after_s: float, locked_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    app = tmp_path / "app.yaml"
    app.write_text(APP.format(port=locked_redis.port))
    run = Run(app)
    time.sleep(after_s)  # a moment of start-up: importing, checking Redis or starting Ray
    code, spent = run.stop(signal.SIGINT, 60)
    assert code == 130 and spent < 30, (code, spent, run.err)
    assert not any("Traceback" in line for line in run.err), run.err
    assert run.err[-1] in (
        "drasi-ray: interrupted",
        "drasi-ray: interrupted during start-up; stopping",
    )
