"""The app factory tests, benchmarks and drills share: one platform source, its queries.

Almost every test and benchmark runs the same shape of app: one Redis stream read by a
platform source, one or a few continuous queries on it, a fresh app id (its own Ray namespace
and Redis keys) so runs never see each other's actors or state. :func:`one_source_app` builds
that shape through the public API, so what is tested is what users build.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from drasi_ray.app import DrasiRay
from drasi_ray.model.clock import Clock
from drasi_ray.model.config import (
    DispatchMode,
    PlatformSourceConfig,
    RayConfig,
    ScalingConfig,
    StateConfig,
    validated,
)
from drasi_ray.query.definition import Query
from drasi_ray.shards.core import ApplyProbe
from drasi_ray.source.platform import PlatformSource

BLOCK_MS = 100
"""``block_ms`` unless given: short, so a test's changes are read at once and stops are quick."""


def one_source_app(
    redis_url: str,
    stream: str | Sequence[str],
    queries: Mapping[str, str],
    *,
    source_id: str = "source",
    prefix: str = "test",
    dispatch_mode: DispatchMode = DispatchMode.CHANNEL,
    dispatch_buffer_capacity: int = 1000,
    ray_config: RayConfig | None = None,
    state_config: StateConfig | None = None,
    failpoints: ApplyProbe | None = None,
    clock: Clock | None = None,
    scaling_config: ScalingConfig | None = None,
    **source_options: Any,
) -> DrasiRay:
    """A new (not started) app ``<prefix>-<random>`` with one platform source ``source_id``
    reading ``stream`` (or several streams, one per partition), and one continuous query per
    item of ``queries`` (id -> Cypher) on it.

    ``source_options`` are :class:`~drasi_ray.model.config.PlatformSourceConfig` fields
    (``consumers=2``, ``batch_size=50``, ...); ``block_ms`` defaults to :data:`BLOCK_MS`.
    Raises :class:`~drasi_ray.model.errors.ConfigError` for an unknown or invalid option.
    """
    app = DrasiRay(
        f"{prefix}-{uuid.uuid4().hex[:8]}",
        ray_config=ray_config,
        state_config=state_config,
        failpoints=failpoints,
        clock=clock,
        scaling_config=scaling_config,
    )
    app.add_source(
        one_source(
            redis_url,
            stream,
            source_id=source_id,
            dispatch_mode=dispatch_mode,
            dispatch_buffer_capacity=dispatch_buffer_capacity,
            **source_options,
        )
    )
    for query_id, text in queries.items():
        app.add_query(Query.cypher(query_id).query(text).from_source(source_id).build())
    return app


def one_source(
    redis_url: str,
    stream: str | Sequence[str],
    *,
    source_id: str = "source",
    dispatch_mode: DispatchMode = DispatchMode.CHANNEL,
    dispatch_buffer_capacity: int = 1000,
    **source_options: Any,
) -> PlatformSource:
    """The source of :func:`one_source_app` (to add to a running app, say)."""
    options = {"block_ms": BLOCK_MS, **source_options}
    streams = (stream,) if isinstance(stream, str) else tuple(stream)
    config = validated(PlatformSourceConfig, redis_url=redis_url, stream_keys=streams, **options)
    return PlatformSource(
        source_id,
        config,
        dispatch_mode=dispatch_mode,
        dispatch_buffer_capacity=dispatch_buffer_capacity,
    )
