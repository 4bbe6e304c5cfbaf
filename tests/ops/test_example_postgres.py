"""The PostgreSQL example runs from its README's three commands and tells its story."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "examples" / "postgres" / "README.md"


def _commands() -> list[list[str]]:
    block = re.search(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    assert block is not None
    lines = [line.split("#")[0].split() for line in block.group(1).splitlines()]
    return [[sys.executable, *line[1:]] for line in lines if line and line[0] == "python"]


@pytest.mark.slow
def test_the_postgres_example_runs_from_its_readme() -> None:
    up, run, down = _commands()
    assert [command[1:] for command in (up, run, down)] == [
        ["examples/postgres/servers.py", "up"],
        ["examples/postgres/run.py"],
        ["examples/postgres/servers.py", "down"],
    ]
    try:
        subprocess.run(up, cwd=ROOT, check=True, capture_output=True, timeout=120)
        done = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run(down, cwd=ROOT, check=True, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    shown = README.read_text().split("```\n1.", 1)[1].split("...", 1)[0]
    assert "\n".join(lines).count("1." + shown.rstrip()) == 1  # the README's excerpt, as printed
    assert lines[-3:] == [
        "  open-orders-by-city: [{'city': 'Oslo', 'open_orders': 1, 'value': 60.0}, "
        "{'city': 'Rome', 'open_orders': 1, 'value': 55.5}]",
        "  big-orders: [{'order': 4, 'customer': 'Ann', 'city': 'Oslo', 'total': 60.0}, "
        "{'order': 3, 'customer': 'Cy', 'city': 'Oslo', 'total': 120.0}, "
        "{'order': 2, 'customer': 'Bob', 'city': 'Rome', 'total': 80.0}, "
        "{'order': 5, 'customer': 'Dee', 'city': 'Rome', 'total': 55.5}]",
        "the reader: streaming, 5 transactions written",
    ]
    assert not (ROOT / "examples" / "postgres" / ".data").exists()
