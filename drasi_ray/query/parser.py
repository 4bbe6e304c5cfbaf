"""Cypher text -> :class:`drasi_ray.query.ast.Query` (docs/semantics.md §3).

:func:`parse_query` is the entry point. It parses with lark's LALR parser and contextual
lexer (grammar in ``grammar.lark``, what the query languages share, and ``cypher.lark``),
builds the typed AST, and rejects everything outside the supported subset *at registration*,
each error carrying the 1-based line and column of the offending token:

- :class:`~drasi_ray.model.errors.QuerySyntaxError` for text that is not Cypher, unknown functions,
  wrong argument counts and misplaced aggregates;
- :class:`~drasi_ray.model.errors.UnsupportedQueryError` for valid Cypher that continuous queries do
  not support (ORDER BY, SKIP, LIMIT, DISTINCT, UNWIND, UNION, CREATE..., count(*),
  variable-length paths).

The GQL front end (:mod:`drasi_ray.query.gql`) builds on what is here: :func:`parse_tree`
with its own grammar, and :class:`AstBuilder` for everything the languages share.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, NoReturn

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import PatternStr
from lark.tree import Meta

from drasi_ray.model.errors import QueryError, QuerySyntaxError, UnsupportedQueryError
from drasi_ray.query import ast, functions, future_functions
from drasi_ray.query.expressions import referenced_variables, walk
from drasi_ray.query.values import I64_MAX


def unsupported(subject: str) -> str:
    return f"{subject} is not supported in continuous queries"


# Clause keywords of full Cypher that continuous queries reject, with the message.
_UNSUPPORTED_WORDS: Mapping[str, str] = {
    "ORDER": unsupported("ORDER BY"),
    "SKIP": unsupported("SKIP"),
    "LIMIT": unsupported("LIMIT"),
    "DISTINCT": unsupported("DISTINCT"),
    "UNWIND": unsupported("UNWIND"),
    "UNION": unsupported("UNION"),
    "CREATE": unsupported("CREATE"),
    "MERGE": unsupported("MERGE"),
    "SET": unsupported("SET"),
    "DELETE": unsupported("DELETE"),
    "REMOVE": unsupported("REMOVE"),
    "DETACH": unsupported("DETACH DELETE"),
    "CALL": unsupported("CALL"),
    "FOREACH": unsupported("FOREACH"),
    "LOAD": unsupported("LOAD CSV"),
    "USE": unsupported("USE"),
}


def parse_query(text: str) -> ast.Query:
    """Parse a continuous query.

    Returns the query's AST with column names resolved. Raises
    :class:`~drasi_ray.model.errors.QuerySyntaxError` (or its subclass
    :class:`~drasi_ray.model.errors.UnsupportedQueryError`) naming the line and column of the first
    problem found.
    """
    tree = parse_tree(text, CYPHER, "start", _UNSUPPORTED_WORDS)
    query = transform(tree, _CypherBuilder(text, reserved_words(CYPHER)))
    assert isinstance(query, ast.Query)
    return query


def parse_expression(text: str) -> ast.Expr:
    """Parse one standalone expression, e.g. ``n.temp * 2 > $limit``.

    Any variable may appear (there is no MATCH to bind it); function names, argument counts
    and nested aggregates are checked as in :func:`parse_query`.
    """
    tree = parse_tree(text, CYPHER, "standalone_expression", _UNSUPPORTED_WORDS)
    expression: ast.Expr = transform(tree, AstBuilder(text, reserved_words(CYPHER)))
    return expression


CYPHER = "cypher"
"""The grammar file of Cypher's query structure, without ``.lark`` (:func:`lark_parser`)."""


def parse_tree(text: str, language: str, start: str, unsupported: Mapping[str, str]) -> Tree[Token]:
    """``text`` parsed from rule ``start`` of ``language``'s grammar (:func:`lark_parser`).

    A syntax error raises :class:`QuerySyntaxError` with its position; where the parse fails
    at a word of ``unsupported`` (upper-case), :class:`UnsupportedQueryError` with its message.
    """
    parser = lark_parser(language)
    try:
        return parser.parse(text, start=start)
    except UnexpectedInput as error:
        raise syntax_error(text, error, parser, unsupported) from None


