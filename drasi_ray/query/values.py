"""Drasi's value semantics, as small functions the compiled expressions call.

Values at evaluation time are plain Python objects: ``None`` (null), ``bool``, ``int``,
``float``, ``str``, ``list``/``tuple`` (lists), ``dict`` (maps, including
:class:`~drasi_ray.model.changes.FrozenMap`), :class:`~drasi_ray.model.changes.Element` (a
graph-bound variable) and the temporal types of :mod:`drasi_ray.query.temporal`.

Rules that differ from plain Python, and why:

- ``bool`` is a subclass of ``int`` in Python but not a number in Cypher: ``true = 1`` is
  false and ``true + 1`` is a type error, so every numeric check excludes ``bool``.
- ``null = null`` is true and ``x = null`` is false (Drasi's rule): equality never yields null.
  ``<>`` is false between values of different kinds, null included (Drasi's), so ``x <> 'b1'``
  fails for a missing ``x``.
  Ordering comparisons with null, or between incomparable types, are false (Drasi's
  comparisons are total; openCypher would give null).
- Int and Float compare by value everywhere (``5 = 5.0``), as docs/semantics.md §3 requires.
- ``/`` always gives Float. Division (or ``%``) by zero raises :class:`RowDropped`: the engine
  catches it and drops the row being evaluated instead of failing the whole query.
- :data:`AWAITING` is Drasi's ``Awaiting``: what a future function returns while its answer
  is not due yet. It is a value like any other: not true (so a WHERE fails and ``NOT`` of it
  is true), equal only to itself, not null, and written ``"Awaiting"`` in results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.model.value_kinds import value_kind
from drasi_ray.query import temporal
from drasi_ray.query.failures import RowDropped


class _AwaitingType:
    """The type of :data:`AWAITING`: one instance, which unpickling gives back."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Awaiting, ())

    def __repr__(self) -> str:
        return "AWAITING"


def _Awaiting() -> Any:  # (the name that pickles of AWAITING have always called)
    """:data:`AWAITING`: what unpickling one calls."""
    return AWAITING


AWAITING: Any = _AwaitingType()
"""Drasi's ``Awaiting``: the value of a future function whose answer is not due yet."""

AWAITING_TEXT = "Awaiting"
"""How :data:`AWAITING` is written in a result row (as Drasi writes it)."""


EVALUATION_FAILURES: tuple[type[Exception], ...] = (
    QueryEvaluationError,
    ArithmeticError,
    ValueError,
    TypeError,
)
"""What evaluating a row may raise: the engine's own type errors, and Python's arithmetic, value
and type errors from a function or operator at the edge of its range (``exp(1000)``, a date
beyond year 9999). Either refuses the row (reported where rows are projected or grouped); it
never escapes ``apply`` with the graph index already updated and the parts half-changed."""

REFUSED: tuple[type[Exception], ...] = (RowDropped, *EVALUATION_FAILURES)
"""What refuses a row without failing it (a dropped row) and what fails it: a WHERE or a
grouping key that raises either does not pass the row."""


# --------------------------------------------------------------------------- type tests


def is_number(value: Any) -> bool:
    """True for Int and Float (``bool`` is not a number in Cypher)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_list(value: Any) -> bool:
    """Cypher lists are Python lists or tuples (never strings)."""
    return isinstance(value, (list, tuple))


def type_name(value: Any) -> str:
    """The Cypher name of a value's type, for error messages."""
    kind = value_kind(value)
    if kind is not None:
        return kind.cypher_name
    if isinstance(value, Element):
        return "Node" if value.is_node else "Relationship"
    if value is AWAITING:
        return "Awaiting"
    return temporal.type_name(value) or type(value).__name__


# --------------------------------------------------------------------------- equality


def equals(left: Any, right: Any) -> bool:
    """Cypher ``=`` with Drasi's null rule: total, never null.

    Numbers compare by value across Int/Float; lists and maps compare element-wise with the
    same rule; elements compare by identity (kind and id), not by their current properties.
    """
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if is_number(left) and is_number(right):
        return bool(left == right)
    if is_list(left) and is_list(right):
        return len(left) == len(right) and all(map(equals, left, right))
    if isinstance(left, Element) or isinstance(right, Element):
        return (
            isinstance(left, Element)
            and isinstance(right, Element)
            and left.kind is right.kind
            and left.id == right.id
        )
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(equals(left[k], right[k]) for k in left)
    if type(left) is not type(right) and not temporal.same_kind(left, right):
        return False
    return bool(left == right)


