"""The app's barriers: wait until what was published is applied, delivered and settled.

``DrasiRay.wait_until_idle`` (:mod:`drasi_ray.app`) is these steps, by one deadline:

0. :func:`sync_readers`: every PostgreSQL source's reader wrote what its database committed
   before the call;
1. :func:`drain_streams`: every entry appended to the sources' streams before the call is
   acked (a consumer acks a batch once every shard it touched applied it durably);
2. :func:`flush_deliveries`: the coordinator's delivery barrier (every delivery made, every
   query bootstrapped from its latest round), waiting for a coordinator that is restarting;
3. :func:`call_restartable` of ``settle`` on each query that schedules re-evaluations (what is
   due on its clock now runs);
4. with chained queries, :func:`flush_chain` of each upstream query, and again from 1, once
   per level of the chain.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ray
import redis

from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import ComponentUnavailableError, UnknownComponentError
from drasi_ray.streams import admin

IDLE_POLL_S = 0.01
RESTART_POLL_S = 0.05
"""First wait before calling again an actor that Ray is restarting (then doubling)."""


def sync_readers(readers: Mapping[str, Any], deadline: float, timeout: float) -> None:
    """Wait until every PostgreSQL reader (Ray handles by source id) wrote what its database
    committed before now. A reader Ray is restarting is asked again (its new instance catches
    up); its own failure to catch up is a TimeoutError with its reason."""
    for source_id, reader in readers.items():
        while True:
            remaining = max(deadline - time.monotonic(), 0.001)
            try:
                ray.get(reader.sync.remote(remaining), timeout=remaining + 5)
                break
            except ray.exceptions.RayTaskError as exc:
                raise TimeoutError(str(exc.cause)) from None
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"the reader of {source_id!r} did not catch up within {timeout:.1f}s"
                    ) from exc
                time.sleep(IDLE_POLL_S)


def drain_streams(
    sources: Sequence[tuple[redis.Redis, PlatformSourceConfig]], deadline: float, timeout: float
) -> None:
    """Return once every entry each source's streams held at the call is acked; TimeoutError
    at ``deadline`` naming the streams still behind."""
    targets = [
        (client, config, admin.last_generated_ids(client, config)) for client, config in sources
    ]
    for client, config, last_ids in targets:
        while behind := admin.undrained(client, config, last_ids):
            if time.monotonic() > deadline:
                where = ", ".join(f"{stream!r} up to {last_ids[stream]}" for stream in behind)
                raise TimeoutError(f"stream {where} not drained within {timeout:.1f}s")
            time.sleep(IDLE_POLL_S)


def flush_deliveries(coordinator: Any, deadline: float, timeout: float) -> None:
    """The coordinator's delivery barrier, by ``deadline``. A coordinator that is restarting
    (killed after it acked the last batch) is waited for: its recovery re-links every query
    and its barrier then covers the catch-up."""
    while True:
        remaining = max(deadline - time.monotonic(), 0.001)
        try:
            ray.get(coordinator.flush_deliveries.remote(), timeout=remaining)
            return
        except ray.exceptions.ActorUnavailableError as exc:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the coordinator did not come back within {timeout:.1f}s"
                ) from exc
            time.sleep(IDLE_POLL_S)
        except ray.exceptions.GetTimeoutError as exc:
            raise TimeoutError(
                f"results not delivered to the queries within {timeout:.1f}s"
            ) from exc


def flush_chain(
    host_of: Callable[[str], Any], query_id: str, deadline: float, timeout: float
) -> None:
    """Wait until ``query_id`` wrote its rows to its chain stream; a host that is restarting
    is waited for (it writes what it missed when it is bootstrapped again)."""
    while True:
        remaining = max(deadline - time.monotonic(), 0.001)
        try:
            host = host_of(query_id)
            if ray.get(host.flush_chain.remote(query_id, remaining)):
                return
        except ray.exceptions.ActorUnavailableError:
            if time.monotonic() > deadline:
                break
            time.sleep(IDLE_POLL_S)
            continue
        break
    raise TimeoutError(f"the chain stream of {query_id!r} not written within {timeout:.1f}s")


def call_restartable(
    targets: Sequence[tuple[Any, tuple[Any, ...]]], method: str, timeout: float
) -> None:
    """Call ``method`` on every (actor, arguments) and wait for all of them. A call that meets
    an actor Ray is restarting is made again (the methods used are idempotent: barriers, clock
    moves) until ``timeout``; raises TimeoutError then."""
    deadline = time.monotonic() + timeout
    backoff = RESTART_POLL_S
    pending = list(targets)
    while pending:
        calls = [(target, getattr(target[0], method).remote(*target[1])) for target in pending]
        pending = []
        for target, call in calls:
            try:
                ray.get(call, timeout=max(deadline - time.monotonic(), 0.001))
            except ray.exceptions.GetTimeoutError as exc:
                raise TimeoutError(f"{method} did not finish within {timeout:.1f}s") from exc
            except ray.exceptions.RayActorError:
                pending.append(target)  # restarting: ask the new instance
        if pending:
            if time.monotonic() + backoff > deadline:
                raise TimeoutError(f"actors did not come back for {method} within {timeout:.1f}s")
            time.sleep(backoff)
            backoff = min(backoff * 2, 1.0)


def read_restartable(call: Callable[[], Any], what: str, timeout: float) -> Any:
    """``ray.get(call())``, made again while the actor restarts (it answers Ray's
    RayActorError, or, a host not yet hosting its queries again, UnknownComponentError) until
    ``timeout``; then ComponentUnavailableError naming ``what``. For reads and idempotent calls
    only."""
    deadline = time.monotonic() + timeout
    pause = RESTART_POLL_S
    while True:
        try:
            return ray.get(call(), timeout=max(deadline - time.monotonic(), 0.001))
        except ray.exceptions.GetTimeoutError as exc:
            raise ComponentUnavailableError(f"{what} did not answer within {timeout:g}s") from exc
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as exc:
            restarting = isinstance(exc, ray.exceptions.RayActorError) or isinstance(
                getattr(exc, "cause", None), UnknownComponentError
            )
            if not restarting:
                raise
            if time.monotonic() + pause > deadline:
                raise ComponentUnavailableError(
                    f"{what} is unavailable (restarting, or gone) after {timeout:g}s: "
                    f"{type(exc).__name__}"
                ) from exc
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
