"""Ray actor names and namespaces: stable, so a restarted driver finds its actors again.

Every actor of an app lives in the Ray namespace ``drasi_ray.<app_id>``:

- ``drasi/coordinator``: the control plane, and store shard 0;
- ``drasi/shard-<k>``: store shard ``k`` (1 .. K-1);
- ``drasi/query-host-<m>``: shared query host ``m``; ``drasi/query-host/<query_id>``: the host
  of a query that has one of its own (``dedicated_host``);
- ``drasi/<source>/consumer-<i>``: consumer ``i`` of a source;
- ``drasi/<source>/postgres-reader``: the reader of a PostgreSQL source;
- ``drasi/reaction/<id>``: a reaction of the app (HTTP, SSE) running as an actor of its own.
"""

from __future__ import annotations

COORDINATOR = "drasi/coordinator"
SHARED_HOST_PREFIX = "drasi/query-host-"
DEDICATED_HOST_PREFIX = "drasi/query-host/"


def namespace(app_id: str) -> str:
    return f"drasi_ray.{app_id}"


def consumer_actor(source_id: str, index: int) -> str:
    return f"drasi/{source_id}/consumer-{index}"


def postgres_reader(source_id: str) -> str:
    return f"drasi/{source_id}/postgres-reader"


def shard_actor(index: int) -> str:
    """Store shard ``index``; shard 0 is the coordinator."""
    return COORDINATOR if index == 0 else f"drasi/shard-{index}"


def shared_host(index: int) -> str:
    return f"{SHARED_HOST_PREFIX}{index}"


def dedicated_host(query_id: str) -> str:
    return f"{DEDICATED_HOST_PREFIX}{query_id}"


def is_query_host(name: str) -> bool:
    return name.startswith((SHARED_HOST_PREFIX, DEDICATED_HOST_PREFIX))


def reaction_actor(reaction_id: str) -> str:
    return f"drasi/reaction/{reaction_id}"