def not_equals(left: Any, right: Any) -> bool:
    """Cypher ``<>`` / ``!=`` as Drasi has it: false for two values of different kinds (null
    against anything, a string against a number, true against 1, a date against a datetime),
    else the negation of :func:`equals`. Integers and floats are one kind (``2 <> 2.0`` is
    false). Drasi also says false for any two maps or two nodes; we compare those."""
    if left is None or right is None or not _same_kind(left, right):
        return False
    return not equals(left, right)


def _same_kind(left: Any, right: Any) -> bool:
    """Whether ``<>`` compares the two (see :func:`not_equals`)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool)
    if is_number(left):
        return is_number(right)
    if isinstance(left, str) or isinstance(right, str):
        return isinstance(left, str) and isinstance(right, str)
    if is_list(left) or is_list(right):
        return is_list(left) and is_list(right)
    if isinstance(left, Element) or isinstance(right, Element):
        return isinstance(left, Element) and isinstance(right, Element)
    if isinstance(left, Mapping) or isinstance(right, Mapping):
        return isinstance(left, Mapping) and isinstance(right, Mapping)
    return temporal.same_kind(left, right)


# --------------------------------------------------------------------------- ordering


def _ordering_pair(left: Any, right: Any) -> tuple[Any, Any] | None:
    """Return two Python-comparable stand-ins for ``left``/``right``, or None if incomparable."""
    if left is None or right is None:
        return None
    if is_number(left) and is_number(right):
        return left, right
    if isinstance(left, bool) and isinstance(right, bool):
        return left, right
    if isinstance(left, str) and isinstance(right, str):
        return left, right
    if temporal.orderable(left, right):
        return temporal.order_key(left), temporal.order_key(right)
    return None


def less_than(left: Any, right: Any) -> bool:
    """``<``: false when either side is null or the types are not comparable (Drasi's
    comparisons are total, never null; openCypher would give null)."""
    pair = _ordering_pair(left, right)
    return pair is not None and bool(pair[0] < pair[1])


def less_equal(left: Any, right: Any) -> bool:
    pair = _ordering_pair(left, right)
    return pair is not None and bool(pair[0] <= pair[1])


def greater_than(left: Any, right: Any) -> bool:
    pair = _ordering_pair(left, right)
    return pair is not None and bool(pair[0] > pair[1])


def greater_equal(left: Any, right: Any) -> bool:
    pair = _ordering_pair(left, right)
    return pair is not None and bool(pair[0] >= pair[1])


# --------------------------------------------------------------------------- boolean logic
#
# Drasi's logic is two-valued: a boolean operator reads its operands as predicates, and any
# value but true (null, a number, a string) reads as false. So ``NOT null`` is true and
# ``null OR true`` is true, where openCypher's three-valued logic would give null for the first.


def logical_and(left: Any, right: Any) -> bool:
    """AND of two predicates: true only if both sides are true."""
    return left is True and right is True


def logical_or(left: Any, right: Any) -> bool:
    """OR of two predicates: true if either side is true."""
    return left is True or right is True


def logical_xor(left: Any, right: Any) -> bool:
    """XOR of two predicates (not in Drasi's grammar; read the same way)."""
    return (left is True) != (right is True)


def logical_not(value: Any) -> bool:
    """NOT of a predicate: ``NOT null`` is true."""
    return value is not True


# --------------------------------------------------------------------------- arithmetic


def _type_error(operator: str, left: Any, right: Any) -> QueryEvaluationError:
    return QueryEvaluationError(
        f"cannot apply '{operator}' to {type_name(left)} and {type_name(right)}"
    )


def add(left: Any, right: Any) -> Any:
    """``+``: numbers; string concatenation, also of a string and a number or (string first) a
    boolean, printed as Drasi prints them; list concatenation/append; temporal + duration."""
    if left is None or right is None:
        return None
    if is_number(left) and is_number(right):
        return left + right
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    if isinstance(left, str) and (is_number(right) or isinstance(right, bool)):
        return left + _display(right)
    if is_number(left) and isinstance(right, str):
        return _number_text(left) + right
    if is_list(left):
        return [*left, *right] if is_list(right) else [*left, right]
    if is_list(right):
        return [left, *right]
    result = temporal.add(left, right)
    if result is NotImplemented:
        raise _type_error("+", left, right)
    return result


def subtract(left: Any, right: Any) -> Any:
    """``-``: numbers, temporal - duration."""
    if left is None or right is None:
        return None
    if is_number(left) and is_number(right):
        return left - right
    result = temporal.subtract(left, right)
    if result is NotImplemented:
        raise _type_error("-", left, right)
    return result


def multiply(left: Any, right: Any) -> Any:
    """``*``: numbers, and duration * number."""
    if left is None or right is None:
        return None
    if is_number(left) and is_number(right):
        return left * right
    result = temporal.multiply(left, right)
    if result is NotImplemented:
        raise _type_error("*", left, right)
    return result


def divide(left: Any, right: Any) -> Any:
    """``/``: always Float (docs/semantics.md §3); a zero divisor drops the row."""
    if left is None or right is None:
        return None
    if is_number(left) and is_number(right):
        if right == 0:
            raise RowDropped("division by zero")
        return float(left) / float(right)
    result = temporal.divide(left, right)
    if result is NotImplemented:
        raise _type_error("/", left, right)
    return result


def modulo(left: Any, right: Any) -> Any:
    """``%``: the remainder takes the dividend's sign (as in Java/openCypher); zero drops."""
    if left is None or right is None:
        return None
    if not (is_number(left) and is_number(right)):
        raise _type_error("%", left, right)
    if right == 0:
        raise RowDropped("modulo by zero")
    if isinstance(left, int) and isinstance(right, int):
        remainder = abs(left) % abs(right)
        return -remainder if left < 0 else remainder
    return math.fmod(left, right)


I64_MIN, I64_MAX = -(2**63), 2**63 - 1
"""The range of Drasi's Integer (Rust's i64)."""


def power(left: Any, right: Any) -> Any:
    """``^``: Integer ^ Integer is an Integer, as in Drasi, when the exponent is not negative
    and the power fits an i64 (Drasi fails on a negative exponent and wraps around past the
    i64 range: those give the Float power instead). Otherwise Float; NaN for a negative base
    with a fractional exponent (Python would give a complex number, Rust's ``powf`` NaN)."""
    if left is None or right is None:
        return None
    if not (is_number(left) and is_number(right)):
        raise _type_error("^", left, right)
    if type(left) is int and type(right) is int and right >= 0:
        if -1 <= left <= 1:  # a huge exponent needs no big-number power here
            return left ** (right % 2 if left == -1 else min(right, 1))
        if right < 64:
            result = left**right
            if I64_MIN <= result <= I64_MAX:
                return result
    try:
        result = float(left) ** float(right)
    except ZeroDivisionError as error:  # 0.0 ** -1
        raise RowDropped("division by zero") from error
    except OverflowError:
        return math.inf
    return math.nan if isinstance(result, complex) else result


def negate(value: Any) -> Any:
    """Unary ``-``."""
    if value is None:
        return None
    if is_number(value):
        return -value
    result = temporal.negate(value)
    if result is NotImplemented:
        raise QueryEvaluationError(f"cannot negate {type_name(value)}")
    return result


def unary_plus(value: Any) -> Any:
    """Unary ``+``: a no-op on numbers and durations, a type error otherwise."""
    if value is None or is_number(value) or temporal.is_duration(value):
        return value
    raise QueryEvaluationError(f"cannot apply unary '+' to {type_name(value)}")


# --------------------------------------------------------------------------- string / list


def starts_with(left: Any, right: Any) -> bool | None:
    """``STARTS WITH``: null if either side is null, false unless both are strings (Drasi)."""
    if isinstance(left, str) and isinstance(right, str):
        return left.startswith(right)
    return None if left is None or right is None else False


def ends_with(left: Any, right: Any) -> bool | None:
    if isinstance(left, str) and isinstance(right, str):
        return left.endswith(right)
    return None if left is None or right is None else False


def contains(left: Any, right: Any) -> bool | None:
    if isinstance(left, str) and isinstance(right, str):
        return right in left
    return None if left is None or right is None else False


def in_list(value: Any, candidates: Any) -> bool | None:
    """``IN``: membership by :func:`equals`; null when the list is null."""
    if candidates is None:
        return None
    if not is_list(candidates):
        raise QueryEvaluationError(f"IN expects a List on its right, got {type_name(candidates)}")
    return any(equals(value, candidate) for candidate in candidates)


def index(subject: Any, key: Any) -> Any:
    """``subject[key]``: list by Integer (negative from the end), map/element by String.

    Out-of-range list indexes and missing keys give null, as does indexing null. A null
    index is a type error, as in Drasi (openCypher would give null).
    """
    if subject is None:
        return None
    if is_list(subject):
        if not isinstance(key, int) or isinstance(key, bool):
            raise QueryEvaluationError(f"list index must be an Integer, got {type_name(key)}")
        if -len(subject) <= key < len(subject):
            return subject[key]
        return None
    if isinstance(key, str):
        return property_of(subject, key)
    raise QueryEvaluationError(f"cannot index {type_name(subject)} with {type_name(key)}")


def slice_list(subject: Any, start: Any, end: Any) -> Any:
    """``subject[start..end]``: Python slice semantics on a list; null bounds give null."""
    if subject is None:
        return None
    if not is_list(subject):
        raise QueryEvaluationError(f"cannot slice {type_name(subject)}")
    for bound in (start, end):
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool)):
            raise QueryEvaluationError(f"slice bounds must be Integers, got {type_name(bound)}")
    return list(subject[start:end])


