"""Stream administration: what ``XINFO`` says about a stream and its groups, read one way.

Every reader of a group's position, pending count, consumers or lag goes through here: the
parsers of the raw RESP2 replies (shared with the asyncio backend,
:class:`~drasi_ray.streams.backend.RedisStreamBackend`, which the consumers and their metrics
use) and the synchronous calls of the driver (``start()``, ``wait_until_idle()``) and the
command line (``status``, ``replay``).

The rules, once:

- a stream's last generated id is ``XINFO STREAM``'s ``last-generated-id``; a stream that does
  not exist has ``0-0`` (:func:`last_generated_id`);
- a group's lag is Redis's own ``lag`` (7.0+); else 0 when the group delivered up to the last
  generated id; else the entries after its last delivered id, counted with ``XRANGE`` up to a
  cap (Redis 6.2 has no ``lag``; :func:`known_lag` then :func:`lag`);
- "drained up to X": the group delivered every entry up to X and none of them is pending
  (:func:`stream_drained`); a source of several streams is drained when each of its streams is,
  each up to its own last id (:func:`drained`).

Synchronous clients must be plain redis-py clients speaking RESP2 (the defaults). Their
``XINFO`` replies come as dicts, the asyncio client's as flat lists: :func:`flat_info` reads
both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import redis

from drasi_ray.model.changes import parse_entry_id
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.streams.records import ConsumerInfo, GroupProgress

NO_ID = "0-0"


# -- parsing raw replies (shared with the asyncio backend) -------------------------------


def text(value: Any) -> str:
    """A reply value as text (bytes decoded)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def flat_info(raw: list[Any] | dict[Any, Any]) -> dict[str, Any]:
    """An ``XINFO`` record as ``{"name": v, ...}``: from the raw ``[b"name", v, ...]`` (the
    asyncio client) or from the dict redis-py's synchronous client already made of it."""
    if isinstance(raw, dict):
        return {text(key): value for key, value in raw.items()}
    it = iter(raw)
    return {text(key): value for key, value in zip(it, it, strict=False)}


def group_record(groups_reply: Iterable[Any] | None, group: str) -> dict[str, Any] | None:
    """``group``'s record in an ``XINFO GROUPS`` reply (None: no such group, or no stream)."""
    wanted = group.encode()
    for raw in groups_reply or ():
        info = flat_info(raw)
        if info["name"] == wanted:
            return info
    return None


def consumers_of(consumers_reply: Iterable[Any]) -> tuple[ConsumerInfo, ...]:
    """An ``XINFO CONSUMERS`` reply as records."""
    infos = (flat_info(raw) for raw in consumers_reply)
    return tuple(ConsumerInfo(text(i["name"]), int(i["pending"]), int(i["idle"])) for i in infos)


def progress_of(
    group: str, info: dict[str, Any], consumers: tuple[ConsumerInfo, ...] = ()
) -> GroupProgress:
    """A group's record (:func:`group_record`) and its consumers as a :class:`GroupProgress`."""
    entries_read = info.get("entries-read")
    lag = info.get("lag")
    return GroupProgress(
        group=group,
        last_delivered_id=text(info["last-delivered-id"]),
        pending=int(info["pending"]),
        consumers=consumers,
        entries_read=None if entries_read is None else int(entries_read),
        lag=None if lag is None else int(lag),
    )


def last_id_of(stream_reply: Any) -> str:
    """The ``last-generated-id`` of an ``XINFO STREAM`` reply (``0-0`` without a stream)."""
    return NO_ID if stream_reply is None else text(flat_info(stream_reply)["last-generated-id"])


def known_lag(progress: GroupProgress, last_id: str) -> int | None:
    """The group's lag when it is known without counting entries: Redis's own, or 0 when the
    group delivered up to ``last_id``. None: count the entries after its last delivered id."""
    if progress.lag is not None:
        return progress.lag
    if parse_entry_id(last_id) <= parse_entry_id(progress.last_delivered_id):
        return 0
    return None


