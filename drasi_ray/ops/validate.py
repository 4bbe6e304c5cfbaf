"""``drasi-ray validate``: check an app file without running it, errors at file:line:column.

Checks the schema (unknown keys, types, ranges: the same models ``run`` uses), that every
query's sources exist, and that every query parses. A Drasi resource file (``apiVersion: v1``
documents) is checked as :mod:`drasi_ray.model.resources` reads it, each query parsed; what
it says that drasi_ray does not act on is printed as a warning.

A schema error's location (pydantic's path of keys and indices) is walked down the YAML node
tree, whose marks give the line and column; a query syntax error's position inside the query
text is mapped back into the YAML scalar that holds it, so the column points at the offending
token even in a folded (``>``) block.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from drasi_ray.model import resources
from drasi_ray.model.config import AppConfig, QueryConfig, error_path
from drasi_ray.model.errors import ConfigError, QueryError, QuerySyntaxError
from drasi_ray.model.reaction_specs import HttpReaction, RelayedReaction, SseReaction
from drasi_ray.ops import common
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.reactions.http import check_query
from drasi_ray.reactions.storedproc import check_commands

HELP = """\
Validates APP_YAML: the schema (unknown keys are errors), that queries read existing sources,
and that every query parses. Problems are printed as FILE:LINE:COLUMN: PATH: MESSAGE; the exit
status is 1 when there are any.

examples:
  drasi-ray validate app.yaml
  drasi-ray validate app.yaml && drasi-ray run app.yaml
