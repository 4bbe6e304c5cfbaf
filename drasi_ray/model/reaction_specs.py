"""Reaction settings: where a query's results go, as small validated models.

A reaction spec is plain configuration (pydantic, unknown keys rejected); the query actor turns
it into a running :class:`~drasi_ray.reactions.base.Reaction` when it starts. In YAML each query
has a ``reactions:`` list whose items pick their kind with ``kind``::

    queries:
      - id: hot-sensors
        ...
        reactions:
          - kind: platform          # Drasi platform reaction: stream <queryId>-results
            maxlen: 100000
          - kind: jsonl
            path: /var/log/hot-sensors.jsonl
          - kind: log
          - kind: callback
            function: my_package.hooks:on_result

In Python, pass the same models to ``Query.cypher(id)...with_reaction(...)`` or
``DrasiRay.add_reaction(query_id, ...)``. A :class:`CallbackReaction` also takes a callable.

This module imports nothing from the rest of drasi_ray, so ``config`` can use it.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Callable
from typing import Annotated, Any, Literal

import cloudpickle
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

_PICKLED = "pickle:"
"""Starts a callable written to JSON: its cloudpickle follows in base64."""


class _ReactionSpec(BaseModel):
    """Options every reaction has: its delivery queue and retry policy."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    queue_capacity: int = Field(
        10_000, ge=1, description="results buffered for the reaction; beyond it they are dropped"
    )
    max_batch: int = Field(500, ge=1, description="results handed to the reaction per write")
    retry_initial_ms: int = Field(100, ge=1, description="first retry delay after a failure")
    retry_max_ms: int = Field(10_000, ge=1, description="cap of the exponential retry delay")
    include_control: bool = Field(
        True, description="also deliver control signals (bootstrapStarted, running, stopped...)"
    )
    name: str | None = Field(
        None,
        min_length=1,
        description="the Reaction resource of a Drasi file it belongs to (one per query the "
        "resource names), which `drasi-ray delete reaction NAME` removes; none: the query's own",
    )


class PlatformReaction(_ReactionSpec):
    """Drasi's platform reaction: CloudEvents on the Redis stream ``<queryId>-results``.

    Field ``data`` of each entry holds one CloudEvent exactly as Drasi writes it
    (docs/semantics.md §4). ``redis_url`` defaults to the state Redis (else the query's first
    source's); ``stream`` to ``<queryId>-results``. ``maxlen`` trims with ``MAXLEN ~``.
    """

    kind: Literal["platform"] = Field("platform", description="picks this reaction")
    redis_url: str | None = Field(None, description="default: the app's state / source Redis")
    stream: str | None = Field(None, min_length=1, description="default: '<queryId>-results'")
    maxlen: int | None = Field(None, ge=1, description="approximate MAXLEN; None: unbounded")

    @field_validator("redis_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value


class JsonLinesReaction(_ReactionSpec):
    """Appends one JSON object per result (or control signal) to a file, one per line.

    Lines are ``{"kind": "change", "queryId", "sequence", "timestampMs", "sourceTimeMs",
    "results": [diff, ...]}`` or ``{"kind": "control", "queryId", "sequence", "signal"}``.
    The path is on the node where the query actor runs.
    """

    kind: Literal["jsonl"] = Field("jsonl", description="picks this reaction")
    path: str = Field(min_length=1, description="file to append to (created if missing)")


class LogReaction(_ReactionSpec):
    """Logs each result through the ``drasi_ray.reaction`` logger (in the query actor's log)."""

    kind: Literal["log"] = Field("log", description="picks this reaction")
    level: Literal["debug", "info", "warning"] = Field("info", description="log level")


class CallbackReaction(_ReactionSpec):
    """Calls ``function(result)`` for every result, inside the query actor's process.

    ``function`` is a callable or, in YAML, ``"package.module:attribute"``. It is shipped to
    the query's host and kept in the control plane's durable state with the query's settings,
    so it must pickle with cloudpickle (as Ray ships functions: lambdas and closures work, but
    not ones that capture locks, open files or clients); in JSON a callable is written as
    ``"pickle:"`` and its cloudpickle in base64. It
    runs on the actor's event loop: a slow function delays only this reaction's queue, but
    should not block for long; an ``async def`` function is awaited. Control signals reach it
    only with ``include_control: true`` (the default here is false).
    """

    kind: Literal["callback"] = Field("callback", description="picks this reaction")
    function: Callable[..., Any] | str = Field(
        description="a callable, or 'package.module:attribute' (YAML)"
    )
    include_control: bool = Field(False, description="also call it with control signals")

    @field_validator("function")
    @classmethod
    def _check_function(cls, value: Callable[..., Any] | str) -> Callable[..., Any] | str:
        if isinstance(value, str) and value.startswith(_PICKLED):
            function: Callable[..., Any] = cloudpickle.loads(
                base64.b64decode(value.removeprefix(_PICKLED))
            )
            return function
        if isinstance(value, str):
            module, _, attribute = value.partition(":")
            if not module or not attribute:
                raise ValueError("must be 'package.module:attribute'")
        return value

    @field_serializer("function", when_used="json")
    def _write_function(self, value: Callable[..., Any] | str) -> str:
        if isinstance(value, str):
            return value
        return _PICKLED + base64.b64encode(cloudpickle.dumps(value)).decode("ascii")

    def resolve(self) -> Callable[..., Any]:
        """The callable (imports ``module:attribute`` strings)."""
        if not isinstance(self.function, str):
            return self.function
        module, _, attribute = self.function.partition(":")
        target: Any = importlib.import_module(module)
        for part in attribute.split("."):
            target = getattr(target, part)
        if not callable(target):
            raise TypeError(f"{self.function} is not callable")
        return target  # type: ignore[no-any-return]


ReactionSpec = Annotated[
    PlatformReaction | JsonLinesReaction | LogReaction | CallbackReaction,
    Field(discriminator="kind"),
]
"""Any reaction's settings; YAML picks the model with ``kind``."""

AnyReaction = PlatformReaction | JsonLinesReaction | LogReaction | CallbackReaction
