"""GQL text -> :class:`drasi_ray.query.ast.Query`: Drasi's second query language.

:func:`parse_gql` takes what Drasi's GQL front end (drasi-core's ``query-gql``) takes and
builds the query parts Drasi builds from it, so a GQL query runs on the engine exactly as the
Cypher query of the same parts: every feature (aggregation, future and past functions, joins,
middleware) works from either language. The grammar is ``grammar.lark`` (what the languages
share: patterns, WHERE, expressions) followed by ``gql.lark``.

How a query becomes parts (Drasi's rules, docs/semantics.md §3):

- MATCH clauses (each with its WHEREs), then statements, then RETURN [GROUP BY];
- the statements work on a *scope* of columns, at first the named **node** variables of the
  MATCH clauses (Drasi leaves relation variables out, so a relation variable cannot be read
  after a statement: refused here with a hint):

  - ``LET a = e, ...`` is a part projecting the scope and the new columns (a name already in
    the scope takes the new value, as Drasi's later column wins); an aggregate in ``e`` makes
    it an aggregating part grouped by the scope, as in Drasi;
  - ``FILTER e`` is a part projecting the scope whose rows must pass ``e`` (the MATCH
    clauses before it, if any, first get a part of their own);
  - ``YIELD e AS a, v, ...`` is a part projecting only what it names (a variable, or an
    expression with an alias);
- ``RETURN ... GROUP BY keys``: each RETURN column that is not an aggregate must be a key
  (the same expression unaliased, or a key naming its alias). When every key is a RETURN
  column it is the RETURN's own grouping; when some key is not, Drasi first groups by every
  key (a RETURN column standing for its key) and a second part projects the RETURN columns,
  which then need aliases. ``GROUP BY ()`` is one group;
- ``NEXT`` starts another run of statements and RETURN over the previous RETURN's columns,
  which must be variables or have aliases.

Functions are GQL's (Drasi's GQL function set, and the future and past functions Drasi's
core registers): ``upper``, ``lower``, ``char_length``, ``element_id``, ``zoned_datetime``,
``local_datetime``, ``zoned_time``, ``local_time``, ``duration_between``, ``CAST(x AS
STRING | INTEGER | INT | FLOAT | BOOLEAN | BOOL)``... compiled to the registry's functions of
the same meaning; a Cypher name gets a hint to its GQL name. Names are case-insensitive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from lark import Token, v_args
from lark.tree import Meta

from drasi_ray.query import ast
from drasi_ray.query.expressions import contains_aggregate
from drasi_ray.query.parser import (
    AstBuilder,
    ScopeChecker,
    fail,
    parse_tree,
    position_of,
    reserved_words,
    transform,
    unsupported,
)

GQL = "gql"
"""The grammar file of GQL's query structure, without ``.lark``."""

_SAME_NAME: tuple[str, ...] = (
    "trim",
    "ltrim",
    "rtrim",
    "reverse",
    "left",
    "right",
    "replace",
    "split",
    "substring",
    "abs",
    "ceil",
    "floor",
    "round",
    "cos",
    "degrees",
    "pi",
    "radians",
    "sin",
    "tan",
    "char_length",
    "size",
    "coalesce",
    "nullif",
    "last",
    "upper",
    "lower",
    "drasi.changedatetime",
    "drasi.listmax",
    "drasi.listmin",
    "drasi.stdevp",
    "retainhistory",
    "sum",
    "avg",
    "count",
    "min",
    "max",
    "drasi.lineargradient",
    "drasi.last",
    "date",
    "duration",
    "duration.inmonths",
    "duration.indays",
    "duration.inseconds",
    "drasi.awaiting",
    "drasi.future",
    "drasi.trueuntil",
    "drasi.truefor",
    "drasi.truelater",
    "drasi.truenoworlater",
    "drasi.previousvalue",
    "drasi.previousdistinctvalue",
    "drasi.slidingwindow",
    "drasi.getversionbytimestamp",
    "drasi.getversionsbytimerange",
)