"""


PLACEHOLDER_REDIS = "redis://localhost:6379"
"""Where a Drasi file's PostgreSQL source writes, for checking it (the running app's Redis)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem at a 1-based position in the file (``warning``: accepted, not acted on)."""

    file: str
    line: int
    column: int
    where: str
    message: str
    warning: bool = False

    def __str__(self) -> str:
        severity = "warning: " if self.warning else ""
        return f"{self.file}:{self.line}:{self.column}: {severity}{self.where}: {self.message}"


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "validate",
        "check an app file (schema, sources, query syntax) with line and column",
        HELP,
    )
    parser.add_argument(
        "config", metavar="APP_YAML", help="the application file, or a Drasi resource file"
    )


def run(args: argparse.Namespace) -> int:
    found = validate_file(args.config)
    for problem in found:
        print(problem)
    errors = [problem for problem in found if not problem.warning]
    if not errors:
        print(f"{args.config}: ok")
    return 1 if errors else 0


def validate_file(path: str | Path) -> list[Problem]:
    """Every problem found in the file (empty: valid)."""
    name = str(path)
    text = Path(path).read_text(encoding="utf-8")
    if resources.looks_like_resources(text):
        return _resource_problems(name, text)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text) or {}
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return [Problem(name, line, column, "(yaml)", f"invalid YAML: {exc.problem}")]
    try:
        config = AppConfig.model_validate(raw)
    except ValidationError as exc:
        return [_schema_problem(name, root, error) for error in exc.errors()]
    problems: list[Problem] = []
    for index, query in enumerate(config.queries):
        problems += _query_problems(name, text, root, config, index, query)
    for index, reaction in enumerate(config.reactions):
        if not isinstance(reaction, SseReaction):
            problems += _template_problems(name, root, config, index, reaction)
    return problems


def _template_problems(
    name: str, root: Any, config: AppConfig, index: int, reaction: RelayedReaction
) -> list[Problem]:
    """An HTTP reaction's templates (a stored-procedure reaction's commands) against the
    fields of the queries they serve (a query that does not parse is reported on its own)."""
    problems: list[Problem] = []
    queries = {query.id: query for query in config.queries}
    for query_id in reaction.queries:
        query = queries[query_id]
        try:
            engine = ContinuousQuery(
                query.id, query.query, query.parameters, query.joins, language=query.query_language
            )
            if isinstance(reaction, HttpReaction):
                check_query(reaction, query_id, engine.column_names)
            else:
                check_commands(reaction, query_id, engine.column_names)
        except QueryError:
            continue
        except ConfigError as exc:
            where = ("reactions", index, "queries", query_id)
            line, column = _position(_locate(root, where))
            problems.append(Problem(name, line, column, ".".join(map(str, where)), str(exc)))
    return problems


def _schema_problem(name: str, root: yaml.Node | None, error: Any) -> Problem:
    loc = tuple(error["loc"])
    node = _locate(root, loc, key_of_last=error["type"] == "extra_forbidden")
    line, column = _position(node)
    message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
    where = ".".join(str(part) for part in error_path(loc)) or "(root)"
    return Problem(name, line, column, where, message)


def _locate(root: yaml.Node | None, loc: tuple[Any, ...], key_of_last: bool = False) -> Any:
    """The deepest node along ``loc``; path parts that are no YAML key (pydantic's union
    tags) are skipped. ``key_of_last``: the key node of the last part, not its value."""
    node = root
    for depth, part in enumerate(loc):
        last = depth == len(loc) - 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    node = key if (last and key_of_last) else value
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part >= 0:
            node = node.value[part] if part < len(node.value) else node
    return node


def _position(node: Any) -> tuple[int, int]:
    if node is None:
        return 1, 1
    return node.start_mark.line + 1, node.start_mark.column + 1


def _query_problems(
    name: str, text: str, root: Any, config: AppConfig, index: int, query: QueryConfig
) -> list[Problem]:
    problems: list[Problem] = []
    known = {spec.id for spec in config.sources}
    for number, source in enumerate(query.sources):
        if source not in known:
            node = _locate(root, ("queries", index, "sources", number))
            line, column = _position(node)
            where = f"queries.{index}.sources.{number}"
            problems.append(Problem(name, line, column, where, f"unknown source {source!r}"))
    node = _locate(root, ("queries", index, "query"))
    problem = query_problem(name, text, node, query, f"queries.{index}.query")
    return problems if problem is None else [*problems, problem]


def query_problem(
    name: str, text: str, node: Any, query: QueryConfig, where: str
) -> Problem | None:
    """The query's parse error at its place in the file ``name`` holding ``text``, ``node``
    the YAML scalar of its text (None: it parses)."""
    try:
        ContinuousQuery(
            query.id, query.query, query.parameters, query.joins, language=query.query_language
        )
    except QueryError as exc:
        line, column = _position(node)
        if isinstance(exc, QuerySyntaxError) and node is not None:
            line, column = _map_into_scalar(text, node, query.query, exc.line, exc.column)
        message = exc.message if isinstance(exc, QuerySyntaxError) else str(exc)
        if isinstance(exc, QuerySyntaxError):
            message += f" (query line {exc.line}, column {exc.column})"
        return Problem(name, line, column, where, message)
    return None


def _resource_problems(name: str, text: str) -> list[Problem]:
    """A Drasi resource file's problems, its queries parsed, then its notices."""
    try:
        read = resources.parse_resources(text, name, PLACEHOLDER_REDIS)
    except resources.ResourceError as exc:
        return [_as_problem(found) for found in exc.problems]
    found: list[Problem] = []
    for resource in read.of_kind(resources.QUERY):
        assert isinstance(resource.spec, QueryConfig)
        node = resource.field_node("spec", "query")
        problem = query_problem(name, text, node, resource.spec, f"{resource.label} spec.query")
        found += [] if problem is None else [problem]
    return found + [_as_problem(notice, warning=True) for notice in read.notices]


def _as_problem(
    found: resources.ResourceProblem | resources.ResourceNotice, warning: bool = False
) -> Problem:
    place = found.position
    return Problem(place.file, place.line, place.column, found.where, found.message, warning)


def _map_into_scalar(text: str, node: Any, value: str, line: int, column: int) -> tuple[int, int]:
    """The file position of ``value``'s (line, column) inside the YAML scalar ``node``.

    Block, folded and quoted scalars keep the non-blank characters of their value in order,
    only whitespace changes; so count the non-blank characters before the position in the
    value and walk as many in the raw scalar.
    """
    lines = value.split("\n")
    offset = sum(len(item) + 1 for item in lines[: line - 1]) + column - 1
    wanted = sum(1 for char in value[:offset] if not char.isspace())
    start, end = node.start_mark.index, node.end_mark.index
    if node.style in ("|", ">"):
        start = text.index("\n", start) + 1
    elif node.style in ("'", '"'):
        start += 1
    seen = 0
    index = start
    while index < end:
        if not text[index].isspace():
            if seen == wanted:
                break
            seen += 1
        index += 1
    before = text[:index]
    return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1