def transform(tree: Tree[Token], builder: AstBuilder) -> Any:
    """Build the AST of ``tree`` (an error the builder raises comes out as itself)."""
    try:
        return builder.transform(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, QueryError):
            raise error.orig_exc from None
        raise


@functools.lru_cache(maxsize=4)
def lark_parser(language: str) -> Lark:
    """The LALR parser of ``grammar.lark`` followed by ``<language>.lark``, built once per
    process on first use."""
    files = resources.files("drasi_ray.query")
    grammar = "\n".join(
        files.joinpath(name).read_text("utf-8") for name in ("grammar.lark", f"{language}.lark")
    )
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
        start=["start", "standalone_expression"],
    )


@functools.lru_cache(maxsize=4)
def reserved_words(language: str) -> frozenset[str]:
    """The keywords of ``language``'s grammar: its word-bounded terminals (``MATCH:
    /match\\b/i``...)."""
    return frozenset(
        terminal.name
        for terminal in lark_parser(language).terminals
        if terminal.name.isalpha() and terminal.pattern.value.endswith("\\b")
    )


# --------------------------------------------------------------------------- syntax errors


def syntax_error(
    text: str, error: UnexpectedInput, parser: Lark, unsupported: Mapping[str, str]
) -> QuerySyntaxError:
    """Translate lark's error into ours, recognising unsupported clauses by their keyword
    (``unsupported``: upper-case word -> message)."""
    line, column = _error_position(text, error)
    distinct = _distinct_before(text, line, column)
    if distinct is not None:
        # `RETURN DISTINCT n`: DISTINCT lexed as a name, so the parse fails one word later.
        return UnsupportedQueryError("DISTINCT is not supported in continuous queries", *distinct)
    word = _word_at(text, line, column)
    if word.upper() in unsupported:
        return UnsupportedQueryError(unsupported[word.upper()], line, column)
    if isinstance(error, UnexpectedToken) and error.token.type == "$END":
        expected = _expected_text(parser, error.expected)
        return QuerySyntaxError(f"unexpected end of query; expected {expected}", line, column)
    if isinstance(error, UnexpectedToken):
        return QuerySyntaxError(
            f"unexpected {error.token.value!r}; expected {_expected_text(parser, error.expected)}",
            line,
            column,
        )
    if isinstance(error, UnexpectedCharacters) and error.char in "'\"":
        return QuerySyntaxError("unterminated string literal", line, column)
    if isinstance(error, UnexpectedCharacters):
        return QuerySyntaxError(f"unexpected character {error.char!r}", line, column)
    return QuerySyntaxError("invalid query", line, column)


def _error_position(text: str, error: UnexpectedInput) -> tuple[int, int]:
    if isinstance(error, UnexpectedToken) and error.token.type == "$END":
        return end_position(text)
    line, column = getattr(error, "line", None), getattr(error, "column", None)
    if isinstance(line, int) and isinstance(column, int) and line > 0:
        return line, column
    return end_position(text)


def end_position(text: str) -> tuple[int, int]:
    """Position just after the last non-blank character."""
    stripped = text.rstrip()
    lines = stripped.split("\n")
    return len(lines), len(lines[-1]) + 1


def _word_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    if line > len(lines):
        return ""
    match = re.match(r"[A-Za-z_]+", lines[line - 1][column - 1 :])
    return match.group(0) if match else ""


def _distinct_before(text: str, line: int, column: int) -> tuple[int, int] | None:
    """Line and column of a ``DISTINCT`` right before the error position, if there is one."""
    lines = text.split("\n")
    if line > len(lines):
        return None
    before = lines[line - 1][: column - 1]
    match = re.search(r"\b(distinct)\s+$", before, re.IGNORECASE)
    return (line, match.start(1) + 1) if match else None


