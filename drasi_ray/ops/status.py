"""``drasi-ray status``: where every source and query stands, read from Redis alone.

Works whether or not the app runs. Per source: stream length, the group's lag (Redis 7's own
``lag`` field; on 6.2, which has none, the entries after the group's last-delivered id counted
with ``XRANGE``, capped at :data:`LAG_COUNT_CAP`), pending entries, each consumer's pending count
and idle time, and the dead-letter count. Per query: the last sequence (the state's counter and
the result stream's last CloudEvent) and the row count obtained by replaying the result stream.
Per HTTP reaction of the app: per query the sequence it delivered up to (its recorded
position), the result stream's last sequence and the lag between them, and its dead letters.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
from dataclasses import dataclass
from typing import Any

import orjson
import redis

from drasi_ray.model import encoding, keys
from drasi_ray.model.config import AppConfig, PostgresSourceSpec, QueryConfig, SourceSpec
from drasi_ray.model.reaction_specs import RelayedReaction, SseReaction
from drasi_ray.model.results import diffs_from_platform_event
from drasi_ray.ops import common
from drasi_ray.streams import admin

LAG_COUNT_CAP = 100_000
PAGE = 1000

HELP = """\
Shows, from Redis alone (the app need not run):

  per source: per stream (a row each) its length, consumer-group lag and pending entries,
              each consumer's pending count and idle time; the dead-letter count
              (JSON: the sums per source, and "streams" with each stream's figures)
  per query:  last result sequence and current row count (replayed from <queryId>-results)
  per HTTP reaction of the app: per query the sequence delivered up to, the lag behind the
              result stream, and the reaction's dead letters

examples:
  drasi-ray status app.yaml
  drasi-ray status app.yaml --json | jq '.sources[].lag'
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "status",
        "lag, pending, dead letters and result sequences of an app (from Redis)",
        HELP,
    )
    common.add_app_arguments(parser, app_id=True)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


@dataclass(frozen=True, slots=True)
class ConsumerStatus:
    """One consumer of a source's group: its pending entries and idle time."""

    name: str
    pending: int
    idle_ms: int


@dataclass(frozen=True, slots=True)
class StreamStatus:
    """One stream of a source and the source's group on it. Without a group, everything in
    the stream is lag and ``last_delivered_id`` is None."""

    stream: str
    length: int
    last_id: str
    group_exists: bool
    last_delivered_id: str | None
    lag: int
    lag_capped: bool
    pending: int
    consumers: tuple[ConsumerStatus, ...]

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form (no ``last_delivered_id`` when there is no group)."""
        report = _fields(self)
        report["consumers"] = [_fields(consumer) for consumer in self.consumers]
        if self.last_delivered_id is None:
            del report["last_delivered_id"]
        return report


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """A source's streams, group and dead letters: per stream its :class:`StreamStatus`, and
    the sums over them (``length``, ``lag``, ``pending``; ``lag_capped`` if any stream's
    count was capped, ``group_exists`` if the group is on every stream)."""

    group: str
    dead_letters: int
    dead_letter_stream: str
    streams: tuple[StreamStatus, ...]

    @property
    def length(self) -> int:
        return sum(stream.length for stream in self.streams)

    @property
    def lag(self) -> int:
        return sum(stream.lag for stream in self.streams)

    @property
    def lag_capped(self) -> bool:
        return any(stream.lag_capped for stream in self.streams)

    @property
    def pending(self) -> int:
        return sum(stream.pending for stream in self.streams)

    @property
    def group_exists(self) -> bool:
        return all(stream.group_exists for stream in self.streams)

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form: the sums, then ``streams``, one object per stream."""
        return {
            "group": self.group,
            "group_exists": self.group_exists,
            "length": self.length,
            "lag": self.lag,
            "lag_capped": self.lag_capped,
            "pending": self.pending,
            "dead_letters": self.dead_letters,
            "dead_letter_stream": self.dead_letter_stream,
            "streams": [stream.as_dict() for stream in self.streams],
        }


@dataclass(frozen=True, slots=True)
class QueryStatus:
    """A query's last result sequence (durable state) and what its result stream holds; the
    stream fields are None without a platform reaction."""

    last_sequence: int | None
    result_stream: str | None
    result_entries: int | None
    rows: int | None
    stream_sequence: int | None

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form (no ``result_entries`` without a result stream)."""
        report = _fields(self)
        if self.result_stream is None:
            del report["result_entries"]
        return report


@dataclass(frozen=True, slots=True)
class DeliveryStatus:
    """How far an HTTP reaction delivered one query's results (None: nothing recorded yet)."""

    sequence: int | None
    stream_sequence: int | None
    lag: int


