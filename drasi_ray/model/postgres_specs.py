"""The settings of a PostgreSQL source (``kind: PostgreSQL``), validated.

The database side mirrors Drasi's PostgreSQL source (``PostgresSourceConfig``: host, port,
database, user, password, tables, slot name, publication name, SSL mode, table keys), with two
differences a reader of Drasi's docs should know:

- **no password in the configuration.** ``password_env`` names an environment variable and
  ``password_file`` a file holding it; the reader reads it when it connects, in its own
  process, and never stores, logs or prints it. Neither: libpq's own ways (``PGPASSWORD``,
  ``~/.pgpass``) or a server that asks for none.
- **relations** (beyond Drasi): a relation per row from the columns of a foreign key to the
  row they reference, so a query can match ``(o:orders)-[:PLACED_BY]->(c:customers)``
  without a synthetic join.

The Redis side says where the reader writes the changes (``redis_url``, ``stream_key``) and how
the source's consumers read them (``consumer``: any platform-source setting but the stream's
and the start position's; :func:`drasi_ray.model.config.postgres_consumer_config`).
Environment variables and files are read by the reader only, never here.
"""

from __future__ import annotations

import enum
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_SLOT_NAME = re.compile(r"^[a-z0-9_]{1,63}$")

CONSUMER_FIXED = frozenset({"redis_url", "stream_key", "stream_keys", "start_id", "format", "cdc"})
"""Platform-source settings a PostgreSQL source sets itself (not in its ``consumer`` map)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)


class SslMode(str, enum.Enum):
    """libpq's ``sslmode`` (Drasi's three, and libpq's other three)."""

    DISABLE = "disable"
    ALLOW = "allow"
    PREFER = "prefer"
    REQUIRE = "require"
    VERIFY_CA = "verify-ca"
    VERIFY_FULL = "verify-full"


class TableKey(_Model):
    """The columns that identify a table's rows (Drasi's ``TableKeyConfig``): they make the
    element id ``<table>:<value>[_<value>...]`` and override the primary key."""

    table: str = Field(min_length=1, description="the table, `name` or `schema.name`")
    key_columns: tuple[str, ...] = Field(
        min_length=1, description="the key's columns, in the order the id joins them"
    )


class RelationSpec(_Model):
    """A relation per row of ``table`` to the row of ``references`` its ``columns`` point to
    (a foreign key): id ``<label>:<row's element id>``, from the row's node to the referenced
    row's node, no properties. A row whose columns hold a null has none."""

    label: str = Field(min_length=1, description="the relation's label")
    table: str = Field(min_length=1, description="the referencing table (the relation's start)")
    columns: tuple[str, ...] = Field(
        min_length=1,
        description="its columns that hold the referenced row's key, in the key's order",
    )
    references: str = Field(
        min_length=1, description="the referenced table (the relation's end), one of `tables`"
    )


