"""A user's mistakes on the command line: one line saying what to fix, a non-zero exit, within a
deadline, never a traceback (issue #27, items 2, 3 and 5).

Every command meets every mistake that applies to it: a missing or unreadable file, a Redis that
does not answer, a wrong password, a bad id, a variable that is not set. The matrix runs
in-process (``cli.main``, the same code the binary runs) on one Redis; the mistakes caught before
Ray starts cost no Ray. A few run as the real binary (a subprocess) to check what only a process
shows: the exit status, the deadline, ``--debug``, and that a password never reaches the output.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from drasi_ray.ops import cli
from drasi_ray.testing.embedded_redis import EmbeddedRedis, free_port

ROOT = Path(__file__).parent.parent.parent
EVENTS = ROOT / "examples" / "sensor-events.jsonl"
PASSWORD = "s3cret-Pa55"
DEADLINE_S = 20.0
"""A mistake is reported within this (the apps below wait 1 s for a Redis, not 30)."""

APP = """\
id: mistakes
connect_timeout_s: 1
sources:
  - id: sensors
    properties:
      redis_url: {url}
      stream_key: sensor-changes
queries:
  - id: hot
    sources: [sensors]
    query: "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id"
    reactions:
      - kind: platform
"""


@pytest.fixture(scope="module")
def locked_redis() -> Iterator[EmbeddedRedis]:
    """A Redis that asks for a password (``PASSWORD``)."""
    with EmbeddedRedis() as server:
        with redis.Redis(port=server.port) as client:
            client.config_set("requirepass", PASSWORD)
        yield server


def _app(tmp_path: Path, url: str, name: str = "app.yaml") -> str:
    path = tmp_path / name
    path.write_text(APP.format(url=url))
    return str(path)


def _commands(app: str) -> dict[str, list[str]]:
    """Each command that reads an app file, with what it needs besides."""
    return {
        "validate": ["validate", app],
        "run": ["run", app, "--exit-when-idle"],
        "status": ["status", app],
        "results": ["results", "hot", app],
        "dlq": ["dlq", "list", "sensors", app],
        "replay": ["replay", "sensors", "--from", "0", app],
        "scale": ["scale", "sensors", "2", app],
        "analytics": ["analytics", "counts", app],
    }


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    """``drasi-ray argv`` exits 2 within the deadline with one line holding ``expected``."""
    started = time.monotonic()
    code = cli.main(argv)
    spent = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 2, (argv, code, out, err)
    assert spent < DEADLINE_S, (argv, spent)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("drasi-ray: error: "), (argv, err)
    for fragment in expected:
        assert fragment in lines[0], (argv, fragment, lines[0])
    return lines[0]


COMMANDS = ["validate", "run", "status", "results", "dlq", "replay", "scale", "analytics"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_or_unreadable_app_file(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope.yaml")
    _fails(_commands(missing)[command], capsys, f"{missing}: No such file or directory")
    _fails(_commands(str(tmp_path))[command], capsys, f"{tmp_path}: Is a directory")


@pytest.mark.parametrize("command", ["run", "status", "results", "dlq", "replay", "analytics"])
def test_a_redis_that_does_not_answer(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"redis://:{PASSWORD}@127.0.0.1:{free_port()}/0"
    line = _fails(
        _commands(_app(tmp_path, url))[command],
        capsys,
        "cannot reach Redis at redis://:***@127.0.0.1:",
        "Connection refused; check that the server runs",
    )
    assert PASSWORD not in line


@pytest.mark.parametrize("command", ["run", "status", "results", "dlq", "replay", "analytics"])
def test_a_wrong_password(
    command: str, locked_redis: EmbeddedRedis, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"redis://:wrong-{PASSWORD}@127.0.0.1:{locked_redis.port}/0"
    line = _fails(
        _commands(_app(tmp_path, url))[command],
        capsys,
        f"Redis at redis://:***@127.0.0.1:{locked_redis.port}/0 (",
        "refused the credentials",
    )
    assert "wrong-" not in line


def test_publish_with_each_mistake(
    redis_url: str, locked_redis: EmbeddedRedis, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def publish(path: Path, url: str) -> list[str]:
        return [
            "publish",
            "sensor-changes",
            str(path),
            "--redis-url",
            url,
            "--connect-timeout",
            "1",
        ]

    _fails(publish(tmp_path / "nope.jsonl", redis_url), capsys, "nope.jsonl: No such file")
    down = f"redis://127.0.0.1:{free_port()}/0"
    _fails(publish(EVENTS, down), capsys, "cannot reach Redis at")
    wrong = f"redis://:wrong@127.0.0.1:{locked_redis.port}/0"
    _fails(publish(EVENTS, wrong), capsys, "refused the credentials")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(EVENTS.read_text().replace('"op": "u"', '"op": "q"', 1))
    _fails(
        publish(bad, redis_url),
        capsys,
        "line 3: a consumer would dead-letter it: unknown operation type 'q'",
    )
    assert redis.Redis.from_url(redis_url).xlen("sensor-changes") == 0  # nothing sent


def test_bad_ids_and_names(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = _app(tmp_path, redis_url)
    _fails(["results", "nope", app], capsys, "unknown query 'nope' (queries: hot)")
    _fails(["dlq", "list", "nope", app], capsys, "unknown source 'nope' (sources: sensors)")
    _fails(["dlq", "purge", "sensors", app, "--id", "12-x"], capsys, "not a dead-letter id")
    _fails(["dlq", "replay", "sensors", app, "--id", "12-0"], capsys, "no dead letter 12-0")
    _fails(["replay", "sensors", "--from", "yesterday", app], capsys, "--from 'yesterday'")
    _fails(["scale", "sensors", "two", app], capsys, "N must be a whole number, got 'two'")


def test_secrets_from_the_environment_and_files(
    locked_redis: EmbeddedRedis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``${VAR}`` and ``${file:PATH}`` keep the password out of the app file and the command
    line; a variable that is not set is named, never taken as an empty password."""
    secret = tmp_path / "redis-password"
    secret.write_text(PASSWORD + "\n")
    for reference in ("${REDIS_PASSWORD}", f"${{file:{secret}}}"):
        url = f"redis://:{reference}@127.0.0.1:{locked_redis.port}/0"
        app = _app(tmp_path, url)
        monkeypatch.delenv("REDIS_PASSWORD", raising=False)
        if reference.startswith("${REDIS"):
            _fails(["status", app], capsys, "the environment variable 'REDIS_PASSWORD' is not set")
            monkeypatch.setenv("REDIS_PASSWORD", PASSWORD)
        assert cli.main(["status", app]) == 0
        assert PASSWORD not in capsys.readouterr().out


def _binary(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "drasi-ray"), *argv]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=env or dict(os.environ), cwd=ROOT
    )


def test_the_binary_gives_one_line_and_debug_gives_the_traceback(tmp_path: Path) -> None:
    url = f"redis://:{PASSWORD}@127.0.0.1:{free_port()}/0"
    app = _app(tmp_path, url)
    started = time.monotonic()
    done = _binary("status", app)
    assert time.monotonic() - started < DEADLINE_S
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("drasi-ray: error: cannot reach Redis at redis://:***@")
    assert len(done.stderr.splitlines()) == 1 and PASSWORD not in done.stderr
    debug = _binary("status", app, "--debug")
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr
    assert "RedisUnavailableError" in debug.stderr