def property_of(subject: Any, key: str) -> Any:
    """``subject.key``: an element's property, a map's entry or a temporal accessor.

    Missing properties and keys give null, as does any access on null.
    """
    if isinstance(subject, Element):
        return subject.properties.get(key)
    if isinstance(subject, Mapping):
        return subject.get(key)
    if subject is None:
        return None
    accessor = temporal.accessor(subject, key)
    if accessor is not None:
        return accessor
    raise QueryEvaluationError(f"cannot read property '{key}' of {type_name(subject)}")


# --------------------------------------------------------------------------- conversions


def to_string(value: Any) -> str | None:
    """Cypher ``toString`` as Drasi prints values: ``1.0`` -> ``"1"`` (see :func:`_float_text`),
    ``true`` -> ``"true"``, ``[1, 'a']`` -> ``"[1, a]"``, a temporal value -> its ISO text,
    null -> null. A map or a graph element is an error (Drasi refuses them too)."""
    if value is None:
        return None
    if isinstance(value, (Mapping, Element)):
        raise QueryEvaluationError(f"cannot convert {type_name(value)} to String")
    return _display(value)


def _display(value: Any) -> str:
    """A value as Drasi's ``Display`` writes it: lists as ``[a, b]`` and maps as ``{k: v}``
    (keys in order) with their items unquoted, null inside them as ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _number_text(value)
    if isinstance(value, str):
        return value
    if is_list(value):
        return "[" + ", ".join(_display(item) for item in value) + "]"
    if isinstance(value, Mapping):
        items = sorted(value.items())
        return "{" + ", ".join(f"{key}: {_display(item)}" for key, item in items) + "}"
    text = temporal.to_iso(value)
    if text is None:
        raise QueryEvaluationError(f"cannot convert {type_name(value)} to String")
    return text


def _number_text(value: int | float) -> str:
    return _float_text(value) if isinstance(value, float) else str(value)


def _float_text(value: float) -> str:
    """Rust's ``f64`` Display, which Drasi's ``toString`` and string ``+`` use: the shortest
    digits that read back as the same float, never an exponent, no ``.0`` on whole numbers
    (``21.0`` -> ``"21"``, ``1e20`` -> ``"100000000000000000000"``); ``NaN``, ``inf``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def to_output(value: Any) -> Any:
    """Convert an evaluated value to its JSON-able result form.

    An element becomes a plain dict of its properties; temporal values and durations become
    the text Drasi writes for them (:func:`~drasi_ray.query.temporal.to_result_text`); a NaN or
    infinite float becomes Drasi's string for it (``"NaN"``, ``"inf"``, ``"-inf"``: JSON has no
    such number); lists and maps are converted recursively.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else _float_text(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Element):
        return {key: to_output(item) for key, item in value.properties.items()}
    if isinstance(value, Mapping):
        return {str(key): to_output(item) for key, item in value.items()}
    if is_list(value):
        return [to_output(item) for item in value]
    if value is AWAITING:
        return AWAITING_TEXT
    text = temporal.to_result_text(value)
    if text is not None:
        return text
    raise QueryEvaluationError(f"cannot output a value of type {type_name(value)}")


_BOOL_TAG = "\x00bool"
_LIST_TAG = "\x00list"
_MAP_TAG = "\x00map"
_ELEMENT_TAG = "\x00element"
_NAN_TAG = "\x00nan"
_AWAITING_TAG = "\x00awaiting"


def hashable_key(value: Any) -> Any:
    """A hashable stand-in for ``value`` such that equal values (by :func:`equals`) map to
    equal keys: usable to index rows and groups in dicts.

    ``5`` and ``5.0`` give the same key (Python already hashes them alike); booleans are
    tagged so that ``true`` and ``1`` differ; lists, maps and elements are tagged tuples
    (an element is keyed by its kind and id, as :func:`equals` compares it).
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        # NaN is unequal to itself, so as a key it would open a new group every time.
        return (_NAN_TAG,) if math.isnan(value) else value
    if isinstance(value, bool):
        return (_BOOL_TAG, value)
    if isinstance(value, int):
        return value
    if isinstance(value, Element):
        return (_ELEMENT_TAG, value.kind.value, value.id)
    if isinstance(value, Mapping):
        return (_MAP_TAG, tuple(sorted((str(k), hashable_key(v)) for k, v in value.items())))
    if isinstance(value, Sequence):
        return (_LIST_TAG, tuple(hashable_key(item) for item in value))
    if temporal.type_name(value) is not None:
        return value  # temporal values are immutable and hash consistently with ==
    if value is AWAITING:
        return (_AWAITING_TAG,)
    raise QueryEvaluationError(f"a {type_name(value)} cannot be used as a key")


