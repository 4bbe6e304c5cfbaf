"""Sampling profiles of running processes (Ray actors included) with py-spy.

:func:`py_spy` attaches ``py-spy record`` to a process for the duration of a ``with`` block and
writes collapsed stacks aggregated by function (``--format raw --function``). The sampler runs
with ``--nonblocking`` (it reads the target's memory without pausing it), so the profiled run
keeps its speed on 2 cores; an occasional torn stack is the price. Only Python frames are
sampled: time inside C code appears under the Python function that called it.

:func:`summarize` turns the stacks into the two usual views: *self* (the leaf frame, where
the CPU was) and *inclusive* (any frame on the stack, where the time went from a caller's view).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

ATTACH_S = 1.0
"""py-spy needs a moment to attach before the measured work starts."""


@dataclass(frozen=True)
class Profile:
    """Aggregated samples of one process."""

    samples: int
    self_counts: Counter[str]
    inclusive_counts: Counter[str]

    def top(self, view: str, limit: int) -> list[tuple[str, int, float]]:
        """``(frame, samples, percent of all samples)`` of the ``self`` or ``inclusive`` view.

        The inclusive view leaves out the thread and event-loop frames every stack has.
        """
        counts = self.self_counts if view == "self" else self.inclusive_counts
        total = max(self.samples, 1)
        ranked = (
            (frame, n)
            for frame, n in counts.most_common()
            if view == "self" or not _is_plumbing(frame)
        )
        return [(frame, n, 100.0 * n / total) for frame, n in islice(ranked, limit)]

    def inclusive_of(self, *functions: str) -> int:
        """Samples with any of ``functions`` (``Class.method`` names) on the stack.

        Give functions that never share a stack (e.g. two alternative reads): counts add up.
        """
        wanted = set(functions)
        return sum(n for frame, n in self.inclusive_counts.items() if _name(frame) in wanted)


PLUMBING = ("(threading.py", "(asyncio/", "/asyncio/", "threading.py:")
"""Frames of thread start-up and the asyncio loop: on every stack, so not worth listing."""


def _is_plumbing(frame: str) -> bool:
    return any(marker in frame for marker in PLUMBING)


def _name(frame: str) -> str:
    return frame.partition(" (")[0]


def available() -> bool:
    return shutil.which("py-spy") is not None


@contextmanager
def py_spy(pid: int, output: Path, rate_hz: int = 250) -> Iterator[None]:
    """Sample process ``pid`` while the block runs; collapsed stacks land in ``output``."""
    command = [
        "py-spy", "record", "--pid", str(pid), "--rate", str(rate_hz),
        "--format", "raw", "--function", "--nonblocking", "--output", str(output),
    ]  # fmt: skip
    sampler = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(ATTACH_S)
    try:
        yield
    finally:
        sampler.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        _, err = sampler.communicate(timeout=60)
        if not output.exists():
            raise RuntimeError(f"py-spy wrote no profile for pid {pid}: {err.decode()[-500:]}")


def summarize(collapsed: Path) -> Profile:
    """Read ``frame;frame;... count`` lines; skip the thread-name root py-spy may add."""
    self_counts: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    samples = 0
    for line in collapsed.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        samples += count
        self_counts[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    return Profile(samples, self_counts, inclusive)


def shorten(frame: str, width: int = 90) -> str:
    """``func (/long/path/site-packages/pkg/mod.py)`` -> ``func (pkg/mod.py)``, cut to width."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", "/work/main/", "lib/python3.11/"):
        if marker in where:
            where = where.split(marker, 1)[1]
            break
    text = f"{name} ({where})" if where else name
    return text if len(text) <= width else text[: width - 1] + "…"


@contextmanager
def py_spy_all(pids: dict[str, int], directory: Path | None, rate_hz: int = 250) -> Iterator[None]:
    """Sample every process of ``pids`` (name -> pid) while the block runs, each into
    ``directory/<name>.txt``; a no-op without ``directory`` or without py-spy."""
    if directory is None or not available():
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        for name, pid in pids.items():
            stack.enter_context(py_spy(pid, directory / f"{name}.txt", rate_hz))
        yield


def report(directory: Path, limit: int = 25) -> list[str]:
    """The self and inclusive views of every profile in ``directory``, as text lines."""
    lines: list[str] = []
    for path in sorted(directory.glob("*.txt")):
        profile = summarize(path)
        for view in ("self", "inclusive"):
            lines.append(f"== {path.stem}: {view} ({profile.samples} samples)")
            lines += [
                f"  {pct:5.1f}%  {n:6d}  {shorten(frame, 110)}"
                for frame, n, pct in profile.top(view, limit)
            ]
    return lines
