"""Validated settings: small pydantic models, one documented default per field.

Unknown keys are errors (a typo in a setting must not be silently ignored). Environment
variables are read only at the entry points (``cli``), never here.

The platform source's options mirror Drasi's ``PlatformSourceConfig`` (seeds/000) and add what
scaling out with Ray needs: ``consumers``, ``claim_idle_ms``, ``reclaim_interval_ms``,
``start_id``, and several streams per source (``stream_keys``, one per partition).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from drasi_ray.model import keys, urls
from drasi_ray.model.errors import ConfigError
from drasi_ray.model.history import DEFAULT_MAX_VERSIONS, HistoryLimits
from drasi_ray.model.postgres_specs import PostgresSourceConfig
from drasi_ray.model.query_specs import (
    MiddlewareSpec,
    QueryJoin,
    QueryLanguage,
    SourceLabels,
    check_pipelines,
    split_subscriptions,
)
from drasi_ray.model.reaction_specs import AppReactionSpec, ReactionSpec

ENTRY_ID = re.compile(r"^\d+(-\d+)?$")


class DispatchMode(str, enum.Enum):
    """How results are handed to subscribers (Drasi's dispatch modes).

    CHANNEL: bounded buffer per subscriber; a full buffer blocks the query (backpressure,
    nothing lost). BROADCAST: never blocks; a full buffer drops its oldest result and counts it.
    """

    CHANNEL = "channel"
    BROADCAST = "broadcast"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)


class SourceFormat(str, enum.Enum):
    """The envelope of a source's stream entries (docs/sources.md, "CDC tools' formats").

    PLATFORM: Drasi's platform CloudEvents. DEBEZIUM: what Debezium Server's Redis sink writes.
    DELTAFORGE: what DeltaForge's Redis sink writes.
    """

    PLATFORM = "platform"
    DEBEZIUM = "debezium"
    DELTAFORGE = "deltaforge"


class CdcOrdering(str, enum.Enum):
    """What orders the changes of a CDC-format source (the element store's versions).

    POSITION: the change's position in the database's log (PostgreSQL LSN, MySQL binlog file,
    position and row), so a change the tool sent twice is applied once. STREAM: the stream entry
    id, as platform entries are ordered; a change sent twice is applied twice.
    """

    POSITION = "position"
    STREAM = "stream"


class CdcConfig(_Model):
    """How a source of format ``debezium`` or ``deltaforge`` turns rows into nodes: each row a
    node labelled by its table, with id ``<table>:<key>`` (key columns joined by ``_``) and its
    columns as properties."""

    labels: dict[str, str] = Field(
        default_factory=dict,
        description="table -> label of its rows (default: the table name); a key may be the "
        "table or '<schema or db>.<table>', the qualified name winning",
    )
    keys: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="table -> its key columns, in order (the element id); '*' for every table "
        "not named. Debezium: default the columns of the message key; DeltaForge: required",
    )
    ordering: CdcOrdering = Field(
        CdcOrdering.POSITION,
        description="position: changes ordered by their position in the database log, a "
        "re-sent change applied once (tombstones are then never forgotten); stream: by stream "
        "entry id",
    )
    null_value: str = Field(
        "default",
        description="the text Debezium's Redis sink writes for a null value (its "
        "'debezium.sink.redis.null.value'): such an entry is a tombstone and carries no change",
    )

    @field_validator("labels")
    @classmethod
    def _check_labels(cls, value: dict[str, str]) -> dict[str, str]:
        empty = sorted(table for table, label in value.items() if not label)
        if empty:
            raise ValueError(f"a label must not be empty (table {', '.join(empty)})")
        return value

    @field_validator("keys")
    @classmethod
    def _check_keys(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for table, columns in value.items():
            if not columns or any(not column for column in columns):
                raise ValueError(f"table {table!r} needs at least one key column, none empty")
        return value


FUSED_READ_LIMIT = 256
"""The largest read of the consumer in the fused actor unless ``max_batch_size`` says otherwise.

There one process decodes, stores and queries every batch and replies with its results: it
is bound by its own CPU and memory, not by calls between actors, and it drains a backlog
fastest with reads of a few hundred entries (docs/performance.md has the sweep). Two batches
of this size and what is made of them fit in a core's own cache, where batches of thousands
do not. Actors in separate processes keep the larger reads: there each batch is a call
between them.
"""


class PlatformSourceConfig(_Model):
    """Settings of a platform source: Redis streams read by a consumer group.

    A source reads one stream (``stream_key``, as Drasi) or several (``stream_keys``: one per
    partition, all on the server of ``redis_url``), so one stream is not the ceiling of a
    source. Both spellings are accepted on input and give ``stream_keys``; each consumer of the
    source is a named consumer of the group on every stream (docs/architecture.md).
    """

    redis_url: str = Field(
        description="redis://[user:password@]host:port[/db], rediss:// (TLS) or unix:// URL of "
        "the server holding the source's streams"
    )
    stream_keys: tuple[str, ...] = Field(
        min_length=1,
        description="the streams to consume, one per partition, all on the server of "
        "redis_url; 'stream_key: <name>' is the one-stream form. A producer sends every change "
        "of one element to the same stream (drasi_ray.model.partitions)",
    )
    consumer_group: str = Field(
        keys.DEFAULT_CONSUMER_GROUP,
        min_length=1,
        description="the consumer group the consumers share; unset, an app uses "
        "'drasi_ray.<app id>', so two apps on one stream each see every entry: name a group "
        "to share it (then the apps split the entries)",
    )

    def in_app(self, app_id: str) -> PlatformSourceConfig:
        """This config as app ``app_id`` runs it: an unset ``consumer_group`` becomes the
        app's own (:func:`~drasi_ray.model.keys.consumer_group`)."""
        if "consumer_group" in self.model_fields_set:
            return self
        return self.model_copy(update={"consumer_group": keys.consumer_group(app_id)})

    consumer_name: str | None = Field(
        None, description="base consumer name; default: the source id. Consumer i is '<name>-<i>'"
    )
    batch_size: int = Field(100, ge=1, le=100_000, description="XREADGROUP COUNT")
    block_ms: int = Field(5000, ge=1, le=600_000, description="XREADGROUP BLOCK in ms")
    consumers: int = Field(1, ge=1, le=1024, description="consumer actors in the group")
    claim_idle_ms: int = Field(
        30_000, ge=1, description="a peer's pending entry idle this long is reclaimed (XAUTOCLAIM)"
    )
    reclaim_interval_ms: int = Field(1000, ge=10, description="period of each reclaim timer")
    start_id: str = Field(
        "$",
        description="where a newly created group starts: '$' latest (Drasi), '0' earliest, or "
        "an entry id",
    )
    recreate_start_id: str = Field(
        "0",
        description="where a group that vanished (NOGROUP after a flush or restart) is "
        "recreated: '0' replays what the stream retains (safe: applying twice is a no-op), "
        "'$' skips to new entries, or an entry id",
    )
    dead_letter_stream: str | None = Field(
        None,
        description="stream for malformed entries of every stream of the source; default "
        "'<first stream key>:dlq'",
    )
    dead_letter_maxlen: int | None = Field(
        100_000, ge=1, description="approximate MAXLEN of the dead-letter stream; None: unbounded"
    )
    max_deliveries: int = Field(
        5, ge=1, description="an entry delivered more often than this is dead-lettered"
    )
    max_payload_bytes: int = Field(
        4 * 1024 * 1024, ge=1, description="larger entries are dead-lettered without parsing"
    )
    trim_acked: bool = Field(
        False,
        description="opt-in retention: periodically delete entries every group has acked "
        "(XTRIM MINID), so the stream does not grow forever (XACK deletes nothing)",
    )
    trim_interval_ms: int = Field(5000, ge=100, description="period of the retention trim")
    tombstone_ttl_ms: int | None = Field(
        3_600_000,
        ge=0,
        description="the element store forgets a deleted element's tombstone once it is this "
        "old and no older entry is pending or retained in the stream; None: keep them forever "
        "(the default of a CDC format ordered by position, which refuses any other value)",
    )
    tombstone_sweep_ms: int = Field(
        60_000, ge=10, description="period of each consumer's tombstone sweep"
    )
    max_in_flight: int = Field(
        4000, ge=1, description="bound on entries a consumer holds unacked (reclaimed included)"
    )
    max_batch_size: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="reads grow from batch_size while the stream has a backlog (doubling after "
        "every full read, back to batch_size after a partial one) up to this; default "
        "max_in_flight // 2, so the next read fits beside the batch in hand, and at most "
        f"{FUSED_READ_LIMIT} for the consumer in the fused actor",
    )
    format: SourceFormat = Field(
        SourceFormat.PLATFORM,
        description="the envelope of the entries: platform (Drasi's CloudEvents), debezium "
        "(Debezium Server's Redis sink) or deltaforge (DeltaForge's Redis sink)",
    )
    cdc: CdcConfig | None = Field(
        None,
        description="labels, key columns and ordering of a debezium or deltaforge source "
        "(default: every default of CdcConfig)",
    )

    def in_fused_actor(self) -> PlatformSourceConfig:
        """This config for the consumer that runs in the fused actor: an unset
        ``max_batch_size`` becomes at most :data:`FUSED_READ_LIMIT`."""
        if self.max_batch_size is not None:
            return self
        return self.model_copy(
            update={"max_batch_size": min(FUSED_READ_LIMIT, self.read_size_limit)}
        )

    @property
    def read_size_limit(self) -> int:
        """The largest read: ``max_batch_size`` (default ``max_in_flight // 2``), at least
        ``batch_size``."""
        limit = self.max_batch_size or self.max_in_flight // 2
        return max(self.batch_size, limit)

    @property
    def cdc_rules(self) -> CdcConfig:
        """The CDC settings in effect (defaults when ``cdc`` is not given)."""
        return self.cdc if self.cdc is not None else CdcConfig()

    @property
    def positional(self) -> bool:
        """Whether versions are database log positions, not stream positions (a CDC format
        ordered by position): then no stream position bounds them, and tombstones stay."""
        return self.format is not SourceFormat.PLATFORM and (
            self.cdc_rules.ordering is CdcOrdering.POSITION
        )

    @model_validator(mode="before")
    @classmethod
    def _tombstones_of_positional(cls, raw: Any) -> Any:
        """A source ordered by database log position keeps its tombstones: they are forgotten
        below a *stream* position, which says nothing about log positions (a change re-sent by
        the tool could resurrect a deleted row). Default off; asking for it is an error."""
        if not isinstance(raw, dict) or raw.get("format", "platform") == "platform":
            return raw  # (a str enum equals its value; an invalid one fails its field later)
        cdc = raw.get("cdc")
        ordering = cdc.get("ordering") if isinstance(cdc, dict) else getattr(cdc, "ordering", None)
        if ordering == "stream":
            return raw
        if raw.get("tombstone_ttl_ms") is not None:
            raise ValueError(
                "tombstone_ttl_ms must be null for a CDC format ordered by position (tombstones "
                "are forgotten below a stream position, not a database log position); set "
                "cdc.ordering: stream to forget them"
            )
        return {**raw, "tombstone_ttl_ms": None}

    @model_validator(mode="after")
    def _check_cdc(self) -> PlatformSourceConfig:
        if self.cdc is not None and self.format is SourceFormat.PLATFORM:
            raise ValueError("cdc settings apply to format debezium or deltaforge, not platform")
        return self

    @model_validator(mode="before")
    @classmethod
    def _one_or_several_streams(cls, raw: Any) -> Any:
        """``stream_key: s`` is ``stream_keys: [s]``; naming both is an error."""
        if not isinstance(raw, dict) or "stream_key" not in raw:
            return raw
        if "stream_keys" in raw:
            raise ValueError("give stream_key (one stream) or stream_keys (several), not both")
        one = dict(raw)
        stream = one.pop("stream_key")
        one["stream_keys"] = (stream,) if isinstance(stream, str) else stream
        return one

    @field_validator("stream_keys")
    @classmethod
    def _check_streams(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not stream for stream in value):
            raise ValueError("a stream key must not be empty")
        repeated = sorted({stream for stream in value if value.count(stream) > 1})
        if repeated:
            raise ValueError(f"stream keys must be distinct; repeated: {', '.join(repeated)}")
        return value

    @model_validator(mode="after")
    def _check_dead_letter_stream(self) -> PlatformSourceConfig:
        if self.dead_letter_key in self.stream_keys:
            raise ValueError(
                f"dead_letter_stream {self.dead_letter_key!r} is one of the source's streams"
            )
        return self

    @field_validator("redis_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @field_validator("start_id", "recreate_start_id")
    @classmethod
    def _check_start_id(cls, value: str) -> str:
        if value != "$" and not ENTRY_ID.match(value):
            raise ValueError("must be '$', '0' or a stream entry id like '1700000000000-0'")
        return value

    def __repr_args__(self) -> Any:
        """Never show the password in a repr (logs, Ray error messages, tracebacks)."""
        for name, value in super().__repr_args__():
            yield name, urls.redact_url(value) if name == "redis_url" else value

    @property
    def dead_letter_key(self) -> str:
        """The one dead-letter stream of the source (every dead letter names its stream)."""
        return self.dead_letter_stream or keys.dead_letter_stream(self.stream_keys[0])

    @property
    def streams_label(self) -> str:
        """The source's streams for messages: ``a`` or ``a, b, c``."""
        return ", ".join(self.stream_keys)

    def consumer_names(self, source_id: str) -> list[str]:
        """Stable Redis consumer names, the same after any restart."""
        base = self.consumer_name or source_id
        return [keys.consumer_name(base, index) for index in range(self.consumers)]


class SourceSpec(_Model):
    """A source entry of the YAML schema (Drasi's ``sources:`` list): a platform source, the
    default ``kind`` (a PostgreSQL source is a :class:`PostgresSourceSpec`)."""

    id: str = Field(min_length=1, description="the source id queries name")
    kind: Literal["platform"] = Field(
        "platform",
        description="`platform`: Drasi's platform source (Redis Streams); `PostgreSQL`: the "
        "PostgreSQL source (its own table below)",
    )
    source_type: Literal["platform"] = Field(
        "platform", description="Drasi's platform source (Redis Streams)"
    )
    auto_start: bool = Field(True, description="start the consumers with the app")
    dispatch_mode: DispatchMode = Field(
        DispatchMode.CHANNEL,
        description="default of subscriber buffers on this source's queries: channel blocks "
        "the query when full (nothing lost), broadcast drops the oldest result and counts it",
    )
    dispatch_buffer_capacity: int = Field(
        1000, ge=1, description="default size of each subscriber buffer, in results"
    )
    properties: PlatformSourceConfig = Field(description="the stream and its consumer group")

    def stream_settings(self, app_id: str) -> PlatformSourceConfig:
        """The streams the source's consumers read, and how (with app ``app_id``'s own
        consumer group unless the source names one)."""
        return self.properties.in_app(app_id)


class PostgresSourceSpec(_Model):
    """A ``kind: PostgreSQL`` entry of ``sources``: a reader turns the database's logical
    replication into changes on a Redis stream, which the source's consumers read
    (docs/sources.md, "PostgreSQL")."""

    id: str = Field(min_length=1, description="the source id queries name")
    kind: Literal["PostgreSQL"] = Field(description="`PostgreSQL` (Drasi's spelling)")
    auto_start: bool = Field(True, description="start the reader and the consumers with the app")
    dispatch_mode: DispatchMode = Field(
        DispatchMode.CHANNEL, description="as for a platform source"
    )
    dispatch_buffer_capacity: int = Field(1000, ge=1, description="as for a platform source")
    properties: PostgresSourceConfig = Field(description="the database and the stream")

    @model_validator(mode="after")
    def _check_consumer(self) -> PostgresSourceSpec:
        try:
            postgres_consumer_config(self.properties, "placeholder")
        except ConfigError as exc:
            raise ValueError(f"properties.{exc}") from exc
        return self

    def stream_key(self, app_id: str) -> str:
        """The stream the reader writes: ``stream_key``, else the app's default for it."""
        return self.properties.stream_key or keys.postgres_stream(app_id, self.id)

    def stream_settings(self, app_id: str) -> PlatformSourceConfig:
        """The stream the source's consumers read, and how (with app ``app_id``'s own
        consumer group unless ``consumer`` names one)."""
        return postgres_consumer_config(self.properties, self.stream_key(app_id)).in_app(app_id)


def postgres_consumer_config(
    settings: PostgresSourceConfig, stream_key: str
) -> PlatformSourceConfig:
    """How the consumers of a PostgreSQL source read its stream: the ``consumer`` settings,
    on ``stream_key`` at ``redis_url``, from the stream's start (``start_id: "0"``: everything
    on it was written by the source's own reader, the snapshot first). Raises ConfigError
    naming a wrong ``consumer`` setting."""
    values = {**settings.consumer, "redis_url": settings.redis_url, "stream_keys": (stream_key,)}
    values.setdefault("start_id", "0")
    try:
        return PlatformSourceConfig(**values)
    except ValidationError as exc:
        raise ConfigError(f"consumer: {format_validation_error(exc)}") from exc


SOURCE_KINDS = ("platform", "PostgreSQL")


def _source_kind(raw: Any) -> str | None:
    kind = raw.get("kind", "platform") if isinstance(raw, dict) else getattr(raw, "kind", None)
    return kind if kind in SOURCE_KINDS else None


AnySourceSpec = Annotated[
    Annotated[SourceSpec, Tag("platform")] | Annotated[PostgresSourceSpec, Tag("PostgreSQL")],
    Discriminator(
        _source_kind,
        custom_error_type="source_kind",
        custom_error_message="kind must be 'platform' (the default) or 'PostgreSQL'",
    ),
]
"""A ``sources`` entry: its ``kind`` picks the model."""


class HistoryConfig(_Model):
    """How much element history a query that calls Drasi's past functions
    (``drasi.getVersionByTimestamp``, ``drasi.getVersionsByTimeRange``) keeps per element
    (:mod:`drasi_ray.model.history`); other queries keep none."""

    max_versions: int = Field(
        DEFAULT_MAX_VERSIONS, ge=1, description="versions per element; the oldest go first"
    )
    retention_ms: int | None = Field(
        None,
        ge=0,
        description=(
            "also drop versions older than this before the element's newest one (the version "
            "in effect at that cutoff stays); null: keep by count only"
        ),
    )

    def limits(self) -> HistoryLimits:
        return HistoryLimits(self.max_versions, self.retention_ms)


class QueryConfig(_Model):
    """A continuous query: Cypher or GQL text over one or more sources."""

    id: str = Field(
        min_length=1,
        description="the query id (result stream '<id>-results', actor 'drasi/query/<id>')",
    )
    query: str = Field(
        min_length=1,
        description="the query text in query_language (docs/semantics.md §3), parsed when added",
    )
    sources: tuple[str, ...] = Field(min_length=1, description="ids of the sources it reads")
    query_language: QueryLanguage = Field(
        QueryLanguage.CYPHER,
        description="the language of query: cypher or gql (any case: Drasi's queryLanguage: GQL)",
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="values of the query's $name parameters"
    )
    auto_start: bool = Field(True, description="start the query actor with the app")
    reactions: tuple[ReactionSpec, ...] = Field(
        (), description="where results go besides subscriptions (drasi_ray.reactions)"
    )
    joins: tuple[QueryJoin, ...] = Field(
        (), description="synthetic relations between nodes with equal key values"
    )
    middleware: tuple[MiddlewareSpec, ...] = Field(
        (), description="middleware the source pipelines may name"
    )
    pipelines: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="per source id, the middleware names its changes pass through, in order "
        "(YAML: a sources entry {id, pipeline} as in Drasi)",
    )
    source_labels: dict[str, SourceLabels] = Field(
        default_factory=dict,
        description="per source id, the only node and relation labels the query takes from "
        "it (YAML: a sources entry {id, nodes, relations} as in Drasi); a source not named "
        "here: every label the query's patterns name",
    )
    dedicated_host: bool = Field(
        False,
        description="run the query on a query host actor of its own (a heavy query) instead of "
        "one the app's queries share; it stays isolated either way",
    )

    @model_validator(mode="before")
    @classmethod
    def _subscriptions(cls, raw: Any) -> Any:
        return split_subscriptions(raw) if isinstance(raw, dict) else raw

    @model_validator(mode="after")
    def _check_pipelines(self) -> QueryConfig:
        check_pipelines(self.sources, self.middleware, self.pipelines)
        strangers = sorted(set(self.source_labels) - set(self.sources))
        if strangers:
            raise ValueError(f"source_labels for {strangers}, not sources of the query")
        return self

    history: HistoryConfig = Field(
        default_factory=HistoryConfig,
        description="element history kept if the query calls Drasi's past functions",
    )


class Placement(str, enum.Enum):
    """How the pipeline's actors are placed on the nodes of a Ray cluster."""

    ROUND_ROBIN = "round_robin"
    SPREAD = "spread"
    PACK = "pack"


class Layout(str, enum.Enum):
    """Which processes run the pipeline (docs/architecture.md, "The fused layout")."""

    AUTO = "auto"
    FUSED = "fused"
    ACTORS = "actors"


class ScalingConfig(_Model):
    """How many actors share the pipeline's work (docs/architecture.md, "Scaling out")."""

    layout: Layout = Field(
        Layout.AUTO,
        description="fused: the coordinator, the one shared query host and consumer 0 of each "
        "source in ONE actor (no hop between them; needs shards 1, query_hosts 1 or null and "
        "durable state); actors: each in an actor of its own; auto: fused with the default "
        "scaling (shards 1, query_hosts null) and durable state, else actors",
    )

    shards: int = Field(
        1,
        ge=1,
        le=256,
        description="store shards: the element store and its versioning partitioned by element "
        "id over this many actors (shard 0 is the coordinator); changeable while running "
        "(drasi-ray scale --shards)",
    )
    query_hosts: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="actors the queries share, each query isolated inside its host; null: one "
        "(the fused actor) in the fused layout, else one per CPU of the Ray cluster, at most "
        "one per query (dedicated_host queries have their own besides)",
    )

    @model_validator(mode="after")
    def _check_layout(self) -> ScalingConfig:
        if self.layout is Layout.FUSED and not self.smallest:
            raise ValueError(
                "layout fused runs one store shard and one shared query host: set shards 1 "
                "and query_hosts 1 (or null), or layout actors"
            )
        return self

    @property
    def smallest(self) -> bool:
        """One store shard and one shared query host (null: one, in the fused layout)."""
        return self.shards == 1 and self.query_hosts in (None, 1)

    def fused(self, durable: bool) -> bool:
        """Whether the app starts in the fused layout, given whether its state is durable
        (``auto``: the default scaling with durable state; an explicit ``query_hosts: 1``
        keeps a host actor of its own). ConfigError for ``fused`` without durable state: a
        restart of the fused actor would lose its queries."""
        if self.layout is Layout.FUSED and not durable:
            raise ConfigError(
                "layout fused needs durable state (a restarted fused actor reloads its queries "
                "from Redis): set state.durable true, or scaling.layout actors"
            )
        if self.layout is Layout.AUTO:
            return self.shards == 1 and self.query_hosts is None and durable
        return self.layout is Layout.FUSED