FUNCTIONS: Mapping[str, str] = {
    **{name: name for name in _SAME_NAME},
    "element_id": "elementid",
    "zoned_datetime": "datetime",
    "local_datetime": "localdatetime",
    "zoned_time": "time",
    "local_time": "localtime",
    "duration_between": "duration.between",
}
"""GQL's functions (lower-case) -> the registry's function of the same meaning: Drasi's GQL
function set (drasi-core ``functions-gql``) and the future and past functions its core
registers for every language. ``reduce`` and ``CAST`` have syntax of their own."""

CAST_TARGETS: Mapping[str, str] = {
    "STRING": "tostring",
    "INTEGER": "tointeger",
    "INT": "tointeger",
    "FLOAT": "tofloat",
    "BOOLEAN": "toboolean",
    "BOOL": "toboolean",
}
"""``CAST(x AS T)``: the conversion function of each target type (Drasi's ``cast`` calls the
same conversions)."""

_CYPHER_NAMES: Mapping[str, str] = {
    **{registry: gql for gql, registry in FUNCTIONS.items() if registry != gql},
    **{registry: f"CAST(x AS {target})" for target, registry in CAST_TARGETS.items()},
    "toupper": "upper",
    "tolower": "lower",
}
"""Registry (Cypher) names -> what GQL writes instead, for the hint of an unknown function."""

_UNSUPPORTED_WORDS: Mapping[str, str] = {
    "ORDER": unsupported("ORDER BY"),
    "SKIP": unsupported("SKIP"),
    "OFFSET": unsupported("OFFSET"),
    "LIMIT": unsupported("LIMIT"),
    "DISTINCT": unsupported("DISTINCT"),
    "UNION": unsupported("UNION"),
    "INSERT": unsupported("INSERT"),
    "CREATE": unsupported("CREATE"),
    "SET": unsupported("SET"),
    "DELETE": unsupported("DELETE"),
    "REMOVE": unsupported("REMOVE"),
    "DETACH": unsupported("DETACH DELETE"),
    "CALL": unsupported("CALL"),
    "FOR": unsupported("FOR"),
    "USE": unsupported("USE"),
    "UNWIND": "UNWIND is Cypher, and not supported in continuous queries",
    "WITH": "WITH is Cypher; a GQL query projects with LET, YIELD or RETURN ... NEXT",
    "IS": "the label expression `IS Label` is not supported; write (n:Label)",
}
"""Words that start what GQL continuous queries do not support, -> the error's message."""


def parse_gql(text: str) -> ast.Query:
    """Parse a continuous query written in GQL (module docstring).

    Returns the query's AST, parts as Drasi builds them, column names resolved. Raises
    :class:`~drasi_ray.model.errors.QuerySyntaxError` (or its subclass
    :class:`~drasi_ray.model.errors.UnsupportedQueryError`) naming the line and column of the
    first problem found.
    """
    tree = parse_tree(text, GQL, "start", _UNSUPPORTED_WORDS)
    query = transform(tree, _GqlBuilder(text, reserved_words(GQL)))
    assert isinstance(query, ast.Query)
    return query


# --------------------------------------------------------------------------- clauses as parsed


@dataclass(frozen=True, slots=True)
class _Item:
    """A RETURN or YIELD column as written: ``alias`` None when it has none."""

    expression: ast.Expr
    alias: str | None
    name: str
    position: ast.Position

    def column(self) -> ast.ProjectionItem:
        return ast.ProjectionItem(self.expression, self.name)


@dataclass(frozen=True, slots=True)
class _Let:
    bindings: tuple[tuple[str, ast.Expr], ...]


@dataclass(frozen=True, slots=True)
class _Filter:
    condition: ast.Expr


@dataclass(frozen=True, slots=True)
class _Yield:
    items: tuple[_Item, ...]


_Statement: TypeAlias = _Let | _Filter | _Yield


@dataclass(frozen=True, slots=True)
class _Return:
    items: tuple[_Item, ...]
    keys: tuple[ast.Expr, ...] | None
    """The GROUP BY keys; None: no GROUP BY."""
    position: ast.Position


