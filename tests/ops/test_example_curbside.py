"""The curbside example runs from the README's one command and tells its story."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_curbside_example_runs_with_one_command(redis_url: str) -> None:
    command = [sys.executable, "examples/curbside/curbside.py", "--redis-url", redis_url]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    diffs = [line.strip() for line in lines if line.startswith("     ")]
    assert diffs == [
        "ADD {'order': 'order-1', 'customer': 'Ann', 'plate': 'ABC-123'}",
        "ADD {'order': 'order-2', 'customer': 'Bob', 'plate': 'XYZ-789'}",
        "DELETE {'order': 'order-1', 'customer': 'Ann', 'plate': 'ABC-123'}",
        "DELETE {'order': 'order-2', 'customer': 'Bob', 'plate': 'XYZ-789'}",
    ]
    assert lines[-1] == "ready at the curb now: []"
    assert "5. Ann drives to the curb: the order shows up" in lines
