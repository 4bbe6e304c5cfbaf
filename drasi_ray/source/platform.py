"""``PlatformSource``: a Redis stream of Drasi platform change events, read by N consumers.

Configured like Drasi's platform source (seeds/000), with a builder or a config object::

    source = (
        PlatformSource.builder("sensors")
        .with_redis_url("redis://localhost:6379")
        .with_stream_key("sensor-changes")
        .with_consumers(3)
        .build()
    )
    source = PlatformSource("sensors", PlatformSourceConfig(redis_url=..., stream_key=...))

A source may read several streams, one per partition (``with_stream_keys([...])``, YAML
``stream_keys``); producers put each element's changes on one of them
(:func:`drasi_ray.model.partitions.stream_for`).

The entries may also be what a CDC tool writes to Redis: ``with_format("debezium")`` (Debezium
Server's Redis sink) or ``with_format("deltaforge")`` (DeltaForge's), with ``with_cdc(...)``
for labels and key columns (docs/sources.md)::

    source = (
        PlatformSource.builder("shop")
        .with_redis_url("redis://localhost:6379")
        .with_stream_keys(["db.public.customers", "db.public.orders"])
        .with_format("debezium")
        .with_cdc(labels={"customers": "Customer"}, keys={"orders": ["order_id", "line"]})
        .build()
    )
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from drasi_ray.model.config import (
    CdcOrdering,
    DispatchMode,
    PlatformSourceConfig,
    SourceFormat,
    SourceSpec,
    validated,
)
from drasi_ray.model.errors import ConfigError
from drasi_ray.source.definition import SourceBuilder, check_definition, dispatch_of


@dataclass(frozen=True, slots=True)
class PlatformSource:
    """A source definition; the app turns it into consumer actors when it starts."""

    id: str
    config: PlatformSourceConfig
    dispatch_mode: DispatchMode = DispatchMode.CHANNEL
    dispatch_buffer_capacity: int = 1000
    auto_start: bool = True

    def __post_init__(self) -> None:
        check_definition(self.id, self.dispatch_buffer_capacity)

    @staticmethod
    def builder(source_id: str) -> PlatformSourceBuilder:
        return PlatformSourceBuilder(source_id)

    @classmethod
    def from_spec(cls, spec: SourceSpec) -> PlatformSource:
        return cls(spec.id, spec.properties, **dispatch_of(spec))

    @property
    def consumer_names(self) -> list[str]:
        return self.config.consumer_names(self.id)


class PlatformSourceBuilder(SourceBuilder):
    """Fluent construction of a :class:`PlatformSource`; ``build()`` validates everything."""

    def with_stream_key(self, stream_key: str) -> PlatformSourceBuilder:
        """Read one stream (replaces any streams set before)."""
        return self.with_stream_keys([stream_key])

    def with_stream_keys(self, stream_keys: Sequence[str]) -> PlatformSourceBuilder:
        """Read these streams, one per partition, all on the server of the Redis URL
        (replaces any set before). ``build()`` refuses an empty list or a repeated key."""
        if isinstance(stream_keys, str):
            raise ConfigError("with_stream_keys takes a list of stream keys, not one string")
        return self._set("stream_keys", tuple(stream_keys))

    def with_consumer_group(self, group: str) -> PlatformSourceBuilder:
        return self._set("consumer_group", group)

    def with_consumer_name(self, name: str) -> PlatformSourceBuilder:
        return self._set("consumer_name", name)

    def with_consumers(self, count: int) -> PlatformSourceBuilder:
        return self._set("consumers", count)

    def with_batch_size(self, size: int) -> PlatformSourceBuilder:
        return self._set("batch_size", size)

    def with_block_ms(self, block_ms: int) -> PlatformSourceBuilder:
        return self._set("block_ms", block_ms)

    def with_claim_idle_ms(self, idle_ms: int) -> PlatformSourceBuilder:
        return self._set("claim_idle_ms", idle_ms)

    def with_reclaim_interval_ms(self, interval_ms: int) -> PlatformSourceBuilder:
        return self._set("reclaim_interval_ms", interval_ms)

    def with_start_id(self, start_id: str) -> PlatformSourceBuilder:
        return self._set("start_id", start_id)

    def with_dead_letter_stream(self, stream_key: str) -> PlatformSourceBuilder:
        return self._set("dead_letter_stream", stream_key)

    def with_dead_letter_maxlen(self, maxlen: int | None) -> PlatformSourceBuilder:
        return self._set("dead_letter_maxlen", maxlen)

    def with_max_deliveries(self, count: int) -> PlatformSourceBuilder:
        return self._set("max_deliveries", count)

    def with_max_payload_bytes(self, size: int) -> PlatformSourceBuilder:
        return self._set("max_payload_bytes", size)

    def with_max_batch_size(self, size: int | None) -> PlatformSourceBuilder:
        """Largest adaptive read while the stream has a backlog (None: ``max_in_flight // 2``)."""
        return self._set("max_batch_size", size)

    def with_max_in_flight(self, count: int) -> PlatformSourceBuilder:
        return self._set("max_in_flight", count)

    def with_recreate_start_id(self, start_id: str) -> PlatformSourceBuilder:
        return self._set("recreate_start_id", start_id)

    def with_trim_acked(
        self, enabled: bool = True, interval_ms: int = 5000
    ) -> PlatformSourceBuilder:
        self._set("trim_acked", enabled)
        return self._set("trim_interval_ms", interval_ms)

    def with_tombstone_ttl(
        self, ttl_ms: int | None, sweep_ms: int = 60_000
    ) -> PlatformSourceBuilder:
        """Forget a deleted element's tombstone once it is ``ttl_ms`` old and no older entry
        is pending or retained in the stream (``None``: keep tombstones forever)."""
        self._set("tombstone_ttl_ms", ttl_ms)
        return self._set("tombstone_sweep_ms", sweep_ms)

    def with_format(self, source_format: SourceFormat | str) -> PlatformSourceBuilder:
        """The envelope of the entries: ``platform`` (default), ``debezium`` (Debezium
        Server's Redis sink) or ``deltaforge`` (DeltaForge's Redis sink)."""
        return self._set("format", source_format)

    def with_cdc(
        self,
        *,
        labels: Mapping[str, str] | None = None,
        keys: Mapping[str, Sequence[str]] | None = None,
        ordering: CdcOrdering | str | None = None,
        null_value: str | None = None,
    ) -> PlatformSourceBuilder:
        """How a ``debezium`` or ``deltaforge`` source makes nodes of rows (:class:`CdcConfig`):
        ``labels`` table -> label, ``keys`` table (or ``"*"``) -> key columns, ``ordering``
        ``position`` (default) or ``stream``, ``null_value`` Debezium's null text. Only what
        is given is set; the rest keeps its default."""
        given = {"labels": labels, "keys": keys, "ordering": ordering, "null_value": null_value}
        if keys is not None:
            given["keys"] = {table: tuple(columns) for table, columns in keys.items()}
        cdc = dict(self._settings.get("cdc") or {})
        cdc.update({name: value for name, value in given.items() if value is not None})
        return self._set("cdc", cdc)

    def build(self) -> PlatformSource:
        config = validated(PlatformSourceConfig, **self._settings)
        return PlatformSource(self._id, config, **self._dispatch)