@dataclass(frozen=True, slots=True)
class _Segment:
    """The query up to its first NEXT (with its MATCH clauses), or a segment after a NEXT."""

    matches: tuple[ast.MatchClause, ...]
    statements: tuple[_Statement, ...]
    returns: _Return


@dataclass(frozen=True, slots=True)
class _Part:
    """A query part as Drasi builds it: MATCH clauses, or (a FILTER's part) a condition on the
    previous part's rows, then the columns projected."""

    matches: tuple[ast.MatchClause, ...]
    condition: ast.Expr | None
    columns: tuple[ast.ProjectionItem, ...]


@v_args(meta=True)
class _GqlBuilder(AstBuilder):
    """:class:`AstBuilder` for GQL: its query structure, functions and CAST."""

    def start(self, meta: Meta, children: list[Any]) -> ast.Query:
        segments = [child for child in children if isinstance(child, _Segment)]
        parts = _Composer(self).compose(segments)
        query = ast.Query(_query_parts(parts), self._text)
        ScopeChecker(self._variables, _relation_hints(segments[0].matches)).check(query)
        return query

    def gql_part(self, meta: Meta, children: list[Any]) -> _Segment:
        *clauses, returns = children
        matches = tuple(c for c in clauses if isinstance(c, ast.MatchClause))
        statements = tuple(c for c in clauses if not isinstance(c, ast.MatchClause))
        return _Segment(matches, statements, returns)

    def gql_segment(self, meta: Meta, children: list[Any]) -> _Segment:
        *statements, returns = children
        return _Segment((), tuple(statements), returns)

    def let_statement(self, meta: Meta, children: list[Any]) -> _Let:
        return _Let(tuple(children[1:]))

    def let_binding(self, meta: Meta, children: list[Any]) -> tuple[str, ast.Expr]:
        name, _eq, expression = children
        return name, expression

    def filter_statement(self, meta: Meta, children: list[Any]) -> _Filter:
        return _Filter(children[1])

    def yield_statement(self, meta: Meta, children: list[Any]) -> _Yield:
        return _Yield(tuple(children[1:]))

    def gql_return(self, meta: Meta, children: list[Any]) -> _Return:
        items, keys = children
        return _Return(items, keys, position_of(meta))

    def return_clause(self, meta: Meta, children: list[Any]) -> tuple[_Item, ...]:
        items: tuple[_Item, ...] = children[1]
        seen: set[str] = set()
        for item in items:
            if item.name in seen:
                fail(f"column name '{item.name}' is used twice", item.position)
            seen.add(item.name)
        return items

    def projection(self, meta: Meta, children: list[Any]) -> tuple[_Item, ...]:
        return tuple(children)

    def projection_item(self, meta: Meta, children: list[Any]) -> _Item:
        expression, _as, alias = children
        name = alias if alias is not None else self._column_name(expression, meta)
        return _Item(expression, alias, name, position_of(meta))

    def group_by(self, meta: Meta, children: list[Any]) -> tuple[ast.Expr, ...]:
        return tuple(child for child in children if not isinstance(child, Token))

    def group_by_nothing(self, meta: Meta, children: list[Any]) -> tuple[ast.Expr, ...]:
        return ()

    def cast_expression(self, meta: Meta, children: list[Any]) -> ast.FunctionCall:
        _cast, value, _as, target = children
        return self._cast(value, target, position_of(meta))

    def cast_call(self, meta: Meta, children: list[Any]) -> ast.FunctionCall:
        cast, value, target = children
        if not isinstance(target, ast.Literal) or not isinstance(target.value, str):
            fail("cast() takes its type as a text, e.g. cast(x, 'STRING')", position_of(meta))
        return self._cast(value, target.value, position_of(meta), str(cast))

    def _cast(
        self, value: ast.Expr, target: str, position: ast.Position, written: str = "cast"
    ) -> ast.FunctionCall:
        function = CAST_TARGETS.get(target.upper())
        if function is None:
            types = ", ".join(CAST_TARGETS)
            fail(f"CAST to {target} is not supported; cast to one of {types}", position)
        return self._named_call(function, written, (value,), False, position)

    def _function_name(self, written: str, position: ast.Position) -> str:
        name = FUNCTIONS.get(written.lower())
        if name is not None:
            return name
        instead = _CYPHER_NAMES.get(written.lower())
        hint = f"; GQL writes {instead}" if instead else ""
        fail(f"unknown GQL function '{written}'{hint}", position)

    def variable_at(self, name: str, position: ast.Position) -> ast.Variable:
        """A variable the composer writes (a column of the scope), with the position of the
        statement that reads it, for the scope check."""
        variable = ast.Variable(name)
        self._variables[id(variable)] = (variable, position)
        return variable


