"""Every shell command in README.md's ```bash blocks that is safe here runs and exits 0.

Commands run from the repository root, in README order, against the test Redis: the text is
used as written except that ``redis://localhost:6379`` becomes the test Redis URL, ``redis-cli``
gets ``-p <port>``, and the commands that read ``examples/app.yaml`` get ``--redis-url``.
``RAY_ADDRESS=local`` makes every command that needs Ray start a private local one.
Skipped, with the reason: see :data:`SKIPPED`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from drasi_ray.testing.embedded_redis import EmbeddedRedis, find_redis_server

ROOT = Path(__file__).parent.parent.parent

SKIPPED: list[tuple[str, str]] = [
    (r"^pip install", "installs the package (.ci/run does exactly this)"),
    (r"^pytest", "is this test suite"),
    (r"^ray (up|submit|down) ", "needs SSH to the machines of a real cluster.yaml"),
    (r"<[a-z-]+>", "has placeholders for a real cluster (<head>, <redis-host>)"),
    (
        r"^(export RAY_AUTH_MODE|ray start|ray stop|ray job submit --address http://127\.0\.0\.1)",
        "would use Ray's default ports and `ray stop` stops every Ray of the user; "
        "tests/ops/test_ray_job.py runs these steps on a private head",
    ),
    (r"^drasi-ray run (?!.*--exit-when-idle)", "runs until Ctrl-C"),
]
APP_COMMANDS = re.compile(
    r"^drasi-ray (status|run|dlq|replay|scale|analytics \w+) .*examples/app\.yaml"
)


def readme_commands() -> list[str]:
    """The commands of every ```bash block, multi-line ones joined (shlex decides)."""
    text = (ROOT / "README.md").read_text()
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        pending = ""
        for line in block.splitlines():
            pending = f"{pending}\n{line}" if pending else line
            if pending.rstrip().endswith("\\"):
                continue
            try:
                shlex.split(pending, comments=True)
            except ValueError:  # an open quote: the command goes on
                continue
            if pending.strip() and not pending.strip().startswith("#"):
                commands.append(pending.strip())
            pending = ""
    return commands


def skip_reason(command: str) -> str | None:
    return next((reason for pattern, reason in SKIPPED if re.search(pattern, command)), None)


def localise(command: str, server: EmbeddedRedis, cli: str) -> str:
    command = command.replace("redis://localhost:6379", server.url)
    command = re.sub(r"^redis-cli ", f"{cli} -p {server.port} ", command)
    if APP_COMMANDS.match(command):
        command = re.sub(r"(\s+#.*)?$", f" --redis-url {server.url}", command, count=1)
    return command


def test_the_readme_has_runnable_and_skipped_commands() -> None:
    commands = readme_commands()
    runnable = [c for c in commands if skip_reason(c) is None]
    assert any(c.startswith("drasi-ray publish") for c in runnable)
    assert any(c.startswith("drasi-ray status") for c in runnable)
    assert any(c.startswith("redis-cli XADD") for c in runnable)
    assert any(c.startswith("ray up") for c in commands if c not in runnable)


@pytest.mark.slow
def test_every_safe_readme_command_runs(redis_server: EmbeddedRedis, redis_url: str) -> None:
    cli = shutil.which("redis-cli", path=str(Path(find_redis_server()).parent)) or "redis-cli"
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "RAY_ADDRESS": "local", "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    ran, skipped = [], []
    for command in readme_commands():
        reason = skip_reason(command)
        if reason is not None:
            skipped.append((command, reason))
            continue
        local = localise(command, redis_server, cli)
        done = subprocess.run(
            ["bash", "-c", local], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{local}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        ran.append(command)
    assert len(ran) >= 10, ran
    print("\n".join(f"skipped: {c.splitlines()[0]} ({r})" for c, r in skipped))