def key_output(key: Any, element_id: Callable[[str], str] = str) -> Any:
    """The JSON-able value a :func:`hashable_key` stands for, written as a result row writes
    it, except that an element is its id (through ``element_id``) and a whole Float is the
    Integer it equals (``2`` and ``2.0`` are one key). Equal keys give equal values, so the
    value names a group the same way whichever of its equal values the group holds."""
    if key is None or isinstance(key, (str, int)):  # bool is an int: True stays True
        return key
    if isinstance(key, float):
        return int(key) if key.is_integer() and abs(key) < 2**63 else to_output(key)
    if isinstance(key, tuple) and key and isinstance(key[0], str):
        return _tagged_output(key, element_id)
    return to_output(key)


def _tagged_output(key: tuple[Any, ...], element_id: Callable[[str], str]) -> Any:
    """:func:`key_output` of a tagged key (a list, map, element, bool, NaN or Awaiting)."""
    tag = key[0]
    if tag == _BOOL_TAG:
        return key[1]
    if tag == _LIST_TAG:
        return [key_output(item, element_id) for item in key[1]]
    if tag == _MAP_TAG:
        return {name: key_output(item, element_id) for name, item in key[1]}
    if tag == _ELEMENT_TAG:
        return element_id(key[2])
    if tag == _NAN_TAG:
        return "NaN"
    if tag == _AWAITING_TAG:
        return AWAITING_TEXT
    return to_output(key)


