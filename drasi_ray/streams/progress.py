"""Synchronous progress checks used by the driver (``start()`` and ``wait_until_idle()``).

"Drained up to X" means: the group has delivered every entry up to X (its last-delivered id is
at least X) and none of them is still pending. Portable to Redis 6.2, which has no ``lag``.
"""

from __future__ import annotations

from typing import Any

import redis

from drasi_ray.model.changes import parse_entry_id
from drasi_ray.model.config import PlatformSourceConfig


def ensure_group(client: redis.Redis, config: PlatformSourceConfig) -> bool:
    """Create the source's group (MKSTREAM) at ``start_id``; False if it already existed."""
    try:
        client.xgroup_create(
            config.stream_key, config.consumer_group, id=config.start_id, mkstream=True
        )
    except redis.ResponseError as exc:
        if "BUSYGROUP" in str(exc):
            return False
        raise
    return True


def last_id(client: redis.Redis, stream: str) -> str:
    """The id of the last entry ever added to ``stream`` ("0-0" if it has none)."""
    try:
        info: dict[Any, Any] = client.xinfo_stream(stream)
    except redis.ResponseError:  # no such key
        return "0-0"
    value = info.get("last-generated-id", b"0-0")
    return value.decode() if isinstance(value, bytes) else str(value)


def drained(client: redis.Redis, config: PlatformSourceConfig, upto: str) -> bool:
    """True once every entry of the source stream with id <= ``upto`` is delivered and acked."""
    if parse_entry_id(upto) == (0, 0):
        return True
    groups: list[dict[Any, Any]] = client.xinfo_groups(config.stream_key)
    group = next((g for g in groups if _text(g.get("name")) == config.consumer_group), None)
    if group is None:
        return False
    delivered = parse_entry_id(_text(group.get("last-delivered-id")) or "0-0")
    if delivered < parse_entry_id(upto):
        return False
    if int(group.get("pending", 0)) == 0:
        return True
    still_pending = client.xpending_range(
        config.stream_key, config.consumer_group, min="-", max=upto, count=1
    )
    return not still_pending


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")
