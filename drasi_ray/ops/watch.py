"""``drasi-ray watch QUERY``: a query's current results, as a table redrawn as they change."""

from __future__ import annotations

import argparse
import sys
import time
from typing import IO, Any

from drasi_ray.ops import common, tables, target

HELP = f"""\
Shows the result set of a query of a running app as a table, redrawn whenever it changes
(the app is asked every --interval seconds), as `drasi watch` does in Drasi; Ctrl-C ends it.
On a terminal the table is drawn in place; otherwise each new table is printed below the last
(with --once, the current one only).

{target.TARGET_HELP}

examples:
  drasi-ray watch hello-world-from
  drasi-ray watch message-count --once --app shop
"""

CLEAR = "\x1b[H\x1b[2J"


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands, "watch", "a query's results as a live table in the terminal", HELP
    )
    parser.add_argument("query", metavar="QUERY", help="the continuous query's name")
    parser.add_argument(
        "--interval", metavar="S", type=float, default=0.5, help="seconds between asks (0.5)"
    )
    parser.add_argument("--once", action="store_true", help="print the current table and exit")
    target.add_target_arguments(parser, timeout_s=30.0)


def run(args: argparse.Namespace) -> int:
    with target.client(args) as app:
        shown: list[dict[str, Any]] | None = None
        try:
            while True:
                reply = app.call("results", {"query": args.query}, args.timeout)
                rows = reply["rows"]
                if rows != shown:
                    draw(sys.stdout, args.query, rows)
                    shown = rows
                if args.once:
                    return 0
                time.sleep(max(args.interval, 0.05))
        except KeyboardInterrupt:
            return 0


def draw(out: IO[str], query_id: str, rows: list[dict[str, Any]]) -> None:
    """The table of ``rows`` (columns by name, rows in a stable order) on ``out``."""
    columns = sorted({column for row in rows for column in row})
    ordered = sorted(rows, key=lambda row: [tables.cell(row.get(c)) for c in columns])
    body = tables.render(columns, [[row.get(c) for c in columns] for row in ordered])
    text = f"{query_id}: {len(rows)} row{'s' if len(rows) != 1 else ''}\n"
    text += body if columns else "  (no rows)"
    if out.isatty():
        out.write(CLEAR + text + "\n")
    else:
        out.write(text + "\n\n")
    out.flush()