# --------------------------------------------------------------------------- Drasi's parts


class _Composer:
    """Builds the parts Drasi builds from a GQL query's segments (module docstring)."""

    def __init__(self, builder: _GqlBuilder) -> None:
        self._builder = builder
        self._parts: list[_Part] = []

    def compose(self, segments: Sequence[_Segment]) -> list[_Part]:
        scope: list[str] | None = None
        for number, segment in enumerate(segments):
            if number > 0:
                scope = _next_scope(segments[number - 1].returns)
            self._segment(segment, scope)
        return self._parts

    def _segment(self, segment: _Segment, scope: list[str] | None) -> None:
        pending = segment.matches
        if segment.statements:
            names = scope if scope is not None else _node_variables(segment.matches)
            for statement in segment.statements:
                names = self._statement(statement, pending, names, segment.returns.position)
                pending = ()
        returns = segment.returns
        if returns.keys is None:
            self._parts.append(_Part(pending, None, tuple(i.column() for i in returns.items)))
        else:
            self._grouped(pending, returns, returns.keys)

    def _statement(
        self,
        statement: _Statement,
        pending: tuple[ast.MatchClause, ...],
        scope: list[str],
        position: ast.Position,
    ) -> list[str]:
        """Append the statement's parts; the scope after it."""
        if isinstance(statement, _Let):
            columns: dict[str, ast.Expr] = {
                name: self._builder.variable_at(name, position) for name in scope
            }
            columns.update(statement.bindings)
            self._parts.append(_Part(pending, None, _columns(columns)))
            return list(columns)
        if isinstance(statement, _Yield):
            columns = _yielded(statement, scope)
            self._parts.append(_Part(pending, None, _columns(columns)))
            return list(columns)
        kept = tuple(
            ast.ProjectionItem(self._builder.variable_at(name, position), name) for name in scope
        )
        if pending:
            self._parts.append(_Part(pending, None, kept))
        self._parts.append(_Part((), statement.condition, kept))
        return scope

    def _grouped(
        self, pending: tuple[ast.MatchClause, ...], returns: _Return, keys: tuple[ast.Expr, ...]
    ) -> None:
        items = returns.items
        plain = [item for item in items if not contains_aggregate(item.expression)]
        for item in plain:
            if not any(_is_key(item, key) for key in keys):
                fail(
                    f"RETURN column '{item.name}' must be aggregated or a GROUP BY key",
                    item.position,
                )
        if all(any(_is_key(item, key) for item in plain) for key in keys):
            self._parts.append(_Part(pending, None, tuple(item.column() for item in items)))
            return
        self._parts.append(_Part(pending, None, self._grouping_columns(items, keys)))
        self._parts.append(_Part((), None, tuple(self._shown(item) for item in items)))

    def _grouping_columns(
        self, items: Sequence[_Item], keys: tuple[ast.Expr, ...]
    ) -> tuple[ast.ProjectionItem, ...]:
        """Drasi's first part of a GROUP BY with keys the RETURN does not show: every key (the
        RETURN column standing for it, if any), then the RETURN's aggregates."""
        columns: list[ast.ProjectionItem] = []
        for number, key in enumerate(keys):
            item = next((item for item in items if _is_key(item, key)), None)
            columns.append(item.column() if item is not None else _hidden_key(key, number))
        aggregates = (item for item in items if contains_aggregate(item.expression))
        columns.extend(item.column() for item in aggregates)
        return tuple(columns)

    def _shown(self, item: _Item) -> ast.ProjectionItem:
        """A RETURN column of Drasi's second part of a GROUP BY: the first part's column."""
        if item.alias is None and not isinstance(item.expression, ast.Variable):
            fail(
                f"give RETURN column '{item.name}' a name (AS name): GROUP BY has keys that "
                "the RETURN does not show",
                item.position,
            )
        return ast.ProjectionItem(self._builder.variable_at(item.name, item.position), item.name)