class PostgresSourceConfig(_Model):
    """Settings of a PostgreSQL source: the database it replicates and the Redis stream its
    reader writes (docs/sources.md, "PostgreSQL")."""

    host: str = Field("localhost", min_length=1, description="the server's host name or address")
    port: int = Field(5432, ge=1, le=65535, description="the server's port")
    database: str = Field(min_length=1, description="the database to replicate")
    user: str = Field(min_length=1, description="a role with REPLICATION and SELECT on the tables")
    password_env: str | None = Field(
        None,
        min_length=1,
        description="the environment variable holding the password (read by the reader "
        "process, never stored)",
    )
    password_file: str | None = Field(
        None,
        min_length=1,
        description="a file holding the password (first line; read by the reader process, "
        "never stored)",
    )
    tables: tuple[str, ...] = Field(
        (),
        description="tables to replicate (`name` for the public schema, else `schema.name`); "
        "empty: every table of the publication",
    )
    slot_name: str = Field(
        "drasi_slot",
        description="the logical replication slot (created with a snapshot if missing; one "
        "per app and source)",
    )
    publication_name: str = Field(
        "drasi_publication", min_length=1, description="the publication to read (must exist)"
    )
    ssl_mode: SslMode = Field(SslMode.PREFER, description="libpq sslmode")
    table_keys: tuple[TableKey, ...] = Field(
        (), description="key columns per table, overriding the primary key"
    )
    relations: tuple[RelationSpec, ...] = Field(
        (), description="relations made from foreign-key columns (beyond Drasi)"
    )
    connect_timeout_s: int = Field(
        10, ge=1, le=600, description="how long a connection attempt may take"
    )
    start_timeout_s: float = Field(
        600.0,
        gt=0,
        description="how long start() waits for the reader to stream (its first snapshot included)",
    )
    redis_url: str = Field(
        description="redis://, rediss:// or unix:// URL of the Redis the changes go to"
    )
    stream_key: str | None = Field(
        None,
        min_length=1,
        description="the stream the reader writes (only it may); default "
        "'drasi:<app>:postgres:<source id>'",
    )
    max_changes_per_entry: int = Field(
        1000,
        ge=1,
        le=100_000,
        description="a transaction (or the snapshot) is written as entries of at most this "
        "many changes, consecutive on the stream",
    )
    consumer: dict[str, Any] = Field(
        default_factory=dict,
        description="settings of the consumers that read the stream: any platform-source "
        "setting (`consumers`, `batch_size`, `trim_acked`, ...) but redis_url, stream_key(s), "
        "start_id, format and cdc",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_password(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and "password" in raw:
            raise ValueError(
                "a password is never written in the configuration: name the environment "
                "variable holding it (password_env) or a file (password_file)"
            )
        return raw

    @field_validator("redis_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @field_validator("slot_name")
    @classmethod
    def _check_slot(cls, value: str) -> str:
        if not _SLOT_NAME.match(value):
            raise ValueError(
                "a replication slot name is 1 to 63 lower-case letters, digits or underscores"
            )
        return value

    @field_validator("consumer")
    @classmethod
    def _check_consumer(cls, value: dict[str, Any]) -> dict[str, Any]:
        fixed = sorted(CONSUMER_FIXED & set(value))
        if fixed:
            raise ValueError(
                f"{', '.join(fixed)}: set by the PostgreSQL source itself (redis_url and "
                "stream_key are its own settings; its consumers read the platform events its "
                "reader writes, from the stream's start)"
            )
        return value

    @model_validator(mode="after")
    def _check_password_source(self) -> PostgresSourceConfig:
        if self.password_env is not None and self.password_file is not None:
            raise ValueError("give password_env or password_file, not both")
        return self

    @model_validator(mode="after")
    def _check_tables(self) -> PostgresSourceConfig:
        named = {qualified_table(table) for table in self.tables}
        if len(named) != len(self.tables):
            raise ValueError("tables: each table once")
        for key in self.table_keys:
            if named and qualified_table(key.table) not in named:
                raise ValueError(f"table_keys: {key.table!r} is not one of the tables")
        for relation in self.relations:
            for table in (relation.table, relation.references):
                if named and qualified_table(table) not in named:
                    raise ValueError(f"relations: {table!r} is not one of the tables")
        return self

    def key_columns(self, table: str) -> tuple[str, ...] | None:
        """The configured key columns of ``table`` (any spelling), if any."""
        wanted = qualified_table(table)
        for key in self.table_keys:
            if qualified_table(key.table) == wanted:
                return key.key_columns
        return None


def qualified_table(table: str) -> tuple[str, str]:
    """``"orders"`` -> ``("public", "orders")``; ``"sales.orders"`` -> ``("sales", "orders")``.
    Names are taken as written (PostgreSQL folds unquoted names to lower case: write them as
    the catalog shows them)."""
    schema, dot, name = table.partition(".")
    return (schema, name) if dot else ("public", schema)


def table_label(schema: str, name: str) -> str:
    """The label (and id prefix) of a table's rows: its name, ``schema.name`` outside the
    public schema (as Drasi names them)."""
    return name if schema == "public" else f"{schema}.{name}"
