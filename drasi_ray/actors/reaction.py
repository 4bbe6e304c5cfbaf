"""The app's reactions as actors of their own: ``drasi/reaction/<id>``.

A reaction that leaves the process (an HTTP endpoint, browsers on the SSE server) runs apart
from the queries: it follows their result streams from a position of its own, so a slow or
dead endpoint costs only itself. These are thin async actor shells (``max_restarts=-1``)
around the Ray-free logic: :class:`~drasi_ray.reactions.relay.StreamRelay` with an
:class:`~drasi_ray.reactions.http.HttpEndpoint` or a
:class:`~drasi_ray.reactions.storedproc.StoredProcEndpoint`, and
:class:`~drasi_ray.reactions.sse.SseServer`. A restarted HTTP or stored-procedure reaction
resumes at the position it recorded in Redis; a restarted SSE server takes fresh snapshots
from the query hosts and its clients reconnect.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ray

from drasi_ray.actors.names import COORDINATOR
from drasi_ray.actors.runtime import tune_gc
from drasi_ray.host.runner import grouping_keys, make_engine
from drasi_ray.model.backoff import Backoff
from drasi_ray.model.keys import result_stream
from drasi_ray.model.reaction_specs import (
    HttpReaction,
    PlatformReaction,
    RelayedReaction,
    SseReaction,
)
from drasi_ray.model.registrations import QueryRegistration
from drasi_ray.reactions.base import stop_task
from drasi_ray.reactions.http import HttpEndpoint, Token
from drasi_ray.reactions.relay import Endpoint, RelayReport, RelaySettings, StreamRelay
from drasi_ray.reactions.sse import SseReport, SseServer, WatchedQuery
from drasi_ray.reactions.storedproc import StoredProcEndpoint

logger = logging.getLogger("drasi_ray.reaction")


def relay_settings(
    spec: RelayedReaction, app_id: str, redis_url: str, streams: dict[str, str]
) -> RelaySettings:
    """The relay settings of an HTTP or stored-procedure reaction whose queries' result
    streams are ``streams`` (query id -> stream) on ``redis_url``."""
    return RelaySettings(
        reaction_id=spec.id,
        kind=spec.kind,
        app_id=app_id,
        redis_url=redis_url,
        streams=streams,
        max_attempts=spec.max_attempts,
        retry_initial_ms=spec.retry_initial_ms,
        retry_max_ms=spec.retry_max_ms,
        max_lag=spec.max_lag,
        dead_letter_maxlen=spec.dead_letter_maxlen,
    )


def endpoint(
    spec: RelayedReaction, secret: Token | None, columns: Mapping[str, Sequence[str]]
) -> Endpoint:
    """Where a reaction delivers: HTTP calls or procedure calls."""
    if isinstance(spec, HttpReaction):
        return HttpEndpoint(spec, secret)
    return StoredProcEndpoint(spec, secret, columns)


@ray.remote
class RelayReactionActor:
    """An HTTP or stored-procedure reaction: a :class:`StreamRelay` over the queries' result
    streams, delivering to its endpoint. ``secret``: the token or password, read when the
    app started; ``columns``: each query's result columns."""

    def __init__(
        self,
        spec: RelayedReaction,
        settings: RelaySettings,
        secret: Token | None,
        columns: Mapping[str, Sequence[str]],
    ) -> None:
        tune_gc()
        self._relay = StreamRelay(settings, endpoint(spec, secret, columns))
        self._relay.start()

    async def ready(self, timeout_s: float = 60.0) -> bool:
        """Return once every query's position is known (recorded at a first start)."""
        positions = self._relay.progress.values()
        deadline = asyncio.get_running_loop().time() + timeout_s
        while any(progress.position is None for progress in positions):
            if asyncio.get_running_loop().time() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def flush(self, timeout_s: float) -> bool:
        """Wait until what the result streams hold now is delivered or dead-lettered."""
        return await self._relay.flush(timeout_s)

    def status(self) -> RelayReport:
        return self._relay.report()

    async def stop(self, timeout_s: float = 5.0) -> bool:
        """Deliver what the streams hold (up to ``timeout_s``), then stop."""
        flushed = await self._relay.flush(timeout_s)
        await self._relay.stop()
        return flushed

    def pid(self) -> int:
        """The actor's process id (crash tests SIGKILL it)."""
        return os.getpid()


