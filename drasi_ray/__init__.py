"""drasi_ray: Drasi-style continuous queries over Redis Streams change feeds, on Ray.

The public API::

    from drasi_ray import DrasiRay, PlatformSource, PlatformSourceConfig, Query

Heavy optional parts (Spark analytics through RayDP) are imported lazily where used.

The names are imported on first use (PEP 562), so that a Ray worker importing one actor's
module does not import the whole package with it (every actor's process starts faster).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drasi_ray.actors.subscription import Subscription
    from drasi_ray.app import DrasiRay
    from drasi_ray.model.clock import ManualClock, SystemClock
    from drasi_ray.model.config import (
        AnalyticsConfig,
        AppConfig,
        CdcConfig,
        CdcOrdering,
        DispatchMode,
        Placement,
        PlatformSourceConfig,
        QueryConfig,
        RayConfig,
        ScalingConfig,
        SourceFormat,
        StateConfig,
    )
    from drasi_ray.model.errors import (
        ConfigError,
        DecodeError,
        DrasiRayError,
        NotRunningError,
        QueryError,
        QuerySyntaxError,
        StreamError,
        UnknownComponentError,
        UnsupportedQueryError,
    )
    from drasi_ray.model.reaction_specs import (
        CallbackReaction,
        JsonLinesReaction,
        LogReaction,
        PlatformReaction,
    )
    from drasi_ray.model.results import ControlResult, ControlSignal, QueryResult
    from drasi_ray.query.definition import Query
    from drasi_ray.source.platform import PlatformSource

__version__ = "0.1.0"

__all__ = [
    "AnalyticsConfig",
    "AppConfig",
    "CallbackReaction",
    "CdcConfig",
    "CdcOrdering",
    "ConfigError",
    "ControlResult",
    "ControlSignal",
    "DecodeError",
    "DispatchMode",
    "DrasiRay",
    "DrasiRayError",
    "JsonLinesReaction",
    "LogReaction",
    "ManualClock",
    "NotRunningError",
    "Placement",
    "PlatformReaction",
    "PlatformSource",
    "PlatformSourceConfig",
    "Query",
    "QueryConfig",
    "QueryError",
    "QueryResult",
    "QuerySyntaxError",
    "RayConfig",
    "ScalingConfig",
    "SourceFormat",
    "StateConfig",
    "StreamError",
    "Subscription",
    "SystemClock",
    "UnknownComponentError",
    "UnsupportedQueryError",
]

_HOME = {
    "AnalyticsConfig": "drasi_ray.model.config",
    "AppConfig": "drasi_ray.model.config",
    "CallbackReaction": "drasi_ray.model.reaction_specs",
    "CdcConfig": "drasi_ray.model.config",
    "CdcOrdering": "drasi_ray.model.config",
    "ConfigError": "drasi_ray.model.errors",
    "ControlResult": "drasi_ray.model.results",
    "ControlSignal": "drasi_ray.model.results",
    "DecodeError": "drasi_ray.model.errors",
    "DispatchMode": "drasi_ray.model.config",
    "DrasiRay": "drasi_ray.app",
    "DrasiRayError": "drasi_ray.model.errors",
    "JsonLinesReaction": "drasi_ray.model.reaction_specs",
    "LogReaction": "drasi_ray.model.reaction_specs",
    "ManualClock": "drasi_ray.model.clock",
    "NotRunningError": "drasi_ray.model.errors",
    "Placement": "drasi_ray.model.config",
    "PlatformReaction": "drasi_ray.model.reaction_specs",
    "PlatformSource": "drasi_ray.source.platform",
    "PlatformSourceConfig": "drasi_ray.model.config",
    "Query": "drasi_ray.query.definition",
    "QueryConfig": "drasi_ray.model.config",
    "QueryError": "drasi_ray.model.errors",
    "QueryResult": "drasi_ray.model.results",
    "QuerySyntaxError": "drasi_ray.model.errors",
    "RayConfig": "drasi_ray.model.config",
    "ScalingConfig": "drasi_ray.model.config",
    "SourceFormat": "drasi_ray.model.config",
    "StateConfig": "drasi_ray.model.config",
    "StreamError": "drasi_ray.model.errors",
    "Subscription": "drasi_ray.actors.subscription",
    "SystemClock": "drasi_ray.model.clock",
    "UnknownComponentError": "drasi_ray.model.errors",
    "UnsupportedQueryError": "drasi_ray.model.errors",
}
"""Where each public name is defined."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'drasi_ray' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
