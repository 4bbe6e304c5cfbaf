"""One Spark session (RayDP on the session's Ray) shared by every Spark test (~10 s to start).

Apps reuse a RayDP session that is already running in the process and leave it running when
they stop, so this fixture owns it and stops it once, before Ray shuts down.
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
