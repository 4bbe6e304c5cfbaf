"""drasi_ray: Drasi-style continuous queries over Redis Streams change feeds, on Ray.

The public API::

    from drasi_ray import DrasiRay, PlatformSource, PlatformSourceConfig, Query

Heavy optional parts (Spark analytics through RayDP) are imported lazily where used. The names
below are imported on first use too (PEP 562), so ``import drasi_ray.<module>`` (the
``drasi-ray`` command line) does not pay for Ray until it needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from drasi_ray import native

native.select()  # the compiled hot path, or its source if the build is stale (native.py)

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
        ComponentUnavailableError,
        ConfigError,
        DecodeError,
        DrasiRayError,
        NotRunningError,
        QueryError,
        QuerySyntaxError,
        StreamError,
        SubscriptionLostError,
        UnknownComponentError,
        UnsupportedQueryError,
    )
    from drasi_ray.model.query_specs import QueryLanguage
    from drasi_ray.model.reaction_specs import (
        CallbackReaction,
        HttpCall,
        HttpQueryCalls,
        HttpReaction,
        JsonLinesReaction,
        LogReaction,
        PlatformReaction,
        PostgresStoredProcReaction,
        SseReaction,
        StoredProcCommands,
    )
    from drasi_ray.model.results import ControlResult, ControlSignal, QueryResult
    from drasi_ray.query.definition import Query
    from drasi_ray.source.platform import PlatformSource

_HOMES = {
    "Subscription": "drasi_ray.actors.subscription",
    "DrasiRay": "drasi_ray.app",
    "ManualClock": "drasi_ray.model.clock",
    "SystemClock": "drasi_ray.model.clock",
    **{
        name: "drasi_ray.model.config"
        for name in (
            "AnalyticsConfig", "AppConfig", "CdcConfig", "CdcOrdering", "DispatchMode",
            "Placement", "PlatformSourceConfig", "QueryConfig", "RayConfig", "ScalingConfig",
            "SourceFormat", "StateConfig",
        )
    },
    **{
        name: "drasi_ray.model.errors"
        for name in (
            "ComponentUnavailableError", "ConfigError", "DecodeError", "DrasiRayError",
            "NotRunningError", "QueryError", "QuerySyntaxError", "StreamError",
            "SubscriptionLostError", "UnknownComponentError", "UnsupportedQueryError",
        )
    },
    **{
        name: "drasi_ray.model.reaction_specs"
        for name in (
            "CallbackReaction", "HttpCall", "HttpQueryCalls", "HttpReaction",
            "JsonLinesReaction", "LogReaction", "PlatformReaction", "PostgresStoredProcReaction",
            "SseReaction", "StoredProcCommands",
        )
    },
    **{
        name: "drasi_ray.model.results"
        for name in ("ControlResult", "ControlSignal", "QueryResult")
    },
    "QueryLanguage": "drasi_ray.model.query_specs",
    "Query": "drasi_ray.query.definition",
    "PlatformSource": "drasi_ray.source.platform",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'drasi_ray' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "AnalyticsConfig",
    "AppConfig",
    "CallbackReaction",
    "CdcConfig",
    "CdcOrdering",
    "ComponentUnavailableError",
    "ConfigError",
    "ControlResult",
    "ControlSignal",
    "DecodeError",
    "DispatchMode",
    "DrasiRay",
    "DrasiRayError",
    "HttpCall",
    "HttpQueryCalls",
    "HttpReaction",
    "JsonLinesReaction",
    "LogReaction",
    "ManualClock",
    "NotRunningError",
    "Placement",
    "PlatformReaction",
    "PlatformSource",
    "PlatformSourceConfig",
    "PostgresStoredProcReaction",
    "Query",
    "QueryConfig",
    "QueryError",
    "QueryLanguage",
    "QueryResult",
    "QuerySyntaxError",
    "RayConfig",
    "ScalingConfig",
    "SourceFormat",
    "SseReaction",
    "StateConfig",
    "StoredProcCommands",
    "StreamError",
    "Subscription",
    "SubscriptionLostError",
    "SystemClock",
    "UnknownComponentError",
    "UnsupportedQueryError",
]