class RayConfig(_Model):
    """How to reach Ray. ``address`` None: ``RAY_ADDRESS`` if set, else a new local Ray bound
    to 127.0.0.1 (never a Ray that happens to run on the machine: drasi_ray.actors.cluster)."""

    address: str | None = Field(
        None,
        description="the Ray cluster to join ('auto': the one running on this machine; "
        "'local': a new local Ray); null: RAY_ADDRESS, else a new local Ray on 127.0.0.1",
    )
    num_cpus: int | None = Field(None, ge=1, description="only when starting Ray locally")
    include_dashboard: bool | None = Field(
        None, description="only when starting Ray locally; None = Ray's default"
    )
    actor_num_cpus: float = Field(
        0.0, ge=0.0, description="CPU reserved per drasi_ray actor (0 packs any number per node)"
    )
    actor_niceness: int | None = Field(
        0,
        ge=-20,
        le=19,
        description=(
            "nice level of the consumer, coordinator and query actors (Ray starts workers at "
            "15); null keeps Ray's. Lowering it needs CAP_SYS_NICE, else Ray's level stays"
        ),
    )
    direct_calls: bool = Field(
        True,
        description=(
            "per-batch calls between actors over direct TCP lines (drasi_ray.actors.line), "
            "with Ray calls as the fallback; false: every call through Ray"
        ),
    )
    placement: Placement = Field(
        Placement.ROUND_ROBIN,
        description=(
            "where the pipeline's actors run: round_robin deals the coordinator, the store "
            "shards, the query hosts and the consumers over the cluster's alive nodes in turn "
            "(each requires its node's ray.io/node-id label; the actors of a lost node are "
            "restarted over the nodes left by the same rule, from a fallback list); spread "
            "leaves it to Ray's SPREAD strategy; pack to Ray's default (fill a node first)"
        ),
    )


