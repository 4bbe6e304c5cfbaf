"""The results file: one JSON line per measured figure, appended by every benchmark.

``bench/results.jsonl`` is append-only. Each line is one figure of one run::

    {"bench": "ingest", "what": "one consumer actor -> counting sink", "value": 98000.0,
     "unit": "events/s", "peer": "bare redis-py loop", "peer_value": 150000.0, "ratio": 0.65,
     "detail": "200,000 events, batch 500", "machine": "2 cores (AMD EPYC), 23.5 GiB, ...",
     "date": "2026-11-25T02:10:00+00:00", "commit": "2cffa4c", "command": "python -m ..."}

``bench`` and ``what`` name the figure: a later line with the same pair supersedes an earlier
one in ``bench/CURRENT.md`` (:mod:`bench.current`). ``peer`` is what the figure is compared
with, measured in the same run unless its label says otherwise; ``ratio`` is ``value /
peer_value`` (for times, above 1 means slower than the peer) unless a benchmark states another
ratio in ``detail``. ``machine`` describes the machine and its state during the run (the
1-minute load average before and after: the machine is shared, and above its core count other
processes competed for the CPUs).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench.common import BENCH_DIR, git_commit, load_average
from drasi_ray import native
from drasi_ray.testing.embedded_redis import EmbeddedRedisError, find_redis_server

RESULTS_JSONL = BENCH_DIR / "results.jsonl"


@dataclass(frozen=True)
class Figure:
    """One measured figure of one run (the fields of a results line, stamped by
    :meth:`Recorder.write`)."""

    bench: str
    what: str
    value: float
    unit: str
    peer: str | None = None
    peer_value: float | None = None
    ratio: float | None = None
    detail: str = ""


@dataclass
class Recorder:
    """Collects the figures of one benchmark run, then appends them with the run's stamp.

    Created at the start of the run (it notes the load average then); :meth:`write` adds the
    machine description with the load before and after, the date, the commit and the command.
    """

    bench: str
    command: str
    figures: list[Figure] = field(default_factory=list)
    load_before: float = field(default_factory=load_average)

    def add(
        self,
        what: str,
        value: float,
        unit: str,
        *,
        peer: str | None = None,
        peer_value: float | None = None,
        ratio: float | None = None,
        detail: str = "",
    ) -> None:
        """Note one figure; ``ratio`` defaults to ``value / peer_value``."""
        if ratio is None and peer_value:
            ratio = value / peer_value
        self.figures.append(Figure(self.bench, what, value, unit, peer, peer_value, ratio, detail))

    def lines(self) -> list[dict[str, Any]]:
        """The results lines of the figures noted so far, stamped now."""
        stamp = {
            "machine": machine_description(self.load_before, load_average()),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "commit": git_commit(),
            "command": self.command,
        }
        return [{**_rounded(asdict(figure)), **stamp} for figure in self.figures]

    def write(self, path: Path = RESULTS_JSONL) -> None:
        """Append the figures to ``path``, one JSON line each."""
        with path.open("a", encoding="utf-8") as out:
            for line in self.lines():
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        print(f"{len(self.figures)} figures appended to {path}", flush=True)


def _rounded(line: dict[str, Any]) -> dict[str, Any]:
    """Figures to 4 significant digits: more would be noise on a shared machine."""
    for key in ("value", "peer_value", "ratio"):
        if isinstance(line[key], float):
            line[key] = float(f"{line[key]:.4g}")
    return line


def machine_description(load_before: float, load_after: float) -> str:
    """Cores, CPU model, memory, OS, Python, Ray and Redis versions, which build of drasi_ray's
    hot path ran (:mod:`drasi_ray.native`), and the load average."""
    memory = psutil.virtual_memory().total / 2**30
    cores = f"{os.cpu_count()} cores ({_cpu_model()})"
    python = f"Python {platform.python_version()} (hot path {native.BUILD})"
    versions = f"{python}, Ray {_ray_version()}, {_redis_version()}"
    system = f"{platform.system()} {platform.machine()}"
    load = f"load 1m {load_before:.1f} before, {load_after:.1f} after"
    return f"{cores}, {memory:.1f} GiB, {system}; {versions}; {load}"


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return platform.processor() or "unknown CPU"
    names = (line.split(":", 1)[1].strip() for line in text.splitlines() if "model name" in line)
    return next(names, platform.processor() or "unknown CPU")


def _ray_version() -> str:
    try:
        import ray
    except ImportError:
        return "absent"
    return str(ray.__version__)


def _redis_version() -> str:
    """``Redis 6.2.14``: the redis-server the benchmarks start (:func:`find_redis_server`)."""
    try:
        done = subprocess.run(
            [find_redis_server(), "--version"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError, EmbeddedRedisError):
        return "Redis unknown"
    words = done.stdout.split()
    version = next((w.removeprefix("v=") for w in words if w.startswith("v=")), "unknown")
    return f"Redis {version}"


def read(path: Path = RESULTS_JSONL) -> Iterator[dict[str, Any]]:
    """Every results line of ``path``, in file order (none if it does not exist)."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not a JSON line: {exc}") from exc
