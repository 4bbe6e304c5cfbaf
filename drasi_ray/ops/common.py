"""What the subcommands share: loading the app file, finding sources, Redis clients."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

import redis

from drasi_ray.model import keys, resources
from drasi_ray.model.config import AppConfig, PostgresSourceSpec, QueryConfig, SourceSpec
from drasi_ray.model.errors import ConfigError, UnknownComponentError
from drasi_ray.model.reaction_specs import PlatformReaction
from drasi_ray.streams import connections


def subcommand(commands: Any, name: str, summary: str, text: str) -> argparse.ArgumentParser:
    """Register ``drasi-ray <name>``: ``summary`` in the command list, ``text`` (its help with
    examples, line breaks kept) in ``drasi-ray <name> --help``."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=text, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # also after the subcommand (`drasi-ray status app.yaml --debug`); SUPPRESS keeps the
    # value given before it
    parser.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    return parser


def add_app_arguments(
    parser: argparse.ArgumentParser, several: bool = False, app_id: bool = False
) -> None:
    """``APP_YAML`` (``several``: or Drasi resource files, one or more), ``--redis-url``
    (overrides every source's and the state's Redis) and, with ``app_id``, ``--app-id``."""
    if several:
        parser.add_argument(
            "config",
            metavar="FILE",
            nargs="+",
            help="the application file, or Drasi resource files (Source, ContinuousQuery, "
            "Reaction documents)",
        )
    else:
        parser.add_argument(
            "config", metavar="APP_YAML", help="the application file, or a Drasi resource file"
        )
    parser.add_argument(
        "--redis-url",
        metavar="URL",
        help="use this Redis for every source (and state), overriding the file",
    )
    if not app_id:
        return
    parser.add_argument(
        "--app-id",
        metavar="ID",
        help="the app's id (Ray namespace, Redis keys); default: the app file's id, or "
        "'default' for Drasi resource files",
    )


def load_app(
    path: str | Sequence[str], redis_url: str | None = None, app_id: str | None = None
) -> AppConfig:
    """Read the app file at ``path``, or Drasi resource files (their notices printed to
    stderr), ``${VAR}`` and ``${file:PATH}`` expanded from this process's environment and
    files; with ``redis_url``, point every source and the state at it."""
    paths = [path] if isinstance(path, str) else list(path)
    config, notices = resources.read_app(paths, app_id, redis_url, os.environ)
    for notice in notices:
        print(f"drasi-ray: {notice}", file=sys.stderr)
    return config if redis_url is None else with_redis_url(config, redis_url)


def with_redis_url(config: AppConfig, redis_url: str) -> AppConfig:
    """A copy of ``config`` whose sources, state and platform reactions all use ``redis_url``."""
    raw: dict[str, Any] = config.model_dump(mode="python")
    for source in raw["sources"]:
        source["properties"]["redis_url"] = redis_url
    if raw["state"].get("redis_url") is not None:
        raw["state"]["redis_url"] = redis_url
    for query in raw["queries"]:
        for reaction in query["reactions"]:
            if reaction["kind"] == "platform" and reaction.get("redis_url") is not None:
                reaction["redis_url"] = redis_url
    return AppConfig.from_mapping(raw, origin="--redis-url")


def source_spec(config: AppConfig, source_id: str) -> SourceSpec | PostgresSourceSpec:
    for spec in config.sources:
        if spec.id == source_id:
            return spec
    known = ", ".join(spec.id for spec in config.sources) or "none"
    raise UnknownComponentError(f"unknown source {source_id!r} (sources: {known})")


def client(url: str) -> redis.Redis:
    """A synchronous client returning bytes, with bounded timeouts (not checked: see
    :func:`connect`)."""
    return connections.client(url)


def redis_uses(config: AppConfig) -> dict[str, str]:
    """Every Redis the app uses (sources, state, platform reactions), each with what for."""
    uses: dict[str, str] = {}
    for spec in config.sources:
        uses.setdefault(spec.properties.redis_url, f"source {spec.id!r}")
    state = state_url(config)
    if state is not None:
        uses.setdefault(state, "state")
    for query in config.queries:
        location = result_location(config, query)
        if location is not None:
            uses.setdefault(location[0], f"results of {query.id!r}")
    return uses


def check_all(config: AppConfig) -> None:
    """Every Redis of the app answers within ``connect_timeout_s``, or one clear error."""
    for url, what in redis_uses(config).items():
        connections.check(url, what, config.connect_timeout_s)


def connect(config: AppConfig, url: str, what: str) -> redis.Redis:
    """A client of ``url`` once it answered a PING within the app's ``connect_timeout_s``;
    else one clear error naming ``what`` and the server (:func:`connections.check`)."""
    connections.check(url, what, config.connect_timeout_s)
    return connections.client(url)


def result_location(config: AppConfig, query: QueryConfig) -> tuple[str, str] | None:
    """(redis url, stream) of the query's platform reaction; None if it has none.

    Defaults as the app resolves them (:meth:`StateConfig.results_redis_url`).
    """
    reaction = next((r for r in query.reactions if isinstance(r, PlatformReaction)), None)
    if reaction is None:
        return None
    url = reaction.redis_url or config.state.results_redis_url(
        _source_url(config, query.sources[0])
    )
    if url is None:
        raise ConfigError(f"query {query.id!r}: no Redis for its platform reaction")
    return url, reaction.stream or keys.result_stream(query.id)


def result_stream(config: AppConfig, query: QueryConfig) -> tuple[str, str]:
    """(redis url, stream) of the query's results: its platform reaction's, else the one a
    reaction of the app gives it (the default platform reaction)."""
    location = result_location(config, query)
    if location is not None:
        return location
    with_stream = query.model_copy(update={"reactions": (*query.reactions, PlatformReaction())})
    found = result_location(config, with_stream)
    assert found is not None
    return found


def state_url(config: AppConfig) -> str | None:
    """The Redis holding the app's durable state (:meth:`StateConfig.state_redis_url`)."""
    first = config.sources[0].properties.redis_url if config.sources else None
    return config.state.state_redis_url(first)


def control_url(config: AppConfig) -> str | None:
    """The Redis the ``drasi-ray`` commands reach the running app on: ``state.redis_url``,
    else the first source's (:mod:`drasi_ray.ops.control`)."""
    if config.state.redis_url is not None:
        return config.state.redis_url
    return config.sources[0].properties.redis_url if config.sources else None


def _source_url(config: AppConfig, source_id: str) -> str | None:
    spec = next((s for s in config.sources if s.id == source_id), None)
    return None if spec is None else spec.properties.redis_url


def require_present(client: redis.Redis, key: str, ids: list[str]) -> None:
    """ConfigError naming the ``ids`` that are not in the dead-letter stream ``key``."""
    missing = [dlq_id for dlq_id in ids if not client.xrange(key, dlq_id, dlq_id)]
    if missing:
        raise ConfigError(f"no dead letter {', '.join(missing)} in {key} (see dlq list)")


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
