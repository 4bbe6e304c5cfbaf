"""Changing the number of consumer actors of a running source (the store shards' count changes
through :meth:`DrasiRay.scale_shards`; this module finds their actors too).

Scaling up starts consumers ``<base>-<len>`` .. ``<base>-<n-1>`` (named actors
``drasi/<source>/consumer-<i>``) and waits until they read. Scaling down removes the highest
indices: each removed consumer is stopped gracefully (``stop()`` finishes and acks the batch in
hand), its actor is killed, whatever is still pending on its name is moved to consumer 0 with
``XCLAIM ... IDLE <claim_idle_ms> JUSTID`` (idle enough for the next reclaim tick of any live
consumer to take it, delivery count unchanged) and only then is the name deleted with
``XGROUP DELCONSUMER`` (deleting a consumer with pending entries would strand them).

Works from the driver that started the app (:meth:`DrasiRay.scale`) and from another process
connected to the same Ray cluster (``drasi-ray scale``): actors are found by name in the app's
namespace; those started from another process are detached, so they outlive it.
"""

from __future__ import annotations

import logging
from typing import Any

import ray
import redis

from drasi_ray.actors import names
from drasi_ray.actors.consumer import ConsumerActor
from drasi_ray.actors.fused import fused_consumers
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import ConfigError

logger = logging.getLogger("drasi_ray.scaling")

STOP_TIMEOUT_S = 30.0
READY_TIMEOUT_S = 60.0
PENDING_PAGE = 1000


def find_consumers(namespace: str, source_id: str, start: int = 0) -> list[Any]:
    """Handles of the source's consumer actors with index >= ``start``, up to the first gap
    (consumer 0 may be a part of the fused actor: :class:`~drasi_ray.actors.fused.
    FusedConsumer`)."""
    found: list[Any] = []
    index = start
    if start == 0 and not _named(names.consumer_actor(source_id, 0), namespace):
        coordinator = find_coordinator(namespace)
        fused = None if coordinator is None else fused_consumers(coordinator).get(source_id)
        if fused is None:
            return found
        found.append(fused)
        index = 1
    while True:
        try:
            found.append(ray.get_actor(names.consumer_actor(source_id, index), namespace=namespace))
        except ValueError:
            return found
        index += 1


def _named(name: str, namespace: str) -> bool:
    try:
        ray.get_actor(name, namespace=namespace)
    except ValueError:
        return False
    return True


def find_shards(namespace: str, start: int = 1) -> list[Any]:
    """Handles of the store shard actors with index >= ``start`` (>= 1), up to the first gap."""
    found: list[Any] = []
    index = max(start, 1)
    while True:
        try:
            found.append(ray.get_actor(names.shard_actor(index), namespace=namespace))
        except ValueError:
            return found
        index += 1


def find_coordinator(namespace: str) -> Any:
    """The coordinator of the app running in ``namespace`` (None: none runs)."""
    try:
        return ray.get_actor(names.COORDINATOR, namespace=namespace)
    except ValueError:
        return None


def start_consumers(
    namespace: str,
    source_id: str,
    config: PlatformSourceConfig,
    indices: range,
    options: dict[str, Any],
) -> list[Any]:
    """Start consumer actors ``indices`` (extra Ray ``options``) and wait until they read."""
    consumer_names = config.consumer_names(source_id)
    actors = [
        ConsumerActor.options(  # type: ignore[attr-defined]
            name=names.consumer_actor(source_id, index),
            namespace=namespace,
            get_if_exists=True,
            max_restarts=-1,
            max_task_retries=-1,
            **options,
        ).remote(source_id, config, consumer_names[index], namespace)
        for index in indices
    ]
    ray.get([actor.ready.remote() for actor in actors], timeout=READY_TIMEOUT_S)
    return actors


def retire_consumers(
    source_id: str, config: PlatformSourceConfig, actors: list[Any], first_index: int
) -> int:
    """Stop ``actors`` (consumers ``first_index``..), hand their pending entries to consumer 0,
    delete their names from the group. Returns how many pending entries were moved."""
    if first_index < 1:
        raise ConfigError("a source keeps at least one consumer")
    try:
        ray.get([actor.stop.remote() for actor in actors], timeout=STOP_TIMEOUT_S)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
        logger.warning("source %s: a consumer did not stop cleanly: %s", source_id, exc)
    for actor in actors:
        ray.kill(actor, no_restart=True)
    widest = config.model_copy(update={"consumers": first_index + len(actors)})
    consumer_names = widest.consumer_names(source_id)
    with redis.Redis.from_url(config.redis_url) as client:
        return sum(
            hand_over(client, config, name, consumer_names[0])
            for name in consumer_names[first_index:]
        )


def hand_over(client: redis.Redis, config: PlatformSourceConfig, name: str, heir: str) -> int:
    """On every stream of the source, move ``name``'s pending entries to ``heir``, then delete
    ``name`` from the group. Returns how many entries moved, on all streams."""
    return sum(_hand_over(client, config, stream, name, heir) for stream in config.stream_keys)


def _hand_over(
    client: redis.Redis, config: PlatformSourceConfig, stream: str, name: str, heir: str
) -> int:
    group = config.consumer_group
    moved = 0
    while True:
        page: Any = client.xpending_range(
            stream, group, min="-", max="+", count=PENDING_PAGE, consumername=name
        )
        ids = [item["message_id"] for item in page]
        if not ids:
            break
        # JUSTID: the heir takes ownership without re-delivery (no delivery-count bump); IDLE
        # makes the entries look `claim_idle_ms` old so its next own-pending read serves them.
        client.xclaim(
            stream, group, heir, min_idle_time=0, message_ids=ids,
            idle=config.claim_idle_ms, justid=True,
        )  # fmt: skip
        moved += len(ids)
    client.xgroup_delconsumer(stream, group, name)
    if moved:
        logger.info(
            "consumer %s removed from %s; %d pending entries handed to %s",
            name,
            stream,
            moved,
            heir,
        )
    return moved