def _expected_text(parser: Lark, expected: set[str]) -> str:
    """Human names for lark's terminal names, e.g. ``RPAR`` -> ``')'``."""
    names = sorted({_terminal_text(parser, name) for name in expected})
    if len(names) > 8:
        names = [*names[:8], "..."]
    return ", ".join(names) if names else "nothing"


def _terminal_text(parser: Lark, name: str) -> str:
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    if isinstance(pattern, PatternStr):
        return repr(pattern.value)
    if name.isupper() and name.isalpha() and name not in ("NAME", "INTEGER", "FLOAT", "STRING"):
        return name  # a keyword
    return name.lower().replace("_", " ")


# --------------------------------------------------------------------------- AST building


@dataclass(frozen=True, slots=True)
class _Clause:
    """A WITH or RETURN clause while parts are assembled; ``position`` for error messages."""

    projection: ast.Projection
    is_return: bool
    position: ast.Position


def position_of(meta: Meta) -> ast.Position:
    return ast.Position(meta.line, meta.column)


def _token_position(token: Token) -> ast.Position:
    return ast.Position(token.line or 1, token.column or 1)


def fail(message: str, position: ast.Position, *, unsupported: bool = False) -> NoReturn:
    error = UnsupportedQueryError if unsupported else QuerySyntaxError
    raise error(message, position.line, position.column)


def _tokens(children: list[Any]) -> list[Token]:
    return [child for child in children if isinstance(child, Token)]


def _values(children: list[Any]) -> list[Any]:
    """Children that are not tokens nor empty placeholders."""
    return [child for child in children if child is not None and not isinstance(child, Token)]


_BINARY_OPERATORS: dict[str, ast.BinaryOp] = {
    "OR": ast.BinaryOp.OR,
    "XOR": ast.BinaryOp.XOR,
    "AND": ast.BinaryOp.AND,
    "=": ast.BinaryOp.EQ,
    "<>": ast.BinaryOp.NE,
    "!=": ast.BinaryOp.NE,
    "<": ast.BinaryOp.LT,
    "<=": ast.BinaryOp.LE,
    ">": ast.BinaryOp.GT,
    ">=": ast.BinaryOp.GE,
    "IN": ast.BinaryOp.IN,
    "+": ast.BinaryOp.ADD,
    "-": ast.BinaryOp.SUB,
    "*": ast.BinaryOp.MUL,
    "/": ast.BinaryOp.DIV,
    "%": ast.BinaryOp.MOD,
    "^": ast.BinaryOp.POW,
    "STARTS": ast.BinaryOp.STARTS_WITH,
    "ENDS": ast.BinaryOp.ENDS_WITH,
    "CONTAINS": ast.BinaryOp.CONTAINS,
}

_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
}


def _unescape(body: str, position: ast.Position) -> str:
    """Resolve a string literal's backslash escapes (``\\n``, ``\\'``, ``\\u00e9``...)."""

    def replace(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] in "uU":
            return chr(int(escape[1:], 16))
        if escape in _ESCAPES:
            return _ESCAPES[escape]
        fail(f"invalid escape sequence '\\{escape}' in string literal", position)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", replace, body, flags=re.S)


