"""The child process every drasi-lib run happens in: ``python -m tests.oracle.child REQUEST OUT``.

No test process loads drasi-lib: it can crash the interpreter as it exits, and a query it
panics on never answers. :func:`run_child` writes a request as JSON, runs this module on it
and reads back what it wrote, whatever its exit status. The child runs the request with the
runner of its ``kind`` (``cases``: :mod:`tests.oracle.cases`, ``plans``:
:mod:`tests.oracle.plans`), which writes one JSON line per finished unit of work, flushed at
once, so a crash costs only the unit it happened in. Then the child leaves with ``os._exit``,
skipping the interpreter teardown where drasi-lib may crash.

The child's stdout (where Drasi logs) goes nowhere; ``RUST_LOG`` keeps Drasi's errors and the
query manager's per-event debug line, which the cases runner counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

LOG_FILTER = "error,drasi_lib::queries::manager=debug"
"""RUST_LOG for the child (module docstring)."""
REPOSITORY = Path(__file__).resolve().parents[2]

Emit = Callable[[Mapping[str, Any]], None]
"""Writes one finished unit of work as a JSON line."""
Runner = Callable[[Mapping[str, Any], Emit], Coroutine[Any, Any, None]]
"""Runs one request's work in the child, emitting each unit as it finishes."""


def run_child(kind: str, request: Mapping[str, Any], timeout_s: float) -> list[dict[str, Any]]:
    """Run ``request`` with the runner of ``kind`` in a child; the lines it wrote, in order.
    A child still running after ``timeout_s`` is killed (what it wrote is kept)."""
    with tempfile.TemporaryDirectory(prefix="drasi-oracle-") as directory:
        source, target = Path(directory, "request.json"), Path(directory, "out.jsonl")
        source.write_text(json.dumps({"kind": kind, **request}), encoding="utf-8")
        with contextlib.suppress(subprocess.TimeoutExpired):  # what it wrote is kept
            subprocess.run(
                [sys.executable, "-m", "tests.oracle.child", str(source), str(target)],
                env={**os.environ, "RUST_LOG": LOG_FILTER},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
                cwd=REPOSITORY,
                timeout=timeout_s,
            )
        if not target.exists():
            return []
        lines = target.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line]


async def create_drasi(name: str, archive_directory: str | None = None) -> Any:
    """A Drasi instance; with ``archive_directory``, on a RocksDB index there with Drasi's
    archive on (the only store where Drasi knows its past functions)."""
    import drasi  # only in the child: the test process never loads drasi-lib

    if archive_directory is None:
        return await drasi.Drasi.create(name)
    store: Any = {"kind": "rocksdb", "path": archive_directory, "enable_archive": True}
    return await drasi.Drasi.create(name, index_store=store)


def _runners() -> dict[str, Runner]:
    from tests.oracle import cases, plans

    return {"cases": cases.serve, "plans": plans.serve}


def main(argv: Sequence[str]) -> None:
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    with Path(argv[1]).open("a", encoding="utf-8") as output:

        def emit(doc: Mapping[str, Any]) -> None:
            output.write(json.dumps(doc) + "\n")
            output.flush()

        asyncio.run(_runners()[request["kind"]](request, emit))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, where drasi-lib may crash


if __name__ == "__main__":
    main(sys.argv[1:])
