"""The app's side of its reactions that run as actors (HTTP, SSE): checking their settings
against the queries, starting, asking and stopping their actors (:mod:`.reaction`).

:class:`AppReactions` is what :class:`~drasi_ray.app.DrasiRay` keeps of them. A reaction is
checked when it is added (the queries it names exist; every template field is a column of its
query), its token is read when it starts (by the process starting the app: a missing variable
or an unreadable file is a one-line :class:`~drasi_ray.model.errors.ConfigError`), and so is
its listening address (a port in use is one too).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from drasi_ray.actors import names
from drasi_ray.actors.reaction import (
    RelayReactionActor,
    SseReactionActor,
    actor_options,
    relay_settings,
)
from drasi_ray.model.config import RayConfig
from drasi_ray.model.errors import ConfigError
from drasi_ray.model.reaction_specs import (
    AnyAppReaction,
    HttpReaction,
    PostgresStoredProcReaction,
    RelayedReaction,
    SseReaction,
)
from drasi_ray.reactions.http import Token, check_query, resolve_token
from drasi_ray.reactions.storedproc import check_commands, check_login, read_password

logger = logging.getLogger("drasi_ray.app")

STOP_TIMEOUT_S = 10.0


def named_queries(spec: AnyAppReaction) -> list[str]:
    """The query ids a reaction names (an SSE reaction naming none serves every query)."""
    return list(spec.queries or ())


def serves(spec: AnyAppReaction, query_id: str) -> bool:
    if isinstance(spec, SseReaction):
        return spec.serves(query_id)
    return query_id in spec.queries


class AppReactions:
    """The app's reactions that run as actors: their specs, actors and URLs."""

    def __init__(self, namespace: str, app_id: str, ray_config: RayConfig) -> None:
        self._namespace = namespace
        self._app_id = app_id
        self._ray = ray_config
        self.specs: dict[str, AnyAppReaction] = {}
        self.actors: dict[str, Any] = {}
        self.urls: dict[str, str] = {}
        self._tokens: dict[str, Token | None] = {}
        self._columns: dict[str, dict[str, tuple[str, ...]]] = {}

    def add(self, spec: AnyAppReaction, columns: Mapping[str, Sequence[str]]) -> None:
        """Check ``spec`` against the app's queries (``columns``: query id -> its result
        columns) and keep it. ConfigError, naming what is wrong, if it does not fit."""
        if spec.id in self.specs:
            raise ConfigError(f"reaction {spec.id!r} is already added")
        missing = [query_id for query_id in named_queries(spec) if query_id not in columns]
        if missing:
            raise ConfigError(f"reaction {spec.id!r} names unknown queries {missing}")
        if isinstance(spec, HttpReaction):
            for query_id in spec.queries:
                check_query(spec, query_id, columns[query_id])
        if isinstance(spec, PostgresStoredProcReaction):
            for query_id in spec.queries:
                check_commands(spec, query_id, columns[query_id])
        self._columns[spec.id] = {query: tuple(columns[query]) for query in named_queries(spec)}
        self.specs[spec.id] = spec

    def covers(self, query_id: str) -> bool:
        """True if a reaction reads ``query_id``'s result stream (it then needs one)."""
        return any(serves(spec, query_id) for spec in self.specs.values())

    def read_tokens(self) -> None:
        """Read every reaction's token or password now, and log in to every stored-procedure
        reaction's database once (ConfigError, one line, when one is missing or refused)."""
        for spec in self.specs.values():
            if isinstance(spec, HttpReaction):
                self._tokens[spec.id] = resolve_token(spec)
            elif isinstance(spec, PostgresStoredProcReaction):
                self._tokens[spec.id] = read_password(spec)
                check_login(spec, self._tokens[spec.id])

    def start(
        self,
        spec: AnyAppReaction,
        streams: Mapping[str, tuple[str | None, str]],
        placement: Mapping[str, Any],
    ) -> None:
        """Start ``spec``'s actor and return once it is ready (an HTTP reaction knows its
        position in each stream; an SSE one listens). ``streams``: query id -> (Redis URL,
        result stream) of every query it reads."""
        if spec.id in self.actors:
            return
        if isinstance(spec, SseReaction):
            self._start_sse(spec)
        else:
            self._start_relay(spec, streams, placement)

    def _start_relay(
        self,
        spec: RelayedReaction,
        streams: Mapping[str, tuple[str | None, str]],
        placement: Mapping[str, Any],
    ) -> None:
        urls = {url for url, _stream in streams.values()}
        if len(urls) != 1 or None in urls:
            raise ConfigError(
                f"reaction {spec.id!r}: the result streams of its queries must be on one Redis "
                "(set the queries' platform reaction redis_url, or state.redis_url)"
            )
        if spec.id not in self._tokens:
            self.read_tokens()
        secret = self._tokens[spec.id]
        settings = relay_settings(
            spec,
            self._app_id,
            str(urls.pop()),
            {query_id: stream for query_id, (_url, stream) in streams.items()},
        )
        name = names.reaction_actor(spec.id)
        options = actor_options(name, self._namespace, self._ray.actor_num_cpus, **placement)
        actor = RelayReactionActor.options(**options).remote(  # type: ignore[attr-defined]
            spec, settings, secret, self._columns[spec.id]
        )
        self.actors[spec.id] = actor
        if not ray.get(actor.ready.remote()):
            logger.warning("reaction %s: not ready yet (is Redis reachable?)", spec.id)

    def _start_sse(self, spec: SseReaction) -> None:
        here = ray.get_runtime_context().get_node_id()
        options = actor_options(
            names.reaction_actor(spec.id),
            self._namespace,
            self._ray.actor_num_cpus,
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True),
        )
        actor = SseReactionActor.options(**options).remote(spec, self._namespace)  # type: ignore[attr-defined]
        listening = ray.get(actor.ready.remote())
        if listening.url is None:
            ray.kill(actor)
            raise ConfigError(listening.error)
        self.actors[spec.id] = actor
        self.urls[spec.id] = listening.url
        logger.info("reaction %s: listening at %s", spec.id, listening.url)

    def refresh(self) -> None:
        """Have every SSE reaction serve the queries registered since it last looked."""
        actors = [self.actors[i] for i, s in self.specs.items() if isinstance(s, SseReaction)]
        ray.get([actor.refresh.remote() for actor in actors if actor is not None])

    def status(self) -> dict[str, dict[str, Any]]:
        reports: dict[str, dict[str, Any]] = {}
        for reaction_id, actor in self.actors.items():
            try:
                reports[reaction_id] = ray.get(actor.status.remote(), timeout=10).as_dict()
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
                reports[reaction_id] = {"state": "unavailable", "error": type(exc).__name__}
        return reports

    def flush(self, timeout_s: float) -> list[str]:
        """Wait until every reaction took in what its streams hold now; the ones behind."""
        ids = list(self.actors)
        done = ray.get([self.actors[i].flush.remote(timeout_s) for i in ids])
        return [reaction_id for reaction_id, ok in zip(ids, done, strict=True) if not ok]

    def remove(self, reaction_id: str) -> AnyAppReaction:
        """Forget a reaction, ending its actor (if it runs) once it delivered what its
        streams hold (a few seconds) and its name is free again; its spec. Its positions
        and dead letters stay in Redis (a reaction added again under its id goes on where it
        stopped)."""
        spec = self.specs.pop(reaction_id)
        self._columns.pop(reaction_id, None)
        self._tokens.pop(reaction_id, None)
        self.urls.pop(reaction_id, None)
        actor = self.actors.pop(reaction_id, None)
        if actor is not None:
            try:
                ray.get(actor.stop.remote(STOP_TIMEOUT_S / 2), timeout=STOP_TIMEOUT_S)
            except Exception as exc:  # it is ended whatever it does
                logger.debug("reaction %s did not stop cleanly: %s", reaction_id, exc)
            ray.kill(actor)
            _wait_released(self._namespace, names.reaction_actor(reaction_id))
        return spec

    def stop(self) -> None:
        """Let each reaction deliver what its streams hold (a few seconds), then end it."""
        actors = list(self.actors.values())
        try:
            ray.get(
                [actor.stop.remote(STOP_TIMEOUT_S / 2) for actor in actors], timeout=STOP_TIMEOUT_S
            )
        except Exception as exc:  # stopping goes on whatever one reaction does
            logger.debug("reactions did not stop cleanly: %s", exc)
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception as exc:
                logger.debug("ignored during stop: %s", exc)
        self.actors.clear()
        self.urls.clear()


def _wait_released(namespace: str, name: str) -> None:
    """Return once no live actor holds ``name`` (a killed actor releases it when Ray has it
    dead); TimeoutError after :data:`STOP_TIMEOUT_S`."""
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while True:
        try:
            ray.get_actor(name, namespace=namespace)
        except ValueError:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"actor {name!r} still alive {STOP_TIMEOUT_S:.0f}s after kill")
        time.sleep(0.05)