@dataclass(frozen=True, slots=True)
class ReactionStatus:
    """An HTTP or stored-procedure reaction of the app: per query its delivery, and its dead
    letters."""

    kind: str
    dead_letters: int
    dead_letter_stream: str
    queries: dict[str, DeliveryStatus]

    def as_dict(self) -> dict[str, Any]:
        report = _fields(self)
        report["queries"] = {name: _fields(query) for name, query in self.queries.items()}
        return report


@dataclass(frozen=True, slots=True)
class AppStatus:
    """The whole report: per source, per query and per HTTP reaction, from Redis alone."""

    app: str
    sources: dict[str, SourceStatus]
    queries: dict[str, QueryStatus]
    reactions: dict[str, ReactionStatus] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {
            "app": self.app,
            "sources": {name: source.as_dict() for name, source in self.sources.items()},
            "queries": {name: query.as_dict() for name, query in self.queries.items()},
            "reactions": {name: r.as_dict() for name, r in self.reactions.items()},
        }


def _fields(record: Any) -> dict[str, Any]:
    return {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}


def run(args: argparse.Namespace) -> int:
    config = common.load_app(args.config, args.redis_url, args.app_id)
    common.check_all(config)
    report = app_status(config)
    print(encoding.dumps(report.as_dict(), indent=True).decode() if args.json else render(report))
    return 0


def app_status(config: AppConfig) -> AppStatus:
    """The whole report."""
    return AppStatus(
        app=config.id,
        sources={spec.id: source_status(spec, config.id) for spec in config.sources},
        queries={query.id: query_status(config, query) for query in config.queries},
        reactions={
            spec.id: reaction_status(config, spec)
            for spec in config.reactions
            if not isinstance(spec, SseReaction)
        },
    )


def reaction_status(config: AppConfig, spec: RelayedReaction) -> ReactionStatus:
    """Where an HTTP or stored-procedure reaction's recorded positions stand against its
    queries' result streams (all on one Redis, which holds its positions and dead letters
    too)."""
    queries = {query.id: query for query in config.queries if query.id in spec.queries}
    deliveries: dict[str, DeliveryStatus] = {}
    url = None
    for query_id, query in queries.items():
        url, stream = common.result_stream(config, query)
        with common.client(url) as client:
            raw: Any = client.hget(keys.reaction_positions(config.id, spec.id), query_id)
            last = _last_sequence(client, stream)
        done = None if raw is None else int(orjson.loads(raw)[1])
        lag = max(0, (last or 0) - (done or 0)) if done is not None else last or 0
        deliveries[query_id] = DeliveryStatus(done, last, lag)
    dead_letter_stream = keys.reaction_dead_letters(config.id, spec.id)
    dead = 0
    if url is not None:
        with common.client(url) as client:
            dead = int(client.xlen(dead_letter_stream))
    return ReactionStatus(spec.kind, dead, dead_letter_stream, deliveries)


def _last_sequence(client: redis.Redis, stream: str) -> int | None:
    reply: Any = client.xrevrange(stream, count=1)
    if not reply:
        return None
    sequence = orjson.loads(reply[0][1][b"data"])["data"].get("sequence")
    return sequence if isinstance(sequence, int) else None


def source_status(spec: SourceSpec | PostgresSourceSpec, app_id: str) -> SourceStatus:
    props = spec.stream_settings(app_id)
    with common.client(props.redis_url) as client:
        return SourceStatus(
            group=props.consumer_group,
            dead_letters=int(client.xlen(props.dead_letter_key)),
            dead_letter_stream=props.dead_letter_key,
            streams=tuple(
                stream_status(client, stream, props.consumer_group) for stream in props.stream_keys
            ),
        )


def stream_status(client: redis.Redis, stream: str, group: str) -> StreamStatus:
    """One stream's length, lag, pending entries and consumers in ``group``."""
    length = int(client.xlen(stream))
    progress = admin.group_progress(client, stream, group)
    lag, capped = (length, False)
    if progress is not None:
        lag, capped = admin.lag(client, stream, progress, LAG_COUNT_CAP)
    return StreamStatus(
        stream=stream,
        length=length,
        last_id=admin.last_generated_id(client, stream),
        group_exists=progress is not None,
        last_delivered_id=None if progress is None else progress.last_delivered_id,
        lag=lag,
        lag_capped=capped,
        pending=0 if progress is None else progress.pending,
        consumers=()
        if progress is None
        else tuple(ConsumerStatus(c.name, c.pending, c.idle_ms) for c in progress.consumers),
    )