@v_args(meta=True)
class AstBuilder(Transformer[Token, Any]):
    """Builds the AST bottom-up and enforces the subset's rules that need positions: what the
    languages share (patterns, WHERE, expressions, function calls); each language's builder
    adds its query structure (``_CypherBuilder`` here, :mod:`drasi_ray.query.gql`).

    Positions of function calls are remembered on the side (the AST nodes carry none), so
    checks made higher up (an aggregate inside WHERE) can still point at the offending call.
    """

    def __init__(self, text: str, reserved: frozenset[str]) -> None:
        super().__init__()
        self._text = text
        self._reserved = reserved
        # id(call) -> (call, position, name as written); holding the call keeps its id unique.
        self._calls: dict[int, tuple[ast.FunctionCall, ast.Position, str]] = {}
        # id(variable) -> (variable, position), for "variable not defined" errors.
        self._variables: dict[int, tuple[ast.Variable, ast.Position]] = {}

    # ------------------------------------------------------------------ query structure

    def standalone_expression(self, meta: Meta, children: list[Any]) -> ast.Expr:
        expression: ast.Expr = children[0]
        return expression

    def match_clause(self, meta: Meta, children: list[Any]) -> ast.MatchClause:
        optional = any(token.type == "OPTIONAL" for token in _tokens(children))
        paths = tuple(child for child in children if isinstance(child, ast.PathPattern))
        wheres = children[children.index(paths[-1]) + 1 :]
        return ast.MatchClause(paths, optional, ast.conjunction(wheres))

    def where(self, meta: Meta, children: list[Any]) -> ast.Expr:
        """A clause WHERE may call aggregates, as in Drasi (``WHERE drasi.trueFor(sum(o.value) >
        1, ...)``): the part that applies it evaluates them (:mod:`drasi_ray.query.parts`)."""
        expression: ast.Expr = children[1]
        return expression

    def _column_name(self, expression: ast.Expr, meta: Meta) -> str:
        """Alias else property key else identifier else function name else the text."""
        if isinstance(expression, ast.PropertyAccess):
            return expression.key
        if isinstance(expression, ast.Variable):
            return expression.name
        if isinstance(expression, ast.FunctionCall) and id(expression) in self._calls:
            return self._calls[id(expression)][2]
        return " ".join(self._text[meta.start_pos : meta.end_pos].split())

    # ------------------------------------------------------------------ patterns

    def pattern(self, meta: Meta, children: list[Any]) -> ast.PathPattern:
        return ast.PathPattern(tuple(children[0::2]), tuple(children[1::2]))

    def node_pattern(self, meta: Meta, children: list[Any]) -> ast.NodePattern:
        variable, labels, properties, where = children
        return ast.NodePattern(_name_of(variable), labels or (), properties, where)

    def labels(self, meta: Meta, children: list[Any]) -> tuple[str, ...]:
        return tuple(_values(children))

    def label(self, meta: Meta, children: list[Any]) -> str:
        name: str = _values(children)[0]
        return name

    def properties(self, meta: Meta, children: list[Any]) -> ast.MapLiteral:
        (value,) = children
        if not isinstance(value, ast.MapLiteral):
            fail(
                "a parameter as a pattern's property map is not supported; use a map literal",
                position_of(meta),
                unsupported=True,
            )
        for _key, expression in value.items:
            self._no_aggregates(expression, "a pattern")
        return value

    def inline_where(self, meta: Meta, children: list[Any]) -> ast.Expr:
        return self._no_aggregates(children[1], "WHERE")

    def relationship(self, meta: Meta, children: list[Any]) -> ast.RelationPattern:
        left_arrow, _minus, detail, _minus2, right_arrow = children
        direction = _direction(left_arrow, right_arrow)
        if detail is None:
            return ast.RelationPattern(None, (), direction)
        variable, labels, properties, where = detail
        return ast.RelationPattern(_name_of(variable), labels or (), direction, properties, where)

    def short_relationship(self, meta: Meta, children: list[Any]) -> ast.RelationPattern:
        left_arrow, _minus, right_arrow = children
        return ast.RelationPattern(None, (), _direction(left_arrow, right_arrow))

    def rel_detail(self, meta: Meta, children: list[Any]) -> tuple[Any, ...]:
        variable, labels, var_length, properties, where = children
        if var_length is not None:
            fail("variable-length paths are not supported", var_length, unsupported=True)
        return variable, labels, properties, where

    def var_length(self, meta: Meta, children: list[Any]) -> ast.Position:
        return position_of(meta)

    def range(self, meta: Meta, children: list[Any]) -> None:
        return None

    # ------------------------------------------------------------------ operators

    def binary(self, meta: Meta, children: list[Any]) -> ast.Binary:
        left, operator, right = children
        key = (
            operator.value.upper()
            if operator.type in ("OR", "XOR", "AND", "IN")
            else (operator.value)
        )
        return ast.Binary(_BINARY_OPERATORS[key], left, right)

    def string_predicate(self, meta: Meta, children: list[Any]) -> ast.Binary:
        left, right = children[0], children[-1]
        return ast.Binary(_BINARY_OPERATORS[children[1].type], left, right)

    def is_null(self, meta: Meta, children: list[Any]) -> ast.IsNull:
        return ast.IsNull(children[0], negated=False)

    def is_not_null(self, meta: Meta, children: list[Any]) -> ast.IsNull:
        return ast.IsNull(children[0], negated=True)

    def unary(self, meta: Meta, children: list[Any]) -> ast.Expr:
        operator, operand = children
        if operator.type == "NOT":
            return ast.Unary(ast.UnaryOp.NOT, operand)
        if operator.type == "PLUS":
            return ast.Unary(ast.UnaryOp.PLUS, operand)
        # Fold `-5` into a literal: it is what the user means, and it lets -2^63 exist.
        value = operand.value if isinstance(operand, ast.Literal) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return ast.Literal(-value)
        return ast.Unary(ast.UnaryOp.NEGATE, operand)

    def property(self, meta: Meta, children: list[Any]) -> ast.PropertyAccess:
        subject, key = children
        return ast.PropertyAccess(subject, key)

    def index(self, meta: Meta, children: list[Any]) -> ast.Index:
        subject, index = children
        return ast.Index(subject, index)

    def slice(self, meta: Meta, children: list[Any]) -> ast.Slice:
        subject, start, _dots, end = children
        return ast.Slice(subject, start, end)

    # ------------------------------------------------------------------ atoms

    def integer(self, meta: Meta, children: list[Any]) -> ast.Literal:
        text: str = children[0].value
        value = int(text, 16) if text.lower().startswith("0x") else int(text)
        # 2^63 is allowed here only so that the folded `-9223372036854775808` parses.
        if value > I64_MAX + 1:
            fail(f"integer literal {text} is too large", position_of(meta))
        return ast.Literal(value)

    def float(self, meta: Meta, children: list[Any]) -> ast.Literal:
        return ast.Literal(float(children[0].value))

    def string(self, meta: Meta, children: list[Any]) -> ast.Literal:
        return ast.Literal(_unescape(children[0].value[1:-1], position_of(meta)))

    def true(self, meta: Meta, children: list[Any]) -> ast.Literal:
        return ast.Literal(True)

    def false(self, meta: Meta, children: list[Any]) -> ast.Literal:
        return ast.Literal(False)

    def null(self, meta: Meta, children: list[Any]) -> ast.Literal:
        return ast.Literal(None)

    def parameter(self, meta: Meta, children: list[Any]) -> ast.Parameter:
        return ast.Parameter(str(children[0]))

    def variable(self, meta: Meta, children: list[Any]) -> ast.Variable:
        name: str = children[0]
        # The contextual lexer reads a keyword as a name where no keyword fits (`RETURN
        # DISTINCT n`); catch that here, unless the name was quoted with backticks.
        if not self._text.startswith("`", meta.start_pos) and name.upper() in self._reserved:
            if name.upper() == "DISTINCT":
                fail(
                    "DISTINCT is not supported in continuous queries",
                    position_of(meta),
                    unsupported=True,
                )
            fail(
                f"'{name}' is a reserved word; quote it as `{name}` to use it as a name",
                position_of(meta),
            )
        variable = ast.Variable(name)
        self._variables[id(variable)] = (variable, position_of(meta))
        return variable

    def symbolic_name(self, meta: Meta, children: list[Any]) -> str:
        token: Token = children[0]
        if token.type == "ESCAPED_NAME":
            return str(token.value)[1:-1].replace("``", "`")
        return str(token.value)

    def keyword_name(self, meta: Meta, children: list[Any]) -> str:
        return str(children[0].value)

    def property_key(self, meta: Meta, children: list[Any]) -> str:
        key: str = children[0]
        return key

    def list_literal(self, meta: Meta, children: list[Any]) -> ast.Expr:
        items = tuple(child for child in children if child is not None)
        # `[x IN xs]` is a list comprehension with neither WHERE nor `|` (Drasi's iterator);
        # `[(x IN xs)]` stays a list holding one membership test.
        if len(items) == 1 and not self._text[meta.start_pos + 1 :].lstrip().startswith("("):
            (item,) = items
            if (
                isinstance(item, ast.Binary)
                and item.op is ast.BinaryOp.IN
                and isinstance(item.left, ast.Variable)
            ):
                return ast.ListComprehension(item.left.name, item.right, None, None)
        return ast.ListLiteral(items)

    def map_literal(self, meta: Meta, children: list[Any]) -> ast.MapLiteral:
        entries: list[tuple[str, ast.Expr]] = [child for child in children if child is not None]
        seen: set[str] = set()
        for key, _value in entries:
            if key in seen:
                fail(f"duplicate key '{key}' in map literal", position_of(meta))
            seen.add(key)
        return ast.MapLiteral(tuple(entries))

    def map_entry(self, meta: Meta, children: list[Any]) -> tuple[str, ast.Expr]:
        key, value = children
        return key, value

    def case_expression(self, meta: Meta, children: list[Any]) -> ast.Case:
        whens = tuple(child for child in children if isinstance(child, ast.CaseWhen))
        subject = children[1]
        default = children[-2]
        return ast.Case(subject, whens, default)

    def case_when(self, meta: Meta, children: list[Any]) -> ast.CaseWhen:
        return ast.CaseWhen(children[1], children[3])

    def list_comprehension(self, meta: Meta, children: list[Any]) -> ast.ListComprehension:
        head, *rest = children
        variable, source = self._binding(head, meta, "list comprehension")
        predicate: ast.Expr | None = None
        projection: ast.Expr | None = None
        for marker, value in zip(rest[0::2], rest[1::2], strict=False):
            if isinstance(marker, Token) and marker.type == "WHERE":
                predicate = value
            elif isinstance(marker, Token) and marker.type == "PIPE":
                projection = value
        return ast.ListComprehension(variable, source, predicate, projection)

    def reduce_expression(self, meta: Meta, children: list[Any]) -> ast.Reduce:
        _reduce, accumulator, _eq, init, head, _where, predicate, _pipe, expression = children
        variable, source = self._binding(head, meta, "reduce")
        if predicate is not None:
            # Drasi's `reduce(s = 0, x IN xs WHERE p | e)` folds only the items that pass p.
            source = ast.ListComprehension(variable, source, predicate, None)
        return ast.Reduce(accumulator, init, variable, source, expression)

    def _binding(self, head: ast.Expr, meta: Meta, construct: str) -> tuple[str, ast.Expr]:
        """Check that ``head`` reads ``name IN list`` and split it."""
        if (
            isinstance(head, ast.Binary)
            and head.op is ast.BinaryOp.IN
            and isinstance(head.left, ast.Variable)
        ):
            return head.left.name, head.right
        fail(f"{construct} must start with 'variable IN list'", position_of(meta))

    # ------------------------------------------------------------------ function calls

    def arguments(self, meta: Meta, children: list[Any]) -> tuple[bool, tuple[ast.Expr, ...]]:
        distinct = children[0] is not None
        return distinct, tuple(child for child in children[1:] if child is not None)

    def function_call(self, meta: Meta, children: list[Any]) -> ast.FunctionCall:
        name, (distinct, args) = children
        return self._call(name, args, distinct, position_of(meta))

    def namespaced_call(self, meta: Meta, children: list[Any]) -> ast.FunctionCall:
        subject, key, (distinct, args) = children
        namespace = _dotted_name(subject)
        if namespace is None:
            fail(f"'{key}(...)' is not a function call on a namespace", position_of(meta))
        return self._call(f"{namespace}.{key}", args, distinct, position_of(meta))

    def count_star(self, meta: Meta, children: list[Any]) -> NoReturn:
        name = children[0]
        fail(
            f"{name}(*) is not supported in continuous queries; count a variable instead, "
            f"e.g. {name}(n)",
            position_of(meta),
            unsupported=True,
        )

    def _call(
        self, written: str, args: tuple[ast.Expr, ...], distinct: bool, position: ast.Position
    ) -> ast.FunctionCall:
        return self._named_call(
            self._function_name(written, position), written, args, distinct, position
        )

    def _function_name(self, written: str, position: ast.Position) -> str:
        """The registry name of the function called ``written`` (its language's name for it)."""
        return written.lower()

    def _named_call(
        self,
        name: str,
        written: str,
        args: tuple[ast.Expr, ...],
        distinct: bool,
        position: ast.Position,
    ) -> ast.FunctionCall:
        """A call of registry function ``name``, written ``written`` (what messages and the
        column name say), with its arguments checked."""
        if functions.is_aggregate(name):
            self._check_aggregate_call(name, written, args, position)
        else:
            self._check_scalar_call(name, written, args, distinct, position)
        call = ast.FunctionCall(name, args, distinct)
        self._calls[id(call)] = (call, position, written)
        return call

    def _check_aggregate_call(
        self, name: str, written: str, args: tuple[ast.Expr, ...], position: ast.Position
    ) -> None:
        wanted = functions.aggregate_argument_count(name)
        if len(args) != wanted:
            noun = "argument" if wanted == 1 else "arguments"
            fail(f"{written}() takes {wanted} {noun}, got {len(args)}", position)
        nested = next(filter(None, map(self._first_aggregate, args)), None)
        if nested is not None:
            fail(
                f"aggregate function {nested[1]}() cannot be nested inside {written}()",
                nested[0],
            )

    def _check_scalar_call(
        self,
        name: str,
        written: str,
        args: tuple[ast.Expr, ...],
        distinct: bool,
        position: ast.Position,
    ) -> None:
        spec = functions.lookup(name) or future_functions.lookup(name)
        if spec is None:
            fail(f"unknown function '{written}'", position)
        if distinct:
            fail(
                f"DISTINCT is only allowed in aggregate functions, not in {written}()",
                position,
                unsupported=True,
            )
        if not spec.accepts(len(args)):
            fail(f"{written}() takes {spec.arity_text()}, got {len(args)}", position)

    # ------------------------------------------------------------------ aggregate checks

    def _no_aggregates(self, expression: ast.Expr, where: str) -> ast.Expr:
        found = self._first_aggregate(expression)
        if found is not None:
            fail(f"aggregate function {found[1]}() is not allowed in {where}", found[0])
        return expression

    def _first_aggregate(self, expression: ast.Expr) -> tuple[ast.Position, str] | None:
        """Position and written name of the first aggregate call in ``expression``."""
        for node in walk(expression):
            if isinstance(node, ast.FunctionCall) and functions.is_aggregate(node.name):
                _call, position, written = self._calls[id(node)]
                return position, written
        return None


