"""How an app's actors start and stop: names, restarts, placement, CPUs, nice levels.

``DrasiRay`` (:mod:`drasi_ray.app`) decides what runs; these functions start each actor with
its stable name in the app's namespace (:mod:`drasi_ray.actors.names`), restarted by Ray
(``max_restarts=-1``), placed by the app's rule (:class:`~drasi_ray.actors.placement.Placer`,
in the order the app starts them: the coordinator, the other store shards, the query hosts,
each source's consumers), and :func:`stop_actors` ends them in the order that loses nothing.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import ray

from drasi_ray.actors import names, scaling
from drasi_ray.actors.consumer import ConsumerActor
from drasi_ray.actors.coordinator import CoordinatorActor
from drasi_ray.actors.fused import FusedActor, FusedConsumer, FusedSettings
from drasi_ray.actors.placement import Placer
from drasi_ray.actors.postgres import PostgresReaderActor
from drasi_ray.actors.query_host import QueryHostActor
from drasi_ray.actors.shard import ShardActor, ShardSettings
from drasi_ray.model.clock import ClockSetting
from drasi_ray.model.config import RayConfig
from drasi_ray.model.errors import DrasiRayError
from drasi_ray.source.platform import PlatformSource
from drasi_ray.source.postgres.definition import PostgresSource

logger = logging.getLogger("drasi_ray.app")

STOP_TIMEOUT_S = 30.0
"""How long stopping waits for each step (consumers, deliveries, hosts)."""
RELEASE_POLL_S = 0.01
"""How often :func:`stop_consumers` looks whether a killed actor's name is free."""


def start_store(
    namespace: str,
    settings: Callable[[int], ShardSettings],
    shards: int,
    ray_config: RayConfig,
    placer: Placer,
    fused: FusedSettings | None = None,
) -> tuple[Any, list[Any]]:
    """Start the coordinator (store shard 0) and store shards 1 .. ``shards``-1, each with
    ``settings(index)``; return (coordinator, other shards) at once, their processes starting
    and their records loading (:func:`wait_loaded`). With ``fused``, the coordinator is the
    fused actor (:mod:`drasi_ray.actors.fused`)."""
    options = {
        "name": names.COORDINATOR,
        "namespace": namespace,
        "get_if_exists": True,
        "max_restarts": -1,
        "num_cpus": ray_config.actor_num_cpus,
        **placer.next_options(names.COORDINATOR),
    }
    niceness = ray_config.actor_niceness
    coordinator: Any
    if fused is not None:
        coordinator = FusedActor.options(**options).remote(fused, niceness=niceness)
    else:
        coordinator = CoordinatorActor.options(**options).remote(settings(0), niceness=niceness)
    others = [start_shard(settings(index), ray_config, placer) for index in range(1, shards)]
    return coordinator, others


def wait_loaded(actors: Sequence[Any]) -> None:
    """Return once every one of ``actors`` (the coordinator, store shards) answers."""
    ray.get([actor.ping.remote() for actor in actors])


def start_shard(
    settings: ShardSettings, ray_config: RayConfig, placer: Placer, *, detached: bool = False
) -> Any:
    """Start store shard ``settings.index`` (>= 1); it loads its records in the background.
    ``detached`` when the caller does not own the app (``drasi-ray scale --shards``): Ray ends
    a named actor once no handle to it is left, and the caller's go when it returns (the app's
    stop finds such shards by name)."""
    name = names.shard_actor(settings.index)
    lifetime = {"lifetime": "detached"} if detached else {}
    return ShardActor.options(  # type: ignore[attr-defined]
        name=name,
        namespace=settings.namespace,
        get_if_exists=True,
        max_restarts=-1,
        num_cpus=ray_config.actor_num_cpus,
        **lifetime,
        **placer.next_options(name),
    ).remote(settings, niceness=ray_config.actor_niceness)


def start_host(
    namespace: str,
    name: str,
    app_id: str,
    state_url: str | None,
    clock: ClockSetting,
    ray_config: RayConfig,
    placer: Placer,
) -> Any:
    """Start the query host ``name`` (a restart re-hosts its queries: ``max_task_retries=0``,
    a call that met the old process is not made again on the new one)."""
    return QueryHostActor.options(  # type: ignore[attr-defined]
        name=name,
        namespace=namespace,
        get_if_exists=True,
        max_restarts=-1,
        max_task_retries=0,
        num_cpus=ray_config.actor_num_cpus,
        **placer.next_options(name),
    ).remote(
        name,
        namespace,
        app_id,
        state_url,
        direct_calls=ray_config.direct_calls,
        niceness=ray_config.actor_niceness,
        clock=clock,
    )


def create_consumers(
    namespace: str, source: PlatformSource, ray_config: RayConfig, placer: Placer, first: int = 0
) -> list[Any]:
    """Create ``source``'s consumer actors from index ``first`` (consumer 0 may run in the
    fused actor); their processes start, and each reads once told (:func:`start_consumers`)."""
    config = source.config
    return [
        ConsumerActor.options(  # type: ignore[attr-defined]
            name=names.consumer_actor(source.id, index),
            namespace=namespace,
            get_if_exists=True,
            max_restarts=-1,
            max_task_retries=-1,
            num_cpus=ray_config.actor_num_cpus,
            **placer.next_options(names.consumer_actor(source.id, index)),
        ).remote(source.id, config, consumer_name, namespace, niceness=ray_config.actor_niceness)
        for index, consumer_name in enumerate(source.consumer_names)
        if index >= first
    ]


