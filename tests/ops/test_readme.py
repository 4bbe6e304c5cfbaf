"""Every command and program in README.md runs, as written, and does what it says.

- The commands of the ```bash blocks run from the repository root, in README order, against the
  test Redis: the text is used as written except that ``redis://localhost:6379`` becomes the
  test Redis URL, ``redis-cli`` gets ``-p <port>``, and the commands that read
  ``examples/app.yaml`` get ``--redis-url``. No ``RAY_ADDRESS``: every command that needs Ray
  starts a private local one by itself, whatever other Ray runs on the machine (issue #27).
  ``run`` prints the four results of the published events (a backlog when it starts).
  Skipped, with the reason: :data:`SKIPPED`, the install
  and test commands, which :func:`test_the_install_and_test_commands_are_what_ci_runs` holds
  to ``.ci/run`` (which runs them).
- The ```python block runs as a program against the test Redis and prints its result.
- The ```yaml block is ``examples/app.yaml``, which the commands use.
- A program the prose names (``examples/…py``, alone or in a ``python …`` command) runs in a
  test: :data:`PROGRAMS_RUN_BY` says which, and that test names the program.
- The README stays under 12 KB: what a newcomer needs, the rest in docs/.
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
README = ROOT / "README.md"

SKIPPED: list[tuple[str, str]] = [
    (r"^python -m pip install ", "installs the package (.ci/run runs exactly this)"),
    (r"^pytest$", "is this test suite (.ci/run runs exactly this)"),
]
PROGRAMS_RUN_BY = {
    "examples/quickstart.py": "tests/ops/test_readme.py",
    "examples/curbside/curbside.py": "tests/ops/test_example_curbside.py",
}
"""Each program the README's prose names, and the test that runs it."""
README_LIMIT = 12 * 1024
APP_COMMANDS = re.compile(
    r"^drasi-ray (status|run|results|dlq|replay|scale|analytics \w+) .*examples/app\.yaml"
)
FOUR_RESULTS = [
    "  ADD    {'id': 'sensor-2', 'temperature': 75.5}",
    "  ADD    {'id': 'sensor-1', 'temperature': 71.2}",
    "  DELETE {'id': 'sensor-2', 'temperature': 75.5}",
    "  ADD    {'id': 'sensor-3', 'temperature': 80.1}",
]
"""What `drasi-ray run examples/app.yaml --exit-when-idle` prints after the README's publish."""


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def readme_commands() -> list[str]:
    """The commands of every ```bash block, multi-line ones joined (shlex decides)."""
    commands: list[str] = []
    for block in blocks("bash"):
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


def environment() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("RAY_ADDRESS", None)
    return env


def run_here(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` from the repository root, in :func:`environment`; fails the test unless it
    exits 0 (with the end of its output)."""
    done = subprocess.run(
        argv, cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{argv}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


def test_the_install_and_test_commands_are_what_ci_runs() -> None:
    """The README's install and test commands are the ones .ci/run runs (``--quiet`` aside)."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    ci_commands = {line.strip().replace(" --quiet", "") for line in ci}
    skipped = [command for command in readme_commands() if skip_reason(command) is not None]
    assert skipped == ['python -m pip install -c constraints.txt -e ".[dev]"', "pytest"]
    assert set(skipped) <= ci_commands, (skipped, sorted(ci_commands))


def test_the_readme_runs_the_example_app_and_its_yaml_is_the_example_file() -> None:
    commands = [c for c in readme_commands() if skip_reason(c) is None]
    for start in ("drasi-ray demo", "drasi-ray publish", "drasi-ray run", "redis-cli XADD"):
        assert any(c.startswith(start) for c in commands), start
    (app_yaml,) = blocks("yaml")
    assert app_yaml in (ROOT / "examples" / "app.yaml").read_text()


@pytest.mark.slow
def test_every_readme_command_runs(redis_server: EmbeddedRedis, redis_url: str) -> None:
    cli = shutil.which("redis-cli", path=str(Path(find_redis_server()).parent)) or "redis-cli"
    ran = {}
    for command in readme_commands():
        if skip_reason(command) is not None:
            continue
        ran[command] = run_here(["bash", "-c", localise(command, redis_server, cli)])
    assert len(ran) >= 8, ran
    run = ran["drasi-ray run examples/app.yaml --exit-when-idle"].stdout
    assert "running on a new local Ray (127.0.0.1 only)" in run, run
    printed = [line for line in run.splitlines() if line.startswith("  ")]
    assert printed == FOUR_RESULTS, run
    logged = [
        line for line in run.splitlines() if '"kind":"change","queryId":"hot-sensors"' in line
    ]
    assert len(logged) == 4, run  # the log reaction's lines, forwarded by Ray before it stopped
    rows = ran["drasi-ray results hot-sensors examples/app.yaml"].stdout.splitlines()
    assert rows == ['{"id":"sensor-1","temperature":71.2}', '{"id":"sensor-3","temperature":80.1}']


@pytest.mark.slow
def test_the_python_example_runs_and_prints_its_result(
    redis_server: EmbeddedRedis, redis_url: str
) -> None:
    (program,) = blocks("python")
    local = program.replace("redis://localhost:6379", redis_server.url)
    lines = run_here([sys.executable, "-c", local]).stdout.splitlines()
    assert "1 ({'type': 'ADD', 'data': {'id': 'sensor-1', 't': 75.5}},)" in lines, lines
    assert "[{'id': 'sensor-1', 't': 75.5}]" in lines, lines


def test_the_readme_is_short() -> None:
    size = len(README.read_bytes())
    assert size < README_LIMIT, f"README.md is {size:,} bytes: move detail to docs/"


def test_every_program_the_readme_names_is_run_by_a_test() -> None:
    spans = re.findall(
        r"`([^`\n]+)`", "".join(re.split(r"```.*?```", README.read_text(), flags=re.S))
    )
    named = {
        program for span in spans for program in re.findall(r"(?:^|\s)(examples/\S+\.py)\b", span)
    }
    assert named == set(PROGRAMS_RUN_BY), "a program of the README without its test (or gone)"
    for program, test in PROGRAMS_RUN_BY.items():
        assert program in (ROOT / test).read_text(), f"{test} does not run {program}"


@pytest.mark.slow
def test_the_quickstart_runs_as_its_docstring_says() -> None:
    """``python examples/quickstart.py``: its own private Redis and a local Ray."""
    done = run_here([sys.executable, "examples/quickstart.py"])
    lines = done.stdout.splitlines()
    assert lines[-1] == "current results: [{'id': 'sensor-1', 'temperature': 71.2}]", lines
    assert "Found multiple active Ray instances" not in done.stderr  # never someone else's Ray
