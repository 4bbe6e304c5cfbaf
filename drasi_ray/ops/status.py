"""``drasi-ray status``: where every source and query stands, read from Redis alone.

Works whether or not the app runs. Per source: stream length, the group's lag (Redis 7's own
``lag`` field; on 6.2, which has none, the entries after the group's last-delivered id counted
with ``XRANGE``, capped at :data:`LAG_COUNT_CAP`), pending entries, each consumer's pending count
and idle time, and the dead-letter count. Per query: the last sequence (the state's counter and
the result stream's last CloudEvent) and the row count obtained by replaying the result stream.
"""

from __future__ import annotations

import argparse
import collections
from typing import Any

import orjson
import redis

from drasi_ray.model import encoding, keys
from drasi_ray.model.changes import parse_entry_id
from drasi_ray.model.config import AppConfig, QueryConfig, SourceSpec
from drasi_ray.model.results import diffs_from_platform_event
from drasi_ray.ops import common

LAG_COUNT_CAP = 100_000
PAGE = 1000

HELP = """\
Shows, from Redis alone (the app need not run):

  per source: stream length, consumer-group lag and pending entries, each consumer's
              pending count and idle time, dead-letter count
  per query:  last result sequence and current row count (replayed from <queryId>-results)

examples:
  drasi-ray status app.yaml
  drasi-ray status app.yaml --json | jq '.sources[].lag'
"""


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "status",
        help="lag, pending, dead letters and result sequences of an app (from Redis)",
        description=HELP,
        formatter_class=common.EPILOG_FORMATTER,
    )
    common.add_app_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    config = common.load_app(args.config, args.redis_url)
    report = app_status(config)
    print(encoding.dumps(report, indent=True).decode() if args.json else render(report))
    return 0


def app_status(config: AppConfig) -> dict[str, Any]:
    """The whole report (the ``--json`` document)."""
    return {
        "app": config.id,
        "sources": {spec.id: source_status(spec) for spec in config.sources},
        "queries": {query.id: query_status(config, query) for query in config.queries},
    }


def source_status(spec: SourceSpec) -> dict[str, Any]:
    props = spec.properties
    with common.client(props.redis_url) as client:
        length = int(client.xlen(props.stream_key))
        last_id = _last_generated(client, props.stream_key)
        group = _group(client, props.stream_key, props.consumer_group)
        report: dict[str, Any] = {
            "stream": props.stream_key,
            "length": length,
            "last_id": last_id,
            "group": props.consumer_group,
            "group_exists": group is not None,
            "dead_letters": int(client.xlen(props.dead_letter_key)),
            "dead_letter_stream": props.dead_letter_key,
        }
        if group is None:
            report.update(lag=length, lag_capped=False, pending=0, consumers=[])
            return report
        delivered = common.text(group["last-delivered-id"])
        lag, capped = _lag(client, props.stream_key, group, last_id, delivered)
        report.update(
            last_delivered_id=delivered,
            lag=lag,
            lag_capped=capped,
            pending=int(group["pending"]),
            consumers=_consumers(client, props.stream_key, props.consumer_group),
        )
        return report


def _last_generated(client: redis.Redis, stream: str) -> str:
    try:
        info: Any = client.xinfo_stream(stream)
    except redis.ResponseError:
        return "0-0"
    return common.text(info.get("last-generated-id", b"0-0"))


def _group(client: redis.Redis, stream: str, group: str) -> dict[str, Any] | None:
    try:
        groups: Any = client.xinfo_groups(stream)
    except redis.ResponseError:
        return None
    return next((g for g in groups if common.text(g["name"]) == group), None)


def _lag(
    client: redis.Redis, stream: str, group: dict[str, Any], last_id: str, delivered: str
) -> tuple[int, bool]:
    """(entries not yet delivered to the group, whether the count hit the cap)."""
    if group.get("lag") is not None:
        return int(group["lag"]), False
    if parse_entry_id(last_id) <= parse_entry_id(delivered):
        return 0, False
    entries: Any = client.xrange(stream, "(" + delivered, "+", count=LAG_COUNT_CAP)
    return len(entries), len(entries) >= LAG_COUNT_CAP


def _consumers(client: redis.Redis, stream: str, group: str) -> list[dict[str, Any]]:
    found: Any = client.xinfo_consumers(stream, group)
    return [
        {"name": common.text(c["name"]), "pending": int(c["pending"]), "idle_ms": int(c["idle"])}
        for c in found
    ]


def query_status(config: AppConfig, query: QueryConfig) -> dict[str, Any]:
    report: dict[str, Any] = {"last_sequence": _state_sequence(config, query.id)}
    location = common.result_location(config, query)
    if location is None:
        report.update(result_stream=None, rows=None, stream_sequence=None)
        return report
    url, stream = location
    with common.client(url) as client:
        rows, entries, last = replay_rows(client, stream)
    report.update(result_stream=stream, result_entries=entries, rows=rows, stream_sequence=last)
    return report


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


def render(report: dict[str, Any]) -> str:
    """The table form of :func:`app_status`."""
    lines = [f"app {report['app']}", ""]
    header = ("SOURCE", "STREAM", "LENGTH", "LAG", "PENDING", "DLQ", "CONSUMERS (pending/idle)")
    table: list[tuple[Any, ...]] = [header]
    for source_id, s in report["sources"].items():
        lag = f"{s['lag']}{'+' if s['lag_capped'] else ''}"
        group = ", ".join(f"{c['name']} {c['pending']}/{c['idle_ms']}ms" for c in s["consumers"])
        if not s["group_exists"]:
            group = f"(no group {s['group']!r})"
        table.append(
            (source_id, s["stream"], s["length"], lag, s["pending"], s["dead_letters"], group)
        )
    lines += [*_columns(table), ""]
    table = [("QUERY", "LAST SEQUENCE", "STREAM SEQUENCE", "ROWS", "RESULT STREAM")]
    for query_id, q in report["queries"].items():
        table.append(
            (query_id, q["last_sequence"], q["stream_sequence"], q["rows"], q["result_stream"])
        )
    return "\n".join(lines + _columns(table))


def _columns(rows: list[tuple[Any, ...]]) -> list[str]:
    cells = [["-" if value is None else str(value) for value in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