def query_status(config: AppConfig, query: QueryConfig) -> QueryStatus:
    last_sequence = _state_sequence(config, query.id)
    location = common.result_location(config, query)
    if location is None:
        return QueryStatus(last_sequence, None, None, None, None)
    url, stream = location
    with common.client(url) as client:
        rows, entries, last = replay_rows(client, stream)
    return QueryStatus(last_sequence, stream, entries, rows, last)


def _state_sequence(config: AppConfig, query_id: str) -> int | None:
    url = common.state_url(config)
    if url is None:
        return None
    with common.client(url) as client:
        raw: Any = client.get(keys.result_sequence(config.id, query_id))
    return None if raw is None else int(raw)


def replay_rows(client: redis.Redis, stream: str) -> tuple[int, int, int | None]:
    """(rows, entries read, last sequence) from replaying a result stream's change events.

    Rows as the stream records them: ADD adds, DELETE removes, UPDATE and aggregation replace
    ``before`` with ``after``. A stream trimmed with ``maxlen`` undercounts.
    """
    rows: collections.Counter[bytes] = collections.Counter()
    entries, last, start = 0, None, "-"
    while True:
        page: Any = client.xrange(stream, start, "+", count=PAGE)
        for _entry_id, fields in page:
            entries += 1
            event = orjson.loads(fields[b"data"])
            last = event["data"].get("sequence", last)
            if event["data"].get("kind") == "change":
                _apply(rows, diffs_from_platform_event(event))
        if len(page) < PAGE:
            return sum(rows.values()), entries, last
        start = "(" + common.text(page[-1][0])


def _apply(rows: collections.Counter[bytes], diffs: list[dict[str, Any]]) -> None:
    for diff in diffs:
        if diff["type"] in ("ADD", "DELETE"):
            key = orjson.dumps(diff["data"], option=orjson.OPT_SORT_KEYS)
            rows[key] += 1 if diff["type"] == "ADD" else -1
            if rows[key] <= 0:
                del rows[key]
            continue
        before = diff.get("before")
        if before is not None:
            key = orjson.dumps(before, option=orjson.OPT_SORT_KEYS)
            if rows[key] > 0:
                rows[key] -= 1
            if rows[key] <= 0:
                del rows[key]
        rows[orjson.dumps(diff["after"], option=orjson.OPT_SORT_KEYS)] += 1


def render(report: AppStatus) -> str:
    """The table form of :func:`app_status`."""
    lines = [f"app {report.app}", ""]
    header = ("SOURCE", "STREAM", "LENGTH", "LAG", "PENDING", "DLQ", "CONSUMERS (pending/idle)")
    table: list[tuple[Any, ...]] = [header]
    for source_id, source in report.sources.items():
        for s in source.streams:  # a row per stream; the dead letters are the source's
            lag = f"{s.lag}{'+' if s.lag_capped else ''}"
            group = ", ".join(f"{c.name} {c.pending}/{c.idle_ms}ms" for c in s.consumers)
            if not s.group_exists:
                group = f"(no group {source.group!r})"
            dead = source.dead_letters if s is source.streams[0] else ""
            table.append((source_id, s.stream, s.length, lag, s.pending, dead, group))
    lines += [*_columns(table), ""]
    table = [("QUERY", "LAST SEQUENCE", "STREAM SEQUENCE", "ROWS", "RESULT STREAM")]
    for query_id, q in report.queries.items():
        table.append((query_id, q.last_sequence, q.stream_sequence, q.rows, q.result_stream))
    lines += _columns(table)
    if report.reactions:
        table = [("REACTION", "QUERY", "DELIVERED TO", "STREAM SEQUENCE", "LAG", "DLQ")]
        for reaction_id, r in report.reactions.items():
            for number, (query_id, d) in enumerate(r.queries.items()):
                dead = r.dead_letters if number == 0 else ""
                table.append((reaction_id, query_id, d.sequence, d.stream_sequence, d.lag, dead))
        lines += ["", *_columns(table)]
    return "\n".join(lines)


def _columns(rows: list[tuple[Any, ...]]) -> list[str]:
    cells = [["-" if value is None else str(value) for value in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