class StateConfig(_Model):
    """Where the state that must survive restarts lives (:mod:`drasi_ray.shards.state`).

    The default-Redis rule, written once here for the app and the command line alike: durable
    state lives in ``redis_url``, else in the app's first source's Redis; results of a platform
    reaction without a ``redis_url`` go to ``redis_url``, else to the query's first source's
    Redis (Drasi keeps results beside the change feed).
    """

    durable: bool = Field(
        True, description="keep the element store, subscriptions and sequences in Redis"
    )
    redis_url: str | None = Field(None, description="default: the first source's redis_url")

    def state_redis_url(self, first_source_url: str | None) -> str | None:
        """The Redis holding durable state; None when state is in memory only (or there is
        no Redis to hold it)."""
        if not self.durable:
            return None
        return self.redis_url if self.redis_url is not None else first_source_url

    def results_redis_url(self, query_source_url: str | None) -> str | None:
        """Where a platform reaction without a ``redis_url`` writes results."""
        return self.redis_url if self.redis_url is not None else query_source_url


class SparkConfig(_Model):
    """The Spark session RayDP starts on Ray for analytics (executors are Ray actors)."""

    app_name: str = Field("drasi-ray-analytics", min_length=1, description="Spark app name")
    num_executors: int = Field(1, ge=1, description="Spark executors (Ray actors)")
    executor_cores: int = Field(1, ge=1, description="CPUs each executor reserves in Ray")
    executor_memory: str = Field(
        "1g", pattern=r"^[0-9]+[kKmMgG]?[bB]?$", description="memory of each executor"
    )
    shuffle_partitions: int = Field(4, ge=1, description="spark.sql.shuffle.partitions")
    configs: dict[str, str] = Field(
        default_factory=dict, description="extra Spark settings (override the defaults)"
    )


