"""Compile AST expressions into nested Python closures.

:func:`compile_expression` walks the AST once, when a query is registered, and returns a
closure that evaluates the expression against a *row*: a mapping from variable name to value,
where a graph-bound variable holds a :class:`~drasi_ray.model.changes.Element`. Evaluating does no
dispatch on node types (that happened at compile time), which keeps per-change work small.

Evaluation follows :mod:`drasi_ray.query.values`; a closure may raise
:class:`~drasi_ray.query.values.RowDropped` (the engine drops that row) or
:class:`~drasi_ray.model.errors.QueryEvaluationError` (a type error).

Aggregate calls cannot be compiled here: the engine evaluates them and substitutes their
value (compiling one raises :class:`~drasi_ray.model.errors.QueryEvaluationError`).

Functions that read the evaluation context (the query's clock, the row being evaluated) are
bound to the :class:`~drasi_ray.query.evaluation.EvaluationContext` given at compile time; Drasi's
stateful functions (:mod:`drasi_ray.query.future_functions`) need the context of a continuous
query, which holds their state.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeAlias

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryError, QueryEvaluationError
from drasi_ray.query import ast, functions, future_functions, values
from drasi_ray.query.evaluation import EvaluationContext
from drasi_ray.query.failures import RowDropped

Row: TypeAlias = Mapping[str, Any]
Evaluator: TypeAlias = Callable[[Row], Any]
Predicate: TypeAlias = Callable[[Row], bool]


def compile_expression(
    expr: ast.Expr, parameters: Mapping[str, Any], context: EvaluationContext | None = None
) -> Evaluator:
    """Compile ``expr`` into ``evaluate(row) -> value``.

    ``parameters`` binds ``$name`` parameters; they are read now, so a missing one raises
    :class:`~drasi_ray.model.errors.QueryError` at compile time rather than on the first change.
    ``context`` is the query's evaluation context (None: a private one on the wall clock,
    without stateful functions).
    """
    return _Compiler(parameters, context).compile(expr)


def compile_predicate(
    expr: ast.Expr, parameters: Mapping[str, Any], context: EvaluationContext | None = None
) -> Predicate:
    """Compile a WHERE condition: the row passes only when ``expr`` is exactly ``true``
    (null and false both fail, as Drasi).

    A top-level ``a AND b AND ...`` stops at the first conjunct that is not true. The AND
    operator itself evaluates both sides (Drasi's rule, see :func:`_and`), but here the only
    difference that could make is a row dropped (or refused) instead of failing, and a WHERE
    treats those alike: the row does not pass. Not so when a stateful function is called: it
    must see every evaluation (``previousDistinctValue`` learns the values that fail the
    other conjuncts), so then every conjunct is evaluated, as Drasi does.
    """
    if contains_stateful(expr):
        whole = compile_expression(expr, parameters, context)
        return lambda row: whole(row) is True
    conjuncts = [compile_expression(part, parameters, context) for part in _conjuncts(expr)]
    if len(conjuncts) == 1:
        (evaluate,) = conjuncts

        def predicate(row: Row) -> bool:
            return evaluate(row) is True

        return predicate

    def all_true(row: Row) -> bool:
        return all(evaluate(row) is True for evaluate in conjuncts)

    return all_true


def compile_filter(
    expr: ast.Expr, parameters: Mapping[str, Any], context: EvaluationContext | None = None
) -> Predicate:
    """Compile a WHERE as a row filter: :func:`compile_predicate`, and a row whose
    evaluation is dropped (division by zero) or fails (a type error) does not pass either."""
    predicate = compile_predicate(expr, parameters, context)

    def passes(row: Row) -> bool:
        try:
            return predicate(row)
        except values.REFUSED:
            return False

    return passes


def _conjuncts(expr: ast.Expr) -> list[ast.Expr]:
    """``a AND b AND c`` as ``[a, b, c]`` (any other expression as itself)."""
    if isinstance(expr, ast.Binary) and expr.op is ast.BinaryOp.AND:
        return [*_conjuncts(expr.left), *_conjuncts(expr.right)]
    return [expr]


# --------------------------------------------------------------------------- tree queries


def child_expressions(expr: ast.Expr) -> tuple[ast.Expr, ...]:
    """The direct sub-expressions of ``expr``."""
    handler = _CHILDREN.get(type(expr))
    return handler(expr) if handler is not None else ()


def walk(expr: ast.Expr) -> Iterator[ast.Expr]:
    """Every node of ``expr``, parents before children."""
    yield expr
    for child in child_expressions(expr):
        yield from walk(child)


def contains_stateful(expr: ast.Expr) -> bool:
    """True if one of Drasi's stateful functions is called anywhere in ``expr``."""
    return any(
        isinstance(node, ast.FunctionCall) and node.name in future_functions.SPECS
        for node in walk(expr)
    )


def contains_aggregate(expr: ast.Expr) -> bool:
    """True if an aggregate function is called anywhere in ``expr``."""
    return any(
        isinstance(node, ast.FunctionCall) and node.name in ast.AGGREGATE_FUNCTIONS
        for node in walk(expr)
    )


def referenced_variables(expr: ast.Expr) -> frozenset[str]:
    """The free variables ``expr`` reads from its row.

    Variables bound inside the expression (a list comprehension's or reduce's) are not free.
    """
    if isinstance(expr, ast.Variable):
        return frozenset((expr.name,))
    if isinstance(expr, ast.ListComprehension):
        inner = _free(expr.predicate, expr.projection) - {expr.variable}
        return referenced_variables(expr.source) | inner
    if isinstance(expr, ast.Reduce):
        inner = referenced_variables(expr.expression) - {expr.variable, expr.accumulator}
        return referenced_variables(expr.init) | referenced_variables(expr.source) | inner
    return _free(*child_expressions(expr))


def _free(*exprs: ast.Expr | None) -> frozenset[str]:
    found: frozenset[str] = frozenset()
    for expr in exprs:
        if expr is not None:
            found |= referenced_variables(expr)
    return found


def _case_children(case: ast.Case) -> tuple[ast.Expr, ...]:
    parts: list[ast.Expr] = [] if case.subject is None else [case.subject]
    for when in case.whens:
        parts.extend((when.when, when.then))
    if case.default is not None:
        parts.append(case.default)
    return tuple(parts)


def _present(*items: ast.Expr | None) -> tuple[ast.Expr, ...]:
    return tuple(item for item in items if item is not None)


_CHILDREN: dict[type, Callable[[Any], tuple[ast.Expr, ...]]] = {
    ast.PropertyAccess: lambda node: (node.subject,),
    ast.Index: lambda node: (node.subject, node.index),
    ast.Slice: lambda node: _present(node.subject, node.start, node.end),
    ast.ListLiteral: lambda node: node.items,
    ast.MapLiteral: lambda node: tuple(value for _key, value in node.items),
    ast.Unary: lambda node: (node.operand,),
    ast.Binary: lambda node: (node.left, node.right),
    ast.IsNull: lambda node: (node.operand,),
    ast.FunctionCall: lambda node: node.args,
    ast.Case: _case_children,
    ast.ListComprehension: lambda node: _present(node.source, node.predicate, node.projection),
    ast.Reduce: lambda node: (node.init, node.source, node.expression),
}


# --------------------------------------------------------------------------- the compiler

_BINARY_FUNCTIONS: dict[ast.BinaryOp, Callable[[Any, Any], Any]] = {
    ast.BinaryOp.XOR: values.logical_xor,
    ast.BinaryOp.EQ: values.equals,
    ast.BinaryOp.NE: values.not_equals,
    ast.BinaryOp.LT: values.less_than,
    ast.BinaryOp.LE: values.less_equal,
    ast.BinaryOp.GT: values.greater_than,
    ast.BinaryOp.GE: values.greater_equal,
    ast.BinaryOp.ADD: values.add,
    ast.BinaryOp.SUB: values.subtract,
    ast.BinaryOp.MUL: values.multiply,
    ast.BinaryOp.DIV: values.divide,
    ast.BinaryOp.MOD: values.modulo,
    ast.BinaryOp.POW: values.power,
    ast.BinaryOp.IN: values.in_list,
    ast.BinaryOp.STARTS_WITH: values.starts_with,
    ast.BinaryOp.ENDS_WITH: values.ends_with,
    ast.BinaryOp.CONTAINS: values.contains,
}

# Operators whose result on two plain numbers (never bools) is Python's own: evaluated
# inline, skipping the general type checks of drasi_ray.query.values. `/`, `%` and `^` are
# not here: they need the zero-divisor and Float rules.
_NUMERIC_FAST_PATHS: dict[ast.BinaryOp, Callable[[Any, Any], Any]] = {
    ast.BinaryOp.EQ: operator.eq,
    ast.BinaryOp.NE: operator.ne,
    ast.BinaryOp.LT: operator.lt,
    ast.BinaryOp.LE: operator.le,
    ast.BinaryOp.GT: operator.gt,
    ast.BinaryOp.GE: operator.ge,
    ast.BinaryOp.ADD: operator.add,
    ast.BinaryOp.SUB: operator.sub,
    ast.BinaryOp.MUL: operator.mul,
}

_UNARY_FUNCTIONS: dict[ast.UnaryOp, Callable[[Any], Any]] = {
    ast.UnaryOp.NOT: values.logical_not,
    ast.UnaryOp.NEGATE: values.negate,
    ast.UnaryOp.PLUS: values.unary_plus,
}


class _Compiler:
    """Turns one AST into closures; dispatch on node type happens here, once."""

    def __init__(self, parameters: Mapping[str, Any], context: EvaluationContext | None) -> None:
        self._parameters = parameters
        self._context = context
        self._dispatch: dict[type, Callable[[Any], Evaluator]] = {
            ast.Literal: self._literal,
            ast.Parameter: self._parameter,
            ast.Variable: self._variable,
            ast.PropertyAccess: self._property,
            ast.Index: self._index,
            ast.Slice: self._slice,
            ast.ListLiteral: self._list,
            ast.MapLiteral: self._map,
            ast.Unary: self._unary,
            ast.Binary: self._binary,
            ast.IsNull: self._is_null,
            ast.FunctionCall: self._call,
            ast.Case: self._case,
            ast.ListComprehension: self._comprehension,
            ast.Reduce: self._reduce,
        }

    def compile(self, expr: ast.Expr) -> Evaluator:
        handler = self._dispatch.get(type(expr))
        if handler is None:
            raise QueryEvaluationError(f"cannot compile expression node {expr!r}")
        return handler(expr)

    # ------------------------------------------------------------------ leaves

    def _literal(self, expr: ast.Literal) -> Evaluator:
        return _constant(expr.value)

    def _parameter(self, expr: ast.Parameter) -> Evaluator:
        if expr.name not in self._parameters:
            raise QueryError(f"parameter ${expr.name} is not defined")
        return _constant(self._parameters[expr.name])

    def _variable(self, expr: ast.Variable) -> Evaluator:
        name = expr.name

        def variable(row: Row) -> Any:
            try:
                return row[name]
            except KeyError:
                raise QueryEvaluationError(f"variable '{name}' is not defined") from None

        return variable

    # ------------------------------------------------------------------ access

    def _property(self, expr: ast.PropertyAccess) -> Evaluator:
        if isinstance(expr.subject, ast.Variable):
            return _variable_property(expr.subject.name, expr.key)
        subject, key = self.compile(expr.subject), expr.key
        property_of = values.property_of

        def access(row: Row) -> Any:
            value = subject(row)
            # Elements are by far the most common subject: read them without a call.
            if type(value) is Element:
                return value.properties.get(key)
            return property_of(value, key)

        return access

    def _index(self, expr: ast.Index) -> Evaluator:
        subject, index = self.compile(expr.subject), self.compile(expr.index)
        return lambda row: values.index(subject(row), index(row))

    def _slice(self, expr: ast.Slice) -> Evaluator:
        subject = self.compile(expr.subject)
        start = self._optional(expr.start)
        end = self._optional(expr.end)

        def slice_(row: Row) -> Any:
            lower, upper = start(row), end(row)
            # An explicit null bound makes the whole slice null (openCypher).
            if (lower is None and expr.start is not None) or (
                upper is None and expr.end is not None
            ):
                return None
            return values.slice_list(subject(row), lower, upper)

        return slice_

    def _optional(self, expr: ast.Expr | None) -> Evaluator:
        return _constant(None) if expr is None else self.compile(expr)

    # ------------------------------------------------------------------ collections

    def _list(self, expr: ast.ListLiteral) -> Evaluator:
        items = tuple(self.compile(item) for item in expr.items)
        return lambda row: [item(row) for item in items]

    def _map(self, expr: ast.MapLiteral) -> Evaluator:
        entries = tuple((key, self.compile(value)) for key, value in expr.items)
        return lambda row: {key: value(row) for key, value in entries}

    # ------------------------------------------------------------------ operators

    def _unary(self, expr: ast.Unary) -> Evaluator:
        operand, apply = self.compile(expr.operand), _UNARY_FUNCTIONS[expr.op]
        return lambda row: apply(operand(row))

    def _binary(self, expr: ast.Binary) -> Evaluator:
        left, right = self.compile(expr.left), self.compile(expr.right)
        if expr.op is ast.BinaryOp.AND:
            return _and(left, right)
        if expr.op is ast.BinaryOp.OR:
            return _or(left, right)
        general = _BINARY_FUNCTIONS[expr.op]
        fast = _NUMERIC_FAST_PATHS.get(expr.op)
        if fast is None and expr.op is ast.BinaryOp.DIV:
            fast = _divide_numbers
        if fast is None:
            return lambda row: general(left(row), right(row))
        constant = _plain_number(expr.right)
        if constant is not None:
            return _numeric_binary_constant(left, constant, fast, general)
        constant = _plain_number(expr.left)
        if constant is not None:
            return _numeric_constant_binary(constant, right, fast, general)
        return _numeric_binary(left, right, fast, general)

    def _is_null(self, expr: ast.IsNull) -> Evaluator:
        operand = self.compile(expr.operand)
        if expr.negated:
            return lambda row: operand(row) is not None
        return lambda row: operand(row) is None

    # ------------------------------------------------------------------ calls

    def _call(self, expr: ast.FunctionCall) -> Evaluator:
        if expr.name in ast.AGGREGATE_FUNCTIONS:
            raise QueryEvaluationError(
                f"aggregate function {expr.name}() must be evaluated by the engine, "
                "not compiled as a scalar expression"
            )
        spec = functions.lookup(expr.name) or future_functions.lookup(expr.name)
        if spec is None:
            raise QueryEvaluationError(f"unknown function '{expr.name}'")
        if not spec.accepts(len(expr.args)):
            raise QueryEvaluationError(
                f"{expr.name}() takes {spec.arity_text()}, got {len(expr.args)}"
            )
        args = tuple(self.compile(arg) for arg in expr.args)
        if expr.name in future_functions.SPECS:
            call: Evaluator = future_functions.compile_call(expr.name, args, self._own_context())
            return call
        if spec.contextual:
            context = self._own_context()
            context.reads_clock = True
            return _call(functools.partial(spec.impl, context), args)
        return _call(spec.impl, args)

    def _own_context(self) -> EvaluationContext:
        """The query's context, or a private one made on first need."""
        if self._context is None:
            self._context = EvaluationContext()
        return self._context

    # ------------------------------------------------------------------ CASE

    def _case(self, expr: ast.Case) -> Evaluator:
        whens = tuple((self.compile(w.when), self.compile(w.then)) for w in expr.whens)
        default = self._optional(expr.default)
        if expr.subject is None:
            return _searched_case(whens, default)
        return _simple_case(self.compile(expr.subject), whens, default)

    # ------------------------------------------------------------------ list forms

    def _comprehension(self, expr: ast.ListComprehension) -> Evaluator:
        source, name = self.compile(expr.source), expr.variable
        predicate = None if expr.predicate is None else self.compile(expr.predicate)
        projection = None if expr.projection is None else self.compile(expr.projection)

        def comprehension(row: Row) -> Any:
            items = _iterable(source(row), "list comprehension")
            if items is None:
                return None
            result = []
            for item in items:
                scope = {**row, name: item}
                if predicate is not None and predicate(scope) is not True:
                    continue
                result.append(item if projection is None else projection(scope))
            return result

        return comprehension

    def _reduce(self, expr: ast.Reduce) -> Evaluator:
        init, source, body = (
            self.compile(expr.init),
            self.compile(expr.source),
            self.compile(expr.expression),
        )
        accumulator, name = expr.accumulator, expr.variable

        def reduce_(row: Row) -> Any:
            items = _iterable(source(row), "reduce")
            if items is None:
                return None
            value = init(row)
            for item in items:
                value = body({**row, accumulator: value, name: item})
            return value

        return reduce_


# --------------------------------------------------------------------------- closure makers


def _constant(value: Any) -> Evaluator:
    return lambda _row: value


def _variable_property(name: str, key: str) -> Evaluator:
    """``n.key``, the most common expression of all, in one closure (no nested call)."""
    property_of = values.property_of

    def access(row: Row) -> Any:
        try:
            value = row[name]
        except KeyError:
            raise QueryEvaluationError(f"variable '{name}' is not defined") from None
        if type(value) is Element:
            return value.properties.get(key)
        return property_of(value, key)

    return access


def _plain_number(expr: ast.Expr) -> int | float | None:
    """The value of a numeric literal (never a bool), else None."""
    if isinstance(expr, ast.Literal) and type(expr.value) in (int, float):
        value: int | float = expr.value
        return value
    return None


def _divide_numbers(left: int | float, right: int | float) -> Any:
    """``/`` of two plain numbers: Float, and a zero divisor drops the row (as
    :func:`values.divide`, without its type dispatch)."""
    if right == 0:
        raise RowDropped("division by zero")
    return float(left) / float(right)


def _numeric_binary_constant(
    left: Evaluator,
    constant: int | float,
    fast: Callable[[Any, Any], Any],
    general: Callable[[Any, Any], Any],
) -> Evaluator:
    """``expr <op> literal``: the literal needs no evaluation (``r.temperature - 72``)."""
    numbers = (int, float)

    def binary(row: Row) -> Any:
        first = left(row)
        if type(first) in numbers:
            return fast(first, constant)
        return general(first, constant)

    return binary


def _numeric_constant_binary(
    constant: int | float,
    right: Evaluator,
    fast: Callable[[Any, Any], Any],
    general: Callable[[Any, Any], Any],
) -> Evaluator:
    """``literal <op> expr``: the literal needs no evaluation (``50 + r.level``)."""
    numbers = (int, float)

    def binary(row: Row) -> Any:
        second = right(row)
        if type(second) in numbers:
            return fast(constant, second)
        return general(constant, second)

    return binary


def _numeric_binary(
    left: Evaluator,
    right: Evaluator,
    fast: Callable[[Any, Any], Any],
    general: Callable[[Any, Any], Any],
) -> Evaluator:
    numbers = (int, float)  # exact types: bool, an int subclass, must take the general path

    def binary(row: Row) -> Any:
        first, second = left(row), right(row)
        if type(first) in numbers and type(second) in numbers:
            return fast(first, second)
        return general(first, second)

    return binary


def _and(left: Evaluator, right: Evaluator) -> Evaluator:
    """AND evaluates both sides, as Drasi does (no short-circuit): ``false AND 1 / 0 = 1``
    drops the row like the division alone would."""
    logical_and = values.logical_and
    return lambda row: logical_and(left(row), right(row))


def _or(left: Evaluator, right: Evaluator) -> Evaluator:
    """OR evaluates both sides, as AND does."""
    logical_or = values.logical_or
    return lambda row: logical_or(left(row), right(row))


def _call(impl: Callable[..., Any], args: tuple[Evaluator, ...]) -> Evaluator:
    """Specialise the common arities so a call costs one Python call per argument."""
    if not args:
        return lambda _row: impl()
    if len(args) == 1:
        (only,) = args
        return lambda row: impl(only(row))
    if len(args) == 2:
        first, second = args
        return lambda row: impl(first(row), second(row))
    return lambda row: impl(*[arg(row) for arg in args])


def _searched_case(whens: tuple[tuple[Evaluator, Evaluator], ...], default: Evaluator) -> Evaluator:
    def case(row: Row) -> Any:
        for when, then in whens:
            if when(row) is True:
                return then(row)
        return default(row)

    return case


def _simple_case(
    subject: Evaluator, whens: tuple[tuple[Evaluator, Evaluator], ...], default: Evaluator
) -> Evaluator:
    equals = values.equals

    def case(row: Row) -> Any:
        value = subject(row)
        for when, then in whens:
            if equals(value, when(row)):
                return then(row)
        return default(row)

    return case


def _iterable(value: Any, construct: str) -> Any:
    if value is None or values.is_list(value):
        return value
    raise QueryEvaluationError(f"{construct} expects a List, got {values.type_name(value)}")
