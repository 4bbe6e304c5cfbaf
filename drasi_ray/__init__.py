"""drasi_ray: Drasi-style continuous queries over Redis Streams change feeds, on Ray.

The public API::

    from drasi_ray import DrasiRay, PlatformSource, PlatformSourceConfig, Query

Heavy optional parts (Spark analytics through RayDP) are imported lazily where used.
"""

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
    "SystemClock",
    "UnknownComponentError",
    "UnsupportedQueryError",
]
