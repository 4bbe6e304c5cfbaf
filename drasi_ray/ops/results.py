"""``drasi-ray results``: a query's current result set, computed from the durable element store.

The rows are what a restarted query host rebuilds: the query's engine, in this process, loaded
with every element of its sources as the app's state in Redis holds them
(``drasi:<app>:store:<source>``). So it needs no Ray and works whether or not the app runs,
and it is exact where replaying the result stream is not (a trimmed stream, a host restart
whose diffs were never written). A query whose rows depend on more than the elements is
refused with the reason: one that pipes a source through middleware (its pipeline's own store
is rebuilt by its host), or one that calls Drasi's future functions (its rows depend on its
clock and function state).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from drasi_ray.host.runner import make_engine
from drasi_ray.model import encoding
from drasi_ray.model.config import AppConfig, QueryConfig
from drasi_ray.model.errors import ConfigError, UnknownComponentError
from drasi_ray.model.identity import graph_element, reads_several
from drasi_ray.ops import common
from drasi_ray.shards.state import StateStore

HELP = """\
Prints the current result set of QUERY, one JSON row per line (sorted), computed from the
app's durable state in Redis (the element store of each source the query reads), as a
restarted query rebuilds it: the app need not run. A count goes to stderr.

examples:
  drasi-ray results hot-sensors app.yaml
  drasi-ray results hot-sensors app.yaml --redis-url redis://localhost:6379 | jq .id
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "results",
        "a query's current result set (from the durable state in Redis)",
        HELP,
    )
    parser.add_argument("query", metavar="QUERY", help="query id in APP_YAML")
    common.add_app_arguments(parser)


def run(args: argparse.Namespace) -> int:
    config = common.load_app(args.config, args.redis_url)
    rows = current_rows(config, args.query)
    for row in rows:
        print(encoding.dumps(row).decode())
    print(f"{args.query}: {len(rows)} row(s)", file=sys.stderr)
    return 0


def current_rows(config: AppConfig, query_id: str) -> list[dict[str, Any]]:
    """The rows of ``query_id`` over the elements the state Redis holds, sorted by their JSON
    form. ConfigError when the query cannot be computed this way (module doc)."""
    query = _query(config, query_id)
    url = common.state_url(config)
    if url is None:
        raise ConfigError(
            f"app {config.id!r} keeps no durable state (state.durable is false): its results "
            "live only in the running app (app.results) and its result stream"
        )
    if query.pipelines:
        raise ConfigError(
            f"query {query_id!r} pipes its sources through middleware: its rows are rebuilt by "
            "its host; read them from the running app (app.results) or its result stream"
        )
    engine = make_engine(query)
    if engine.stateful:
        raise ConfigError(
            f"query {query_id!r} calls future functions: its rows depend on its clock; read "
            "them from the running app (app.results) or its result stream"
        )
    common.connect(config, url, "state")
    elements = asyncio.run(_elements(url, config.id, query.sources))
    engine.bootstrap(elements)
    rows = engine.results()
    return sorted(rows, key=encoding.dumps)


def _query(config: AppConfig, query_id: str) -> QueryConfig:
    for query in config.queries:
        if query.id == query_id:
            return query
    known = ", ".join(query.id for query in config.queries) or "none"
    raise UnknownComponentError(f"unknown query {query_id!r} (queries: {known})")


async def _elements(url: str, app_id: str, sources: tuple[str, ...]) -> list[Any]:
    """Every live element of ``sources`` in the state Redis, under the ids the query's graph
    uses (graph ids when it reads several sources)."""
    state = StateStore.from_url(url, app_id)
    several = reads_several(sources)
    try:
        elements = []
        for source_id in sources:
            store = await state.load_store(source_id)
            for element in store.elements():
                elements.append(graph_element(source_id, element) if several else element)
        return elements
    finally:
        await state.close()
