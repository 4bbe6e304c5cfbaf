"""What every source definition and its builder have in common.

A source definition (:class:`~drasi_ray.source.platform.PlatformSource`,
:class:`~drasi_ray.source.postgres.definition.PostgresSource`) is an id, a config and how its
changes are dispatched (mode, buffer capacity, auto start); its builder collects settings by
name and validates them all in ``build()``. This module holds those shared parts once, so the
builders keep one behaviour for the methods they share.
"""

from __future__ import annotations

from typing import Any, Protocol, TypedDict, TypeVar

from drasi_ray.model.config import DispatchMode
from drasi_ray.model.errors import ConfigError

_Builder = TypeVar("_Builder", bound="SourceBuilder")


class Dispatch(TypedDict):
    """A source definition's dispatch fields, as keyword arguments."""

    dispatch_mode: DispatchMode
    dispatch_buffer_capacity: int
    auto_start: bool


class _Dispatched(Protocol):
    """A definition or a spec: anything carrying the dispatch fields."""

    @property
    def dispatch_mode(self) -> DispatchMode: ...
    @property
    def dispatch_buffer_capacity(self) -> int: ...
    @property
    def auto_start(self) -> bool: ...


def dispatch_of(source: _Dispatched) -> Dispatch:
    """``source``'s dispatch fields, to pass on to another definition."""
    return Dispatch(
        dispatch_mode=source.dispatch_mode,
        dispatch_buffer_capacity=source.dispatch_buffer_capacity,
        auto_start=source.auto_start,
    )


def check_definition(source_id: str, dispatch_buffer_capacity: int) -> None:
    """Raise :class:`ConfigError` for an empty id or a buffer of no capacity."""
    if not source_id:
        raise ConfigError("source id must not be empty")
    if dispatch_buffer_capacity < 1:
        raise ConfigError("dispatch_buffer_capacity must be >= 1")


class SourceBuilder:
    """The methods every source builder has: settings by name, the Redis URL and dispatch."""

    def __init__(self, source_id: str) -> None:
        self._id = source_id
        self._settings: dict[str, Any] = {}
        self._dispatch = Dispatch(
            dispatch_mode=DispatchMode.CHANNEL, dispatch_buffer_capacity=1000, auto_start=True
        )

    def _set(self: _Builder, key: str, value: Any) -> _Builder:
        self._settings[key] = value
        return self

    def with_redis_url(self: _Builder, url: str) -> _Builder:
        return self._set("redis_url", url)

    def with_dispatch_mode(self: _Builder, mode: DispatchMode | str) -> _Builder:
        try:
            self._dispatch["dispatch_mode"] = DispatchMode(mode)
        except ValueError as exc:
            raise ConfigError(f"dispatch_mode: unknown mode {mode!r}") from exc
        return self

    def with_dispatch_buffer_capacity(self: _Builder, capacity: int) -> _Builder:
        self._dispatch["dispatch_buffer_capacity"] = capacity
        return self

    def with_auto_start(self: _Builder, auto_start: bool) -> _Builder:
        self._dispatch["auto_start"] = auto_start
        return self
