"""``PostgresSource``: a PostgreSQL database's tables as a source, with a builder.

Configured like Drasi's PostgreSQL source (``kind: PostgreSQL``), plus where its changes go in
Redis::

    source = (
        PostgresSource.builder("shop")
        .with_host("db.example.com")
        .with_database("shop")
        .with_user("drasi")
        .with_password_env("SHOP_DB_PASSWORD")
        .with_tables(["customers", "orders"])
        .with_redis_url("redis://localhost:6379")
        .build()
    )

The app runs a reader actor that writes the tables' changes to the source's stream and the
source's consumers, which read it as a platform source does (:meth:`PostgresSource.
platform_source`). There is no ``with_password``: a password is read by the reader, from an
environment variable or a file, and never held in a setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from drasi_ray.model.config import (
    DispatchMode,
    PostgresSourceSpec,
    postgres_consumer_config,
    validated,
)
from drasi_ray.model.errors import ConfigError
from drasi_ray.model.keys import postgres_stream
from drasi_ray.model.postgres_specs import PostgresSourceConfig, SslMode
from drasi_ray.source.definition import SourceBuilder, check_definition, dispatch_of
from drasi_ray.source.platform import PlatformSource


@dataclass(frozen=True, slots=True)
class PostgresSource:
    """A PostgreSQL source definition; the app starts its reader and consumers."""

    id: str
    config: PostgresSourceConfig
    dispatch_mode: DispatchMode = DispatchMode.CHANNEL
    dispatch_buffer_capacity: int = 1000
    auto_start: bool = True

    def __post_init__(self) -> None:
        check_definition(self.id, self.dispatch_buffer_capacity)
        postgres_consumer_config(self.config, "check")  # a wrong consumer setting, now

    @staticmethod
    def builder(source_id: str) -> PostgresSourceBuilder:
        return PostgresSourceBuilder(source_id)

    @classmethod
    def from_spec(cls, spec: PostgresSourceSpec) -> PostgresSource:
        return cls(spec.id, spec.properties, **dispatch_of(spec))

    def stream_key(self, app_id: str) -> str:
        """The stream its reader writes in app ``app_id``."""
        return self.config.stream_key or postgres_stream(app_id, self.id)

    def platform_source(self, app_id: str) -> PlatformSource:
        """The consumers' side: a platform source reading the reader's stream."""
        consumer_config = postgres_consumer_config(self.config, self.stream_key(app_id))
        return PlatformSource(self.id, consumer_config, **dispatch_of(self))


class PostgresSourceBuilder(SourceBuilder):
    """Fluent construction of a :class:`PostgresSource`; ``build()`` validates everything."""

    def __init__(self, source_id: str) -> None:
        super().__init__(source_id)
        self._table_keys: list[dict[str, Any]] = []
        self._relations: list[dict[str, Any]] = []
        self._consumer: dict[str, Any] = {}

    def with_host(self, host: str) -> PostgresSourceBuilder:
        return self._set("host", host)

    def with_port(self, port: int) -> PostgresSourceBuilder:
        return self._set("port", port)

    def with_database(self, database: str) -> PostgresSourceBuilder:
        return self._set("database", database)

    def with_user(self, user: str) -> PostgresSourceBuilder:
        return self._set("user", user)

    def with_password_env(self, variable: str) -> PostgresSourceBuilder:
        """The environment variable holding the password (read by the reader's process)."""
        return self._set("password_env", variable)

    def with_password_file(self, path: str) -> PostgresSourceBuilder:
        """A file whose first line is the password (read by the reader's process)."""
        return self._set("password_file", path)

    def with_tables(self, tables: Sequence[str]) -> PostgresSourceBuilder:
        """Replicate these tables (``name`` or ``schema.name``); none: the publication's."""
        if isinstance(tables, str):
            raise ConfigError("with_tables takes a list of tables, not one string")
        return self._set("tables", tuple(tables))

    def with_slot_name(self, slot_name: str) -> PostgresSourceBuilder:
        return self._set("slot_name", slot_name)

    def with_publication_name(self, publication_name: str) -> PostgresSourceBuilder:
        return self._set("publication_name", publication_name)

    def with_ssl_mode(self, mode: SslMode | str) -> PostgresSourceBuilder:
        return self._set("ssl_mode", mode)

    def with_table_key(self, table: str, key_columns: Sequence[str]) -> PostgresSourceBuilder:
        """The columns that identify ``table``'s rows (overrides its primary key)."""
        self._table_keys.append({"table": table, "key_columns": tuple(key_columns)})
        return self

    def with_relation(
        self, label: str, table: str, columns: Sequence[str], references: str
    ) -> PostgresSourceBuilder:
        """A relation ``label`` from each row of ``table`` to the row of ``references`` its
        ``columns`` hold the key of (a foreign key)."""
        self._relations.append(
            {"label": label, "table": table, "columns": tuple(columns), "references": references}
        )
        return self

    def with_connect_timeout_s(self, seconds: int) -> PostgresSourceBuilder:
        return self._set("connect_timeout_s", seconds)

    def with_start_timeout_s(self, seconds: float) -> PostgresSourceBuilder:
        return self._set("start_timeout_s", seconds)

    def with_stream_key(self, stream_key: str) -> PostgresSourceBuilder:
        return self._set("stream_key", stream_key)

    def with_max_changes_per_entry(self, count: int) -> PostgresSourceBuilder:
        return self._set("max_changes_per_entry", count)

    def with_consumers(self, count: int) -> PostgresSourceBuilder:
        """Consumer actors reading the source's stream."""
        self._consumer["consumers"] = count
        return self

    def with_consumer_settings(self, **settings: Any) -> PostgresSourceBuilder:
        """Any platform-source setting of the consumers (``batch_size=500``, ...)."""
        self._consumer.update(settings)
        return self

    def build(self) -> PostgresSource:
        config = validated(
            PostgresSourceConfig,
            **self._settings,
            table_keys=tuple(self._table_keys),
            relations=tuple(self._relations),
            consumer=dict(self._consumer),
        )
        return PostgresSource(self._id, config, **self._dispatch)