def start_consumers(actors: Sequence[Any]) -> None:
    """Tell consumer actors to read; return once every one reads."""
    ray.get([actor.ready.remote() for actor in actors])


def start_reader(
    namespace: str,
    source: PostgresSource,
    group: str,
    app_id: str,
    ray_config: RayConfig,
    placer: Placer,
) -> Any:
    """Start a PostgreSQL source's reader and return it once it streams. Its startup error
    (credentials, a missing publication, a table without a key) is raised as it is: one
    message naming the database and the fix; the actor is then ended."""
    name = names.postgres_reader(source.id)
    actor = PostgresReaderActor.options(  # type: ignore[attr-defined]
        name=name,
        namespace=namespace,
        get_if_exists=True,
        max_restarts=-1,
        max_task_retries=0,
        max_concurrency=8,  # ready, sync, report and stop beside each other
        num_cpus=ray_config.actor_num_cpus,
        **placer.next_options(name),
    ).remote(
        source.id,
        source.config,
        source.stream_key(app_id),
        group,
        app_id,
        niceness=ray_config.actor_niceness,
    )
    try:
        ray.get(actor.ready.remote(source.config.start_timeout_s))
    except ray.exceptions.RayTaskError as exc:
        best_effort(lambda: ray.kill(actor, no_restart=True))
        cause = exc.cause
        raise cause if isinstance(cause, DrasiRayError) else exc from None
    return actor


def stop_actors(
    namespace: str,
    coordinator: Any,
    shards: Sequence[Any],
    hosts: Sequence[Any],
    consumers: dict[str, list[Any]],
    *,
    readers: Sequence[Any] = (),
    after_hosts: Callable[[], None] | None = None,
) -> None:
    """Stop an app's actors without losing what is in flight: the PostgreSQL readers first
    (nothing more is written), the consumers (their batches in hand finish and are acked),
    then every delivery is made, then the hosts signal ``stopped`` and flush their reactions
    (``after_hosts`` runs then: the app's reactions deliver what they flushed); then every
    actor is killed. Also those another process started (``drasi-ray scale``), found by
    name."""
    best_effort(lambda: ray.get([r.stop.remote() for r in readers], timeout=STOP_TIMEOUT_S))
    stream_consumers = [actor for actors in consumers.values() for actor in actors]
    for source_id, actors in consumers.items():
        stream_consumers += scaling.find_consumers(namespace, source_id, len(actors))
    best_effort(
        lambda: ray.get([a.stop.remote() for a in stream_consumers], timeout=STOP_TIMEOUT_S)
    )
    best_effort(lambda: ray.get(coordinator.flush_deliveries.remote(), timeout=STOP_TIMEOUT_S))
    best_effort(lambda: ray.get([h.stop.remote() for h in hosts], timeout=STOP_TIMEOUT_S))
    if after_hosts is not None:
        after_hosts()
    every_shard = [*shards, *scaling.find_shards(namespace, len(shards) + 1)]
    ended: list[Any] = []
    for actor in [*readers, *stream_consumers, *hosts, *every_shard, coordinator]:
        if isinstance(actor, FusedConsumer) or any(actor is done for done in ended):
            continue  # a part of the fused actor: it ends with the coordinator
        ended.append(actor)
        best_effort(functools.partial(ray.kill, actor))


def stop_consumers(namespace: str, source_id: str, actors: Sequence[Any]) -> None:
    """Stop one source's consumer actors (their batches in hand finish and are acked; also
    those another process started), kill them, and return once their names are free (the
    source may be added again); TimeoutError if one is still alive after
    :data:`STOP_TIMEOUT_S`. A :class:`FusedConsumer` among ``actors`` is left alone: the fused
    actor stops it (``remove_consumer``)."""
    found = scaling.find_consumers(namespace, source_id, len(actors))
    every = [actor for actor in [*actors, *found] if not isinstance(actor, FusedConsumer)]
    best_effort(lambda: ray.get([a.stop.remote() for a in every], timeout=STOP_TIMEOUT_S))
    for actor in every:
        best_effort(functools.partial(ray.kill, actor))
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for index in range(len(actors) + len(found)):
        name = names.consumer_actor(source_id, index)
        while _alive(namespace, name):
            if time.monotonic() > deadline:
                raise TimeoutError(f"actor {name!r} still alive {STOP_TIMEOUT_S:.0f}s after kill")
            time.sleep(RELEASE_POLL_S)


def _alive(namespace: str, name: str) -> bool:
    try:
        ray.get_actor(name, namespace=namespace)
    except ValueError:
        return False
    return True


def best_effort(action: Callable[[], object]) -> None:
    """Run ``action``; a failure is logged (stopping goes on whatever one actor does)."""
    try:
        action()
    except Exception as exc:
        logger.debug("ignored during stop: %s", exc)


def default_hosts(shared_queries: int) -> int:
    """One shared query host per CPU of the cluster, at most one per query (at least one)."""
    cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
    return max(1, min(cpus, shared_queries))