class AnalyticsConfig(_Model):
    """The change log of applied changes and its hand-off to Spark (drasi_ray.analytics)."""

    enabled: bool = Field(False, description="keep the change log (an analytics actor)")
    flush_every_changes: int = Field(
        10_000, ge=1, description="seal open rows into an Arrow block after this many"
    )
    flush_every_seconds: float = Field(
        5.0, gt=0, description="... or after this long, whichever comes first"
    )
    spill_bytes: int = Field(
        256 * 1024 * 1024, ge=1, description="Arrow bytes held in Ray before spilling to Parquet"
    )
    spill_dir: str | None = Field(
        None, description="where spilled Parquet goes (default: system temp); Spark reads it"
    )
    max_blocks: int = Field(4, ge=1, description="Ray blocks (Spark partitions) per hand-off")
    output_path: str | None = Field(None, description="default target of `analytics export`")
    spark: SparkConfig = Field(SparkConfig(), description="the Spark session (below)")


class AppConfig(_Model):
    """The whole application as a YAML file describes it."""

    id: str = Field(
        "default",
        min_length=1,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="app id: Ray namespace 'drasi_ray.<id>', Redis keys 'drasi:<id>:...'",
    )
    sources: tuple[AnySourceSpec, ...] = Field(
        (), description="the change feeds (`kind` picks a platform or a PostgreSQL source)"
    )
    queries: tuple[QueryConfig, ...] = Field((), description="the continuous queries")
    ray: RayConfig = Field(RayConfig(), description="Ray and actor placement (below)")
    analytics: AnalyticsConfig = Field(
        AnalyticsConfig(), description="the Spark change log, off by default (below)"
    )
    state: StateConfig = Field(StateConfig(), description="durable state (below)")
    scaling: ScalingConfig = Field(
        ScalingConfig(), description="store shards and query hosts (below)"
    )
    reactions: tuple[AppReactionSpec, ...] = Field(
        (), description="reactions over several queries, each an actor: http, sse (dashboard)"
    )

    @model_validator(mode="after")
    def _check_reactions(self) -> AppConfig:
        ids = [reaction.id for reaction in self.reactions]
        twice = sorted({name for name in ids if ids.count(name) > 1})
        if twice:
            raise ValueError(f"reaction ids must be unique: {', '.join(twice)}")
        known = {query.id for query in self.queries}
        for reaction in self.reactions:
            named = reaction.queries or ()
            missing = [query_id for query_id in named if query_id not in known]
            if missing:
                raise ValueError(f"reaction {reaction.id!r} names unknown queries {missing}")
        return self

    connect_timeout_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="how long start() and every command wait for a Redis (and a configured "
        "Ray) to answer before giving up with one error naming it",
    )

    @classmethod
    def from_yaml(cls, path: str | Path, environ: Mapping[str, str] | None = None) -> AppConfig:
        """Read and validate a YAML file; errors name the file and the offending key.

        Every ``${NAME}`` in a string value is replaced by the variable ``NAME`` of
        ``environ`` and every ``${file:PATH}`` by the content of that file (its final newline
        dropped), so secrets stay out of the file (:func:`expand_secrets`).
        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not a UTF-8 text file") from exc
        try:
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
        return cls.from_mapping(expand_secrets(raw, environ, str(path)), origin=str(path))

    @classmethod
    def from_mapping(cls, raw: Any, origin: str = "config") -> AppConfig:
        if not isinstance(raw, dict):
            raise ConfigError(f"{origin}: top level must be a mapping")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"{origin}: {format_validation_error(exc)}") from exc


_REFERENCE = re.compile(r"\$\{([^}]*)\}")


def expand_secrets(raw: Any, environ: Mapping[str, str] | None, origin: str = "config") -> Any:
    """``raw`` (a parsed YAML document) with ``${NAME}`` replaced by ``environ[NAME]`` and
    ``${file:PATH}`` by the file's content without its final newline, in every string value;
    ``$${`` stays a literal ``${``. A variable that is not set, or a file that cannot be read,
    is a ConfigError naming the key, never an empty password."""

    def walk(value: Any, where: str) -> Any:
        if isinstance(value, dict):
            return {
                key: walk(item, f"{where}.{key}" if where else str(key))
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [walk(item, f"{where}.{index}") for index, item in enumerate(value)]
        if isinstance(value, str) and "${" in value:
            parts = value.split("$${")
            return "${".join(
                _REFERENCE.sub(lambda m: _resolve(m.group(1), where), part) for part in parts
            )
        return value

    def _resolve(name: str, where: str) -> str:
        if name.startswith("file:"):
            path = Path(name.removeprefix("file:"))
            try:
                return path.read_text(encoding="utf-8").removesuffix("\n")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(
                    f"{origin}: {where}: cannot read ${{file:{path}}}: {exc}"
                ) from exc
        if environ is None or name not in environ:
            raise ConfigError(f"{origin}: {where}: the environment variable {name!r} is not set")
        return environ[name]

    return walk(raw, "")


def format_validation_error(exc: ValidationError) -> str:
    """One line per problem: ``sources.0.properties.batch_sise: unknown key``."""
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error_path(error["loc"])) or "(root)"
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        lines.append(f"{where}: {message}")
    return "; ".join(lines)


def error_path(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A validation error's location as the YAML path: without the tag pydantic inserts
    after the index of a ``sources`` entry (``sources.0.PostgreSQL.properties`` ->
    ``sources.0.properties``)."""
    return tuple(
        part
        for index, part in enumerate(loc)
        if not (index and isinstance(loc[index - 1], int) and part in SOURCE_KINDS)
    )


def validated(model: type[BaseModel], **values: Any) -> Any:
    """Build ``model`` translating pydantic's error into ConfigError."""
    try:
        return model(**values)
    except ValidationError as exc:
        raise ConfigError(f"{model.__name__}: {format_validation_error(exc)}") from exc