def _is_key(item: _Item, key: ast.Expr) -> bool:
    """Whether RETURN column ``item`` is GROUP BY key ``key``: the same expression unaliased,
    or a key naming the column's alias (as Drasi matches them)."""
    if item.alias is not None:
        return isinstance(key, ast.Variable) and key.name == item.alias
    return item.expression == key


def _hidden_key(key: ast.Expr, number: int) -> ast.ProjectionItem:
    """A GROUP BY key no RETURN column shows, under a name no query can write (so it cannot
    collide with a column)."""
    return ast.ProjectionItem(key, f"group by key {number + 1}")


def _columns(columns: Mapping[str, ast.Expr]) -> tuple[ast.ProjectionItem, ...]:
    return tuple(ast.ProjectionItem(expression, name) for name, expression in columns.items())


def _yielded(statement: _Yield, scope: Sequence[str]) -> dict[str, ast.Expr]:
    columns: dict[str, ast.Expr] = {}
    for item in statement.items:
        expression = item.expression
        if item.alias is not None:
            columns[item.alias] = expression
        elif isinstance(expression, ast.Variable):
            if expression.name not in scope:
                fail(f"variable '{expression.name}' is not defined", item.position)
            columns[expression.name] = expression
        else:
            fail(f"give YIELD column '{item.name}' a name (AS name)", item.position)
    return columns


def _next_scope(returns: _Return) -> list[str]:
    """The columns a NEXT segment starts from: the previous RETURN's, each a variable or
    aliased (as Drasi requires)."""
    for item in returns.items:
        if item.alias is None and not isinstance(item.expression, ast.Variable):
            fail(
                f"give RETURN column '{item.name}' a name (AS name): a NEXT reads it",
                item.position,
            )
    return [item.name for item in returns.items]


def _node_variables(matches: Sequence[ast.MatchClause]) -> list[str]:
    """The first scope of a statement: the MATCH clauses' named node variables, in order."""
    names: dict[str, None] = {}
    for match in matches:
        for path in match.paths:
            names.update((node.variable, None) for node in path.nodes if node.variable)
    return list(names)


def _relation_hints(matches: Sequence[ast.MatchClause]) -> dict[str, str]:
    """A hint for each relation variable: read after a statement, it is not defined."""
    nodes = set(_node_variables(matches))
    return {
        relation.variable: "a LET, FILTER or YIELD keeps the node variables only, as in Drasi"
        for match in matches
        for path in match.paths
        for relation in path.relations
        if relation.variable and relation.variable not in nodes
    }


def _query_parts(parts: Sequence[_Part]) -> tuple[ast.QueryPart, ...]:
    """Drasi's parts as the engine's: a FILTER part's condition becomes the WHERE on the rows
    the part before it projects (as Cypher's ``WITH ... WHERE``)."""
    built: list[ast.QueryPart] = []
    for part in parts:
        if part.condition is not None:
            if not built:
                fail("a FILTER needs a MATCH before it", ast.Position(1, 1))
            previous = built[-1]
            where = ast.Projection(previous.projection.items, part.condition)
            built[-1] = ast.QueryPart(previous.matches, where)
        built.append(ast.QueryPart(part.matches, ast.Projection(part.columns)))
    return tuple(built)