def actor_options(name: str, namespace: str, num_cpus: float, **placement: Any) -> dict[str, Any]:
    """The Ray options every reaction actor gets (named, restarted for ever)."""
    return {
        "name": name,
        "namespace": namespace,
        "get_if_exists": True,
        "max_restarts": -1,
        "max_task_retries": 0,
        "num_cpus": num_cpus,
        **placement,
    }


@dataclass(frozen=True, slots=True)
class Listening:
    """Where an SSE reaction listens (``url``), or why it cannot (``error``, one line)."""

    url: str | None
    error: str | None = None


def watched_query(registration: QueryRegistration) -> WatchedQuery | None:
    """What the SSE server needs of a registered query (None: it has no result stream)."""
    config = registration.config
    platform = next((r for r in config.reactions if isinstance(r, PlatformReaction)), None)
    if platform is None or platform.redis_url is None:
        return None
    engine = make_engine(config)
    keys = tuple(grouping_keys(engine))
    return WatchedQuery(
        query_id=config.id,
        stream=platform.stream or result_stream(config.id),
        redis_url=platform.redis_url,
        columns=tuple(engine.column_names),
        grouping_keys=keys,
        aggregating=len(keys) < len(engine.column_names),
        host=registration.host,
    )


@ray.remote
class SseReactionActor:
    """An SSE reaction: the :class:`SseServer` and the queries it learns from the control
    plane (so a restarted one serves them again without being told)."""

    def __init__(self, spec: SseReaction, namespace: str) -> None:
        tune_gc()
        self._spec = spec
        self._namespace = namespace
        self._server = SseServer(spec, self._snapshot)
        loop = asyncio.get_event_loop()
        self._started = loop.create_task(self._server.start())
        self._learning = loop.create_task(self._learn())

    async def _learn(self) -> None:
        """Once listening, learn the queries to serve (a restarted server too)."""
        try:
            await asyncio.shield(self._started)
        except OSError:
            return  # ready() reports it
        backoff = Backoff()
        while True:
            try:
                await self.refresh()
                return
            except Exception as exc:  # the control plane restarting: ask again
                logger.warning("sse %s: cannot learn its queries yet (%s)", self._spec.id, exc)
                await backoff.wait()

    async def _snapshot(self, query: WatchedQuery) -> tuple[list[dict[str, Any]], int]:
        host = ray.get_actor(query.host, namespace=self._namespace)
        rows, sequence = await host.snapshot.remote(query.query_id)
        return rows, sequence

    async def ready(self) -> Listening:
        """Where the server listens, once it does; or why it cannot."""
        try:
            return Listening(await asyncio.shield(self._started))
        except OSError as exc:
            where = f"{self._spec.host}:{self._spec.port}"
            if exc.errno == errno.EADDRINUSE:
                reason = "address already in use; set its port (0: any free port)"
            else:
                reason = (os.strerror(exc.errno) if exc.errno else str(exc)).lower()
            return Listening(
                None, f"reaction {self._spec.id!r}: cannot listen on {where}: {reason}"
            )

    async def refresh(self) -> int:
        """Serve every registered query it should and does not yet; how many it serves."""
        coordinator = ray.get_actor(COORDINATOR, namespace=self._namespace)
        for registration in await coordinator.registrations.remote():
            if self._spec.serves(registration.query_id):
                query = watched_query(registration)
                if query is not None:
                    self._server.watch(query)
        return len(self._server.channels)

    async def flush(self, timeout_s: float) -> bool:
        return await self._server.flush(timeout_s)

    def status(self) -> SseReport:
        return self._server.report()

    async def stop(self, timeout_s: float = 5.0) -> bool:
        await stop_task(self._learning)
        await self._server.stop()
        return True

    def pid(self) -> int:
        return os.getpid()
