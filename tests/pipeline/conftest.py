"""The pipeline tier: the whole app on a real local Ray and a real Redis.

``redis_server``, ``redis_url`` and ``ray_session`` come from ``tests/conftest.py``. The Spark
tests share one Spark session (RayDP on the session's Ray, ~10 s to start): apps reuse a RayDP
session already running in the process and leave it running when they stop, so
``spark_session`` owns it and stops it once, before Ray shuts down.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from drasi_ray.analytics.spark import SparkRuntime
from drasi_ray.model.config import SparkConfig


@pytest.fixture(scope="session")
def spark_session(ray_session: None) -> Iterator[SparkSession]:
    runtime = SparkRuntime(SparkConfig())
    yield runtime.session()
    runtime.stop()
