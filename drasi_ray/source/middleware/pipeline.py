"""A source subscription's middleware pipeline: each change through each middleware in turn.

:func:`build_pipeline` makes the middleware a pipeline names from the query's declarations
(:class:`~drasi_ray.model.query_specs.MiddlewareSpec`), validating each config by its kind:
a bad config is a :class:`~drasi_ray.model.errors.ConfigError` naming the middleware and the
field. :meth:`Pipeline.process` feeds every output of one middleware to the next, as Drasi's
``SourceMiddlewarePipeline`` does; a :class:`~drasi_ray.model.errors.MiddlewareError` from any
of them fails the whole change, naming the middleware.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from drasi_ray.model.errors import ConfigError, MiddlewareError
from drasi_ray.model.query_specs import MiddlewareSpec
from drasi_ray.source.middleware.base import Change, ElementLookup, Middleware
from drasi_ray.source.middleware.decoder import Decoder
from drasi_ray.source.middleware.jq import Jq
from drasi_ray.source.middleware.mapping import Map
from drasi_ray.source.middleware.parse_json import ParseJson
from drasi_ray.source.middleware.promote import Promote
from drasi_ray.source.middleware.relabel import Relabel
from drasi_ray.source.middleware.unwind import Unwind

_Factory = Callable[[str, Mapping[str, Any], str], Middleware]

FACTORIES: dict[str, _Factory] = {
    "decoder": lambda name, raw, _source: Decoder(name, raw),
    "jq": Jq,
    "map": lambda name, raw, source: Map(name, raw, source, "map"),
    "remap": lambda name, raw, source: Map(name, raw, source, "remap"),
    "parse_json": lambda name, raw, _source: ParseJson(name, raw),
    "promote": lambda name, raw, _source: Promote(name, raw),
    "relabel": lambda name, raw, _source: Relabel(name, raw),
    "unwind": Unwind,
}


class Pipeline:
    """The middleware of one source subscription, in order."""

    def __init__(self, stages: Sequence[tuple[MiddlewareSpec, Middleware]]) -> None:
        self._stages = tuple(stages)

    def __len__(self) -> int:
        return len(self._stages)

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        """The changes ``change`` becomes. Raises MiddlewareError naming the middleware."""
        changes = [change]
        for spec, middleware in self._stages:
            try:
                changes = [out for item in changes for out in middleware.process(item, index)]
            except MiddlewareError as exc:
                raise MiddlewareError(
                    f"middleware {spec.name!r} ({spec.kind}): {exc.reason}"
                ) from exc
        return changes


def build_pipeline(
    middleware: Sequence[MiddlewareSpec], names: Sequence[str], source_id: str
) -> Pipeline:
    """The pipeline of ``names`` on ``source_id``. Raises ConfigError for an undeclared name or
    an invalid config."""
    declared = {spec.name: spec for spec in middleware}
    stages: list[tuple[MiddlewareSpec, Middleware]] = []
    for name in names:
        spec = declared.get(name)
        if spec is None:
            raise ConfigError(
                f"pipeline of source {source_id!r} names undeclared middleware {name!r}"
            )
        stages.append((spec, FACTORIES[spec.kind](spec.name, spec.config, source_id)))
    return Pipeline(stages)


def check_middleware(
    middleware: Sequence[MiddlewareSpec], pipelines: Mapping[str, Sequence[str]]
) -> None:
    """Build every pipeline once, so a bad config is refused when the query is added."""
    for source_id, names in pipelines.items():
        build_pipeline(middleware, names, source_id)
