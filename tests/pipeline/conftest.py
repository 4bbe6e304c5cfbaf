"""Fixtures for tests that run the whole pipeline on a real local Ray.

Ray starts once per session (~3 s) with 2 CPUs and no dashboard; drasi_ray actors reserve
0 CPUs by default, so any number of them fit.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import ray


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
