"""Ray actor names and namespaces: stable, so a restarted driver finds its actors again.

Every actor of an app lives in the Ray namespace ``drasi_ray.<app_id>``.
"""

from __future__ import annotations

COORDINATOR = "drasi/coordinator"


def namespace(app_id: str) -> str:
    return f"drasi_ray.{app_id}"


def consumer_actor(source_id: str, index: int) -> str:
    return f"drasi/{source_id}/consumer-{index}"


def query_actor(query_id: str) -> str:
    return f"drasi/query/{query_id}"