@v_args(meta=True)
class _CypherBuilder(AstBuilder):
    """:class:`AstBuilder` for Cypher: parts, each its MATCH clauses then a WITH or RETURN."""

    def start(self, meta: Meta, children: list[Any]) -> ast.Query:
        parts: list[tuple[list[ast.MatchClause], _Clause]] = [
            child for child in children if isinstance(child, tuple)
        ]
        for _matches, clause in parts[:-1]:
            if clause.is_return:
                fail("RETURN must be the last clause of a query", clause.position)
        if not parts[-1][1].is_return:
            line, column = end_position(self._text)
            fail("a query must end with RETURN", ast.Position(line, column))
        query = ast.Query(
            tuple(ast.QueryPart(tuple(matches), clause.projection) for matches, clause in parts),
            self._text,
        )
        ScopeChecker(self._variables).check(query)
        return query

    def part(self, meta: Meta, children: list[Any]) -> tuple[list[ast.MatchClause], _Clause]:
        *matches, clause = children
        return matches, clause

    def with_clause(self, meta: Meta, children: list[Any]) -> _Clause:
        _with, projection, *wheres = children
        return _Clause(
            ast.Projection(projection, ast.conjunction(wheres)), False, position_of(meta)
        )

    def return_clause(self, meta: Meta, children: list[Any]) -> _Clause:
        return _Clause(ast.Projection(children[1]), True, position_of(meta))

    def projection(self, meta: Meta, children: list[Any]) -> tuple[ast.ProjectionItem, ...]:
        items: tuple[ast.ProjectionItem, ...] = tuple(children)
        seen: set[str] = set()
        for item in items:
            if item.name in seen:
                fail(f"column name '{item.name}' is used twice", position_of(meta))
            seen.add(item.name)
        return items

    def projection_item(self, meta: Meta, children: list[Any]) -> ast.ProjectionItem:
        expression, _as, alias = children
        if alias is not None:
            return ast.ProjectionItem(expression, alias)
        return ast.ProjectionItem(expression, self._column_name(expression, meta))