_FLOAT_TAG = "\x00float"


def strict_key(value: Any) -> Any:
    """A hashable stand-in for ``value`` that tells apart what Drasi's own value equality
    tells apart: an Integer from an equal Float (``2`` and ``2.0``), ``true`` from ``1``, at
    any depth. Elements are keyed by kind and id, as by :func:`hashable_key`."""
    kind = type(value)
    if value is None or kind is str or kind is int:
        return value
    if kind is float:
        return (_FLOAT_TAG, _NAN_TAG if math.isnan(value) else value)
    if kind is bool:
        return (_BOOL_TAG, value)
    if isinstance(value, Element):
        return (_ELEMENT_TAG, value.kind.value, value.id)
    if isinstance(value, Mapping):
        return (_MAP_TAG, tuple(sorted((str(k), strict_key(v)) for k, v in value.items())))
    if is_list(value):
        return (_LIST_TAG, tuple(strict_key(item) for item in value))
    return hashable_key(value)


_NOT_THERE: Final = object()


def same_values(left: Any, right: Any) -> bool:  # noqa: C901  (per changed row: hot, inline)
    """Whether Drasi sees two values (or rows) as the same when it decides that a change
    changed nothing: numbers by value (an Integer equals an equal Float), ``true`` unlike
    ``1``, lists and maps element by element, an element equal only to itself in the same
    version (labels, endpoints, properties, time)."""
    if left is right:
        return True
    kind = type(left)
    if kind is str:  # the common kinds first, by identity tests (a row is compared per change)
        return type(right) is str and left == right
    if kind is float or kind is int:
        return is_number(right) and (bool(left == right) or (left != left and right != right))
    if kind is dict or isinstance(left, Mapping):
        # Same length and every key of left in right: the same keys (cheaper than comparing
        # key views). Two strings or two floats are settled here, without a call per value.
        if not (type(right) is dict or isinstance(right, Mapping)) or len(left) != len(right):
            return False
        for key, value in left.items():
            other = right.get(key, _NOT_THERE)
            if value is other:
                continue
            kind = type(value)
            if kind is type(other) and (kind is str or kind is float):
                if value == other or (value != value and other != other):  # NaN is itself
                    continue
                return False
            if other is _NOT_THERE or not same_values(value, other):
                return False
        return True
    if is_list(left):
        return is_list(right) and len(left) == len(right) and all(map(same_values, left, right))
    if is_number(left) and is_number(right):
        return bool(left == right) or (left != left and right != right)  # NaN is itself
    if kind is not type(right):
        return False
    if kind is Element:
        return bool(left == right) and same_values(left.properties, right.properties)
    return bool(left == right)
