"""``ray job submit`` of the example app against a private local Ray head with token auth.

The head gets its own temp dir and free ports for every service, so it cannot disturb the test
session's own Ray (``address="local"``) or anyone else's. It is stopped by killing exactly the
processes whose command line names its temp dir: ``ray stop`` would stop every Ray on the
machine.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest
import redis

from drasi_ray.testing.embedded_redis import free_port

ROOT = Path(__file__).parent.parent.parent
RAY = str(Path(sys.executable).parent / "ray")


def _kill_head(temp_dir: str) -> None:
    mine = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if any(temp_dir in part for part in process.info["cmdline"] or ()):
            mine.append(process)
    for process in mine:
        process.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(mine, timeout=10)
    for process in alive:
        process.kill()


def _free_ports_outside(excluded: range, count: int) -> list[int]:
    """``count`` distinct free ports, none in ``excluded``."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in excluded and port not in ports:
            ports.append(port)
    return ports


@pytest.fixture
def ray_head() -> Iterator[tuple[str, dict[str, str]]]:
    """(dashboard address, environment with the token) of a private head."""
    temp_dir = tempfile.mkdtemp(prefix="drj", dir="/tmp")  # short: Unix socket paths
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env.pop("RAY_ADDRESS", None)
    worker_low = free_port()
    workers = range(worker_low, worker_low + 51)
    # `ray start` refuses a port inside the worker range (a CI run drew one there).
    dashboard, *others = _free_ports_outside(workers, 9)
    ports = {
        "--port": others[0],
        "--dashboard-port": dashboard,
        "--ray-client-server-port": others[1],
        "--node-manager-port": others[2],
        "--object-manager-port": others[3],
        "--metrics-export-port": others[4],
        "--dashboard-agent-listen-port": others[5],
        "--dashboard-agent-grpc-port": others[6],
        "--runtime-env-agent-port": others[7],
        "--min-worker-port": workers[0],
        "--max-worker-port": workers[-1],
    }
    command = [RAY, "start", "--head", "--temp-dir", temp_dir, "--num-cpus", "1"]
    command += ["--dashboard-host", "127.0.0.1", "--include-dashboard", "true"]
    command += ["--disable-usage-stats"]
    for option, port in ports.items():
        command += [option, str(port)]
    try:
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=180)
        yield f"http://127.0.0.1:{dashboard}", env
    finally:
        _kill_head(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.slow
def test_ray_job_submit_runs_the_example_app(
    ray_head: tuple[str, dict[str, str]], redis_url: str
) -> None:
    address, env = ray_head
    published = subprocess.run(
        [sys.executable, "-m", "drasi_ray.ops.cli", "publish", "sensor-changes",
         str(ROOT / "examples" / "sensor-events.jsonl"), "--redis-url", redis_url],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert published.returncode == 0, published.stderr
    started = time.monotonic()
    job = subprocess.run(
        [RAY, "job", "submit", "--address", address, "--working-dir", str(ROOT), "--",
         "drasi-ray", "run", "examples/app.yaml", "--redis-url", redis_url,
         "--exit-when-idle", "--quiet"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert job.returncode == 0, (job.stdout[-3000:], job.stderr[-3000:])
    assert "drasi-ray: stopped" in job.stdout
    assert time.monotonic() - started < 600
    client = redis.Redis.from_url(redis_url)
    results: Any = client.xrange("hot-sensors-results")
    events = [orjson.loads(fields[b"data"]) for _, fields in results]
    added = [
        row["id"]
        for event in events
        if event["data"]["kind"] == "change"
        for row in event["data"]["addedResults"]
    ]
    # sensor-2 (75.5), sensor-1 (71.2), sensor-3 (80.1) crossed 70; see sensor-events.jsonl
    assert added == ["sensor-2", "sensor-1", "sensor-3"], events
    kinds = [e["data"]["controlSignal"]["kind"] for e in events if e["data"]["kind"] == "control"]
    assert kinds[-1] == "stopped"
