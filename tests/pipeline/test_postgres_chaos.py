"""The PostgreSQL chaos run, short (the full one: ``python -m bench.postgres_chaos``).

1,000 row changes over three tables while the reader is SIGKILLed twice and PostgreSQL (the
session's server) and Redis are restarted once each: every query's results and result diffs
equal a replay of the committed transactions, and the stream holds each of their changes once.
"""

from __future__ import annotations

import pytest

from drasi_ray.testing.postgres import EmbeddedPostgres
from drasi_ray.testing.postgres_chaos import PostgresChaos, PostgresChaosSettings


@pytest.mark.slow
def test_nothing_lost_or_repeated_under_kills_and_restarts(
    ray_session: None, postgres_server: EmbeddedPostgres
) -> None:
    settings = PostgresChaosSettings(
        changes=1000, seed_orders=200, reader_kills=2, postgres_restarts=1, redis_restarts=1
    )
    report = PostgresChaos(settings, postgres_server, echo=lambda _line: None).run()
    assert report.reader_kills == 2 and report.postgres_restarts == report.redis_restarts == 1
    assert report.diffs_compared > 1000
    assert report.passed, "\n".join(report.lines())