def is_missing_key(exc: redis.ResponseError) -> bool:
    """Whether an ``XINFO`` error reply means the stream does not exist."""
    return "no such key" in str(exc)


# -- synchronous calls (the driver, the command line) -------------------------------------


def _execute(client: redis.Redis, *args: str) -> Any:
    """A command's raw reply (``execute_command`` is untyped in redis-py)."""
    execute: Callable[..., Any] = client.execute_command
    return execute(*args)


def _xinfo(client: redis.Redis, *args: str) -> Any | None:
    """``XINFO <args>``'s raw reply, or None if the stream does not exist."""
    try:
        return _execute(client, "XINFO", *args)
    except redis.ResponseError as exc:
        if is_missing_key(exc):
            return None
        raise


def last_generated_id(client: redis.Redis, stream: str) -> str:
    """The id of the last entry ever added to ``stream`` (``0-0`` if it has none)."""
    return last_id_of(_xinfo(client, "STREAM", stream))


def group_progress(
    client: redis.Redis, stream: str, group: str, *, consumers: bool = True
) -> GroupProgress | None:
    """Where ``group`` stands (None if it or the stream does not exist); ``consumers=False``
    skips ``XINFO CONSUMERS`` (the progress then lists none)."""
    info = group_record(_xinfo(client, "GROUPS", stream), group)
    if info is None:
        return None
    if not consumers:
        return progress_of(group, info)
    found = consumers_of(_execute(client, "XINFO", "CONSUMERS", stream, group))
    return progress_of(group, info, found)


def lag(client: redis.Redis, stream: str, progress: GroupProgress, cap: int) -> tuple[int, bool]:
    """(entries not yet delivered to the group, whether counting them hit ``cap``)."""
    known = known_lag(progress, last_generated_id(client, stream))
    if known is not None:
        return known, False
    after = "(" + progress.last_delivered_id
    entries: Any = client.xrange(stream, after, "+", count=cap)
    return len(entries), len(entries) >= cap


def ensure_group(client: redis.Redis, config: PlatformSourceConfig) -> bool:
    """Create the source's group (MKSTREAM) at ``start_id`` on every stream of the source;
    False if it already existed on all of them."""
    created = False
    for stream in config.stream_keys:
        try:
            client.xgroup_create(stream, config.consumer_group, id=config.start_id, mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        else:
            created = True
    return created


def last_generated_ids(client: redis.Redis, config: PlatformSourceConfig) -> dict[str, str]:
    """Per stream of the source, its last generated id (``0-0`` for a missing stream): the
    positions a barrier waits for (:func:`drained`)."""
    return {stream: last_generated_id(client, stream) for stream in config.stream_keys}


def drained(client: redis.Redis, config: PlatformSourceConfig, upto: Mapping[str, str]) -> bool:
    """True once, on every stream of ``upto`` (stream -> entry id), every entry with id <= its
    id is delivered to the source's group and acked."""
    return all(
        stream_drained(client, stream, config.consumer_group, last_id)
        for stream, last_id in upto.items()
    )


def undrained(
    client: redis.Redis, config: PlatformSourceConfig, upto: Mapping[str, str]
) -> list[str]:
    """The streams of ``upto`` not yet drained up to their id (:func:`drained`), in order."""
    return [
        stream
        for stream, last_id in upto.items()
        if not stream_drained(client, stream, config.consumer_group, last_id)
    ]


def stream_drained(client: redis.Redis, stream: str, group: str, upto: str) -> bool:
    """True once every entry of ``stream`` with id <= ``upto`` is delivered to ``group`` and
    acked."""
    if parse_entry_id(upto) == (0, 0):
        return True
    progress = group_progress(client, stream, group, consumers=False)
    if progress is None:
        return False
    if parse_entry_id(progress.last_delivered_id) < parse_entry_id(upto):
        return False
    if progress.pending == 0:
        return True
    still_pending = client.xpending_range(stream, group, min="-", max=upto, count=1)
    return not still_pending
