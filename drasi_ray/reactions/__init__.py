"""Reactions: where a query's results go (Drasi's platform stream, a file, the log, a callback).

Settings live in :mod:`.specs` (imported by ``drasi_ray.config``); the running side in
:mod:`.base` (protocol and worker), one module per reaction, and :mod:`.factory`.
"""

from drasi_ray.reactions.specs import (
    AnyReaction,
    CallbackReaction,
    JsonLinesReaction,
    LogReaction,
    PlatformReaction,
    ReactionSpec,
)

__all__ = [
    "AnyReaction",
    "CallbackReaction",
    "JsonLinesReaction",
    "LogReaction",
    "PlatformReaction",
    "ReactionSpec",
]