def _direction(left_arrow: Token | None, right_arrow: Token | None) -> ast.Direction:
    if (left_arrow is None) == (right_arrow is None):
        return ast.Direction.BOTH
    return ast.Direction.IN if left_arrow is not None else ast.Direction.OUT


def _name_of(variable: ast.Variable | None) -> str | None:
    return None if variable is None else variable.name


def _dotted_name(expression: ast.Expr) -> str | None:
    """``a.b.c`` built of a variable and property keys, as text; None for anything else."""
    if isinstance(expression, ast.Variable):
        return expression.name
    if isinstance(expression, ast.PropertyAccess):
        prefix = _dotted_name(expression.subject)
        return None if prefix is None else f"{prefix}.{expression.key}"
    return None


class ScopeChecker:
    """Rejects expressions that read a variable no clause has bound at that point.

    Scope grows clause by clause: a MATCH binds its pattern variables (usable in its own
    WHERE and in later clauses); a WITH replaces the scope with its column names, which is
    also what its WHERE sees. Without this check the mistake would surface only as an
    evaluation error on the first change.
    """

    def __init__(
        self,
        positions: dict[int, tuple[ast.Variable, ast.Position]],
        hints: Mapping[str, str] | None = None,
    ) -> None:
        self._positions = positions
        self._hints = hints or {}

    def check(self, query: ast.Query) -> None:
        scope: frozenset[str] = frozenset()
        for part in query.parts:
            for match in part.matches:
                scope |= _pattern_variables(match)
                for expression in _match_expressions(match):
                    self._check(expression, scope)
            for item in part.projection.items:
                self._check(item.expression, scope)
            scope = frozenset(item.name for item in part.projection.items)
            if part.projection.where is not None:
                self._check(part.projection.where, scope)

    def _check(self, expression: ast.Expr, scope: frozenset[str]) -> None:
        missing = referenced_variables(expression) - scope
        if not missing:
            return
        for node in walk(expression):
            if isinstance(node, ast.Variable) and node.name in missing:
                _variable, position = self._positions[id(node)]
                hint = self._hints.get(node.name)
                hinted = f" ({hint})" if hint else ""
                fail(f"variable '{node.name}' is not defined{hinted}", position)


def _pattern_variables(match: ast.MatchClause) -> frozenset[str]:
    names: set[str] = set()
    for element in _pattern_elements(match):
        if element.variable is not None:
            names.add(element.variable)
    return frozenset(names)


def _pattern_elements(match: ast.MatchClause) -> Iterator[ast.NodePattern | ast.RelationPattern]:
    for path in match.paths:
        yield from path.nodes
        yield from path.relations


def _match_expressions(match: ast.MatchClause) -> Iterator[ast.Expr]:
    """Every expression in a MATCH clause: inline maps and WHEREs, then the clause's WHERE."""
    for element in _pattern_elements(match):
        if element.properties is not None:
            yield element.properties
        if element.where is not None:
            yield element.where
    if match.where is not None:
        yield match.where
