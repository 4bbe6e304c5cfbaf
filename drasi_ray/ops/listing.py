"""``drasi-ray list [KIND]``: the sources, queries and reactions of a running app."""

from __future__ import annotations

import argparse
from typing import Any

from drasi_ray.ops import common, tables, target

HELP = f"""\
Lists the resources of a running app with their status, as `drasi list` does in Drasi: every
kind, or one (source, query or continuousquery, reaction).

  sources:   kind, streams, consumer actors, consumer-group lag and pending entries, dead
             letters, status (Running once every consumer reads)
  queries:   the query host it runs on, status, current row count, last result sequence,
             the last error applying a change
  reactions: kind, the queries it reads, status, results delivered and dropped; a reaction
             declared on its query (the app's own YAML) is listed as <query>.<kind>

{target.TARGET_HELP}

examples:
  drasi-ray list
  drasi-ray list query --app shop
"""

SOURCE_COLUMNS = ("ID", "KIND", "STREAMS", "CONSUMERS", "LAG", "PENDING", "DLQ", "STATUS")
QUERY_COLUMNS = ("ID", "HOST", "STATUS", "ROWS", "SEQUENCE", "ERROR")
REACTION_COLUMNS = ("ID", "KIND", "QUERIES", "STATUS", "DELIVERED", "DROPPED", "ERROR")


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands, "list", "the sources, queries and reactions of a running app", HELP
    )
    parser.add_argument(
        "kind", metavar="KIND", nargs="?", help="source, query or reaction (default: all)"
    )
    target.add_target_arguments(parser, timeout_s=30.0)


def run(args: argparse.Namespace) -> int:
    if args.kind is not None:
        target.resource_kind(args.kind)  # refused here: nothing is sent
    with target.client(args) as app:
        listing = app.call("list", {"kind": args.kind}, args.timeout)
    print(render(listing))
    return 0


def render(listing: dict[str, list[dict[str, Any]]]) -> str:
    """The listing's tables, one per kind it holds."""
    parts = []
    if "sources" in listing:
        rows = [
            [
                s["id"],
                s["kind"],
                s["streams"],
                s["consumers"],
                s.get("lag"),
                s.get("pending"),
                s.get("dead_letters"),
                s["status"],
            ]
            for s in listing["sources"]
        ]
        parts.append("SOURCES\n" + tables.render(SOURCE_COLUMNS, rows))
    if "queries" in listing:
        rows = [
            [q["id"], q["host"], q["status"], q["rows"], q["sequence"], q.get("error")]
            for q in listing["queries"]
        ]
        parts.append("QUERIES\n" + tables.render(QUERY_COLUMNS, rows))
    if "reactions" in listing:
        rows = [
            [
                r["id"],
                r["kind"],
                r["queries"],
                r["status"],
                r["delivered"],
                r["dropped"],
                r.get("error"),
            ]
            for r in listing["reactions"]
        ]
        parts.append("REACTIONS\n" + tables.render(REACTION_COLUMNS, rows))
    return "\n\n".join(parts)
