"""The scalar function registry: lower-case name (with namespace) -> implementation.

Every implementation takes its already-evaluated arguments positionally and follows
openCypher's null rule: a null in the argument that carries the value gives null out
(``toUpper(null)`` is null), while ``coalesce`` and friends look at nulls on purpose.
Wrong argument types raise :class:`~drasi_ray.model.errors.QueryEvaluationError`.

Aggregates (count, sum, avg, min, max, collect, drasi.linearGradient, drasi.last) are *named*
here, in :data:`AGGREGATES`, so the parser can recognise them, but they are evaluated by the
engine, never by this module.

The parser checks every call's name and argument count against :data:`FUNCTIONS` when a query
is registered, so an unknown function is a registration error, not a runtime one.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.model.identity import user_element_id
from drasi_ray.query import ast, ordering, past, temporal, truncation
from drasi_ray.query.values import (
    I64_MAX,
    I64_MIN,
    equals,
    is_list,
    is_number,
    strict_key,
    to_string,
    type_name,
)

AGGREGATES: frozenset[str] = ast.AGGREGATE_FUNCTIONS
"""Aggregate function names (lower-case); the engine evaluates them."""

_NO_ARGUMENT: Any = object()
"""Default of an optional argument, told apart from an explicit null (``date()`` means
today, ``date(null)`` is null; ``round(x)`` gives a Float, ``round(x, 0)`` keeps an Integer)."""


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """A scalar function: ``impl(*args)`` with ``min_args <= len(args) <= max_args``
    (``max_args`` None: any number). ``name`` is the lower-case registry key.

    A ``contextual`` function is called ``impl(context, *args)`` with the query's
    :class:`~drasi_ray.query.evaluation.EvaluationContext`: what a function that reads the query's
    clock (``datetime.realtime()``, ``date.transaction()``) is registered as."""

    name: str
    impl: Callable[..., Any]
    min_args: int
    max_args: int | None
    contextual: bool = False

    def accepts(self, count: int) -> bool:
        return count >= self.min_args and (self.max_args is None or count <= self.max_args)

    def arity_text(self) -> str:
        if self.max_args == self.min_args:
            return f"{self.min_args} argument{'s' if self.min_args != 1 else ''}"
        if self.max_args is None:
            return f"at least {self.min_args} arguments"
        return f"{self.min_args} to {self.max_args} arguments"


# --------------------------------------------------------------------------- argument checks


def _bad_argument(function: str, expected: str, value: Any) -> QueryEvaluationError:
    return QueryEvaluationError(f"{function}() expects {expected}, got {type_name(value)}")


def _string(function: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _bad_argument(function, "a String", value)
    return value


def _integer(function: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad_argument(function, "an Integer", value)
    return value


def _number(function: str, value: Any) -> int | float:
    if not is_number(value):
        raise _bad_argument(function, "a number", value)
    result: int | float = value
    return result


def _sequence(function: str, value: Any) -> Sequence[Any]:
    if not is_list(value):
        raise _bad_argument(function, "a List", value)
    result: Sequence[Any] = value
    return result


def _element(function: str, value: Any) -> Element:
    if not isinstance(value, Element):
        raise _bad_argument(function, "a node or relationship", value)
    return value


# --------------------------------------------------------------------------- text


def to_upper(value: Any) -> str | None:
    return None if value is None else _string("toUpper", value).upper()


def to_lower(value: Any) -> str | None:
    return None if value is None else _string("toLower", value).lower()


_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""What trim() removes: Unicode White_Space, as Rust's ``str::trim`` (Drasi). Python's bare
``strip()`` would also remove the separators U+001C to U+001F."""


def trim(value: Any) -> str | None:
    return None if value is None else _string("trim", value).strip(_WHITESPACE)


def ltrim(value: Any) -> str | None:
    return None if value is None else _string("ltrim", value).lstrip(_WHITESPACE)


def rtrim(value: Any) -> str | None:
    return None if value is None else _string("rtrim", value).rstrip(_WHITESPACE)


def reverse(value: Any) -> Any:
    """Reverse a String or a List."""
    if value is None:
        return None
    if isinstance(value, str):
        return value[::-1]
    return list(reversed(_sequence("reverse", value)))


def _length(function: str, value: Any) -> int | None:
    if value is None:
        return None
    length = _integer(function, value)
    if length < 0:
        raise QueryEvaluationError(f"{function}() length must not be negative, got {length}")
    return length


def left(value: Any, length: Any) -> str | None:
    count = _length("left", length)
    if value is None or count is None:
        return None
    return _string("left", value)[:count]


def right(value: Any, length: Any) -> str | None:
    count = _length("right", length)
    if value is None or count is None:
        return None
    text = _string("right", value)
    return text[len(text) - count :] if count else ""


def replace(value: Any, search: Any, replacement: Any) -> str | None:
    """An empty ``search`` leaves the text as it is (Drasi), where Python's ``str.replace``
    would put ``replacement`` between every two characters."""
    if value is None or search is None or replacement is None:
        return None
    text, pattern = _string("replace", value), _string("replace", search)
    substitute = _string("replace", replacement)
    return text.replace(pattern, substitute) if pattern else text


def split(value: Any, delimiter: Any) -> list[str] | None:
    """``split(s, delimiter)``; with a list of delimiters (Drasi's form), ``s`` is cut at every
    character of any of them and the empty pieces are dropped."""
    if value is None or delimiter is None:
        return None
    text = _string("split", value)
    if is_list(delimiter):
        cuts = "".join(_string("split", item) for item in delimiter)
        return _split_at_characters(text, cuts)
    separator = _string("split", delimiter)
    # Python refuses an empty separator; Cypher splits into characters.
    return list(text) if separator == "" else text.split(separator)


def _split_at_characters(text: str, cuts: str) -> list[str]:
    pieces = re.split("[" + re.escape(cuts) + "]", text) if cuts else [text]
    return [piece for piece in pieces if piece]


def substring(value: Any, start: Any, length: Any = None) -> str | None:
    """``substring(s, start[, length])``: 0-based start; a negative start is an error."""
    if value is None or start is None:
        return None
    text, begin = _string("substring", value), _integer("substring", start)
    if begin < 0:
        raise QueryEvaluationError(f"substring() start must not be negative, got {begin}")
    count = _length("substring", length)
    return text[begin:] if count is None else text[begin : begin + count]


def to_string_function(value: Any) -> str | None:
    return to_string(value)


def to_string_or_null(value: Any) -> str | None:
    """``toStringOrNull(x)``: ``toString(x)``, but null where ``toString`` refuses the value
    (a map, as Drasi, or a graph element). Drasi's refuses booleans and temporal values with
    an error that stops the query; here they give the same text as ``toString``
    (docs/conformance.md)."""
    if isinstance(value, Mapping):
        return None
    try:
        return to_string(value)
    except QueryEvaluationError:
        return None


def random_uuid() -> str:
    """``randomUUID()``: a new random (version 4) UUID in its 36-character text form."""
    return str(uuid.uuid4())


# --------------------------------------------------------------------------- numeric


def absolute(value: Any) -> int | float | None:
    return None if value is None else abs(_number("abs", value))


def ceil(value: Any) -> float | None:
    """Always Float (docs/semantics.md §3); infinities and NaN are returned as they are."""
    if value is None:
        return None
    number = _number("ceil", value)
    return float(number if _not_finite(number) else math.ceil(number))


def floor(value: Any) -> float | None:
    """Always Float (docs/semantics.md §3); infinities and NaN are returned as they are."""
    if value is None:
        return None
    number = _number("floor", value)
    return float(number if _not_finite(number) else math.floor(number))


def _not_finite(number: int | float) -> bool:
    """True for a Float infinity or NaN (which have no integer to round to)."""
    return isinstance(number, float) and not math.isfinite(number)


def round_number(
    value: Any, precision: Any = _NO_ARGUMENT, mode: Any = _NO_ARGUMENT
) -> int | float | None:
    """``round(x[, precision[, mode]])`` as Drasi: ``x * 10^precision`` made a whole number in
    binary floating point, then scaled back (``round(1.005, 2)`` = 1.0 since 1.005 * 100 is
    just under 100.5). Without a mode a tie goes toward positive infinity (``round(-2.5)`` =
    -2.0); see :data:`_ROUNDING_MODES`. Float, except that an Integer given a precision of 0
    or more comes back as it is.
    """
    if value is None or precision is None or mode is None:
        return None
    number = _number("round", value)
    to_whole = _half_toward_positive if mode is _NO_ARGUMENT else _rounding_mode(mode)
    if precision is _NO_ARGUMENT:
        places = 0
    elif (places := _integer("round", precision)) >= 0 and isinstance(number, int):
        return number
    return _round_scaled(number, places, to_whole)


def _round_scaled(number: int | float, places: int, to_whole: Callable[[float], float]) -> float:
    """``to_whole(number * scale) / scale`` with ``scale`` = 10^places as Drasi computes it.
    A value with no digit at that place (too large, infinite, NaN) is returned as it is; a
    place beyond any float's magnitude rounds to 0."""
    scale = _power_of_ten(places)
    if scale == 0.0:
        return 0.0
    scaled = number * scale
    if not math.isfinite(scaled):
        return float(number)
    return to_whole(scaled) / scale


def _power_of_ten(places: int) -> float:
    """10.0 ** places by squaring, as Rust's ``powi`` (LLVM's ``__powidf2``) does: exact up to
    10^22 and the same rounding steps as Drasi's beyond; inf or 0.0, not an OverflowError."""
    result, factor, exponent = 1.0, 10.0, abs(places)
    while exponent:
        if exponent & 1:
            result *= factor
        factor, exponent = factor * factor, exponent >> 1
    return 1.0 / result if places < 0 else result


def _nearest(number: float, tie_goes_away: bool) -> float:
    """The whole number nearest ``number``; a tie goes away from zero if ``tie_goes_away``."""
    whole = math.copysign(float(math.trunc(number)), number)
    fraction = abs(number - whole)  # exact: ``whole`` is ``number`` without its fraction
    away = fraction > 0.5 or (fraction == 0.5 and tie_goes_away)
    return whole + math.copysign(1.0, number) if away else whole


def _half_toward_positive(number: float) -> float:
    """Cypher's ``round``: nearest, a tie toward positive infinity."""
    return _nearest(number, number > 0)


def _away_from_zero(number: float) -> float:
    whole = float(math.trunc(number))
    return whole if whole == number else whole + math.copysign(1.0, number)


_ROUNDING_MODES: Mapping[str, Callable[[float], float]] = {
    "UP": _away_from_zero,
    "DOWN": lambda number: float(math.trunc(number)),
    "CEILING": lambda number: float(math.ceil(number)),
    "FLOOR": lambda number: float(math.floor(number)),
    "HALF_UP": lambda number: _nearest(number, tie_goes_away=True),
    "HALF_DOWN": lambda number: _nearest(number, tie_goes_away=False),
    "HALF_EVEN": lambda number: _nearest(number, tie_goes_away=math.trunc(number) % 2 == 1),
}
"""``round()``'s modes (any case), Java's RoundingMode names as Drasi reads them: how the
scaled value becomes a whole number. HALF_UP takes a tie away from zero, unlike no mode."""


def _rounding_mode(mode: Any) -> Callable[[float], float]:
    to_whole = _ROUNDING_MODES.get(_string("round", mode).upper())
    if to_whole is None:
        known = ", ".join(_ROUNDING_MODES)
        raise QueryEvaluationError(f"round() mode must be one of {known}, got '{mode}'")
    return to_whole


def sign(value: Any) -> int | None:
    if value is None:
        return None
    number = _number("sign", value)
    return (number > 0) - (number < 0)


def rand() -> float:
    return random.random()


def _float_function(name: str, impl: Callable[[float], float]) -> Callable[[Any], float | None]:
    def call(value: Any) -> float | None:
        if value is None:
            return None
        try:
            return impl(float(_number(name, value)))
        except ValueError:  # sqrt(-1), log(0): NaN as openCypher
            return math.nan

    return call


def _trigonometric(name: str, impl: Callable[[float], float]) -> Callable[[Any], float | None]:
    """A Drasi trigonometric function: a Float from a number, null from null; any other
    argument, and a result that is not a finite Float (``cos`` of an infinity), is an error
    as in Drasi."""

    def call(value: Any) -> float | None:
        if value is None:
            return None
        argument = float(_number(name, value))
        result = impl(argument) if math.isfinite(argument) else math.nan
        if not math.isfinite(result):
            raise QueryEvaluationError(f"{name}() of {argument!r} is not a finite number")
        return result

    return call


# --------------------------------------------------------------------------- scalar


def size(value: Any) -> int | None:
    """Length of a String (in characters) or a List; anything else, a Map included, is an
    error as in Drasi."""
    if value is None:
        return None
    if isinstance(value, str) or is_list(value):
        return len(value)
    raise _bad_argument("size", "a String or a List", value)


def char_length(value: Any) -> int | None:
    """``char_length(s)`` (also ``character_length``): the number of characters of a String.
    Drasi's counts UTF-8 bytes (Rust's ``str::len``), so ``'héllo'`` would be 6 there; a
    function named for characters counting bytes is taken as unintended and not copied."""
    return None if value is None else len(_string("char_length", value))


def coalesce(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def head(value: Any) -> Any:
    if value is None:
        return None
    items = _sequence("head", value)
    return items[0] if items else None


def last(value: Any) -> Any:
    if value is None:
        return None
    items = _sequence("last", value)
    return items[-1] if items else None


def to_integer(value: Any) -> int | None:
    """As Drasi: a Float (or a Float's text) is floored, not truncated (``-4.5`` -> ``-5``),
    and saturates at the i64 bounds as Rust's ``as i64`` does; text that is no number gives
    null (see :func:`_parse_integer`). An infinity saturates too and NaN gives 0, where Drasi
    stops the query (docs/conformance.md)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _floor_to_i64(value)
    if isinstance(value, str):
        return _parse_integer(value)
    raise _bad_argument("toInteger", "a String, number or Boolean", value)


_RUST_INTEGER = re.compile(r"[+-]?[0-9]+")
"""What Rust's ``str::parse::<i64>`` reads (no spaces, no ``_``)."""

_RUST_FLOAT = re.compile(
    r"[+-]?(?:inf|infinity|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)", re.IGNORECASE
)
"""What Rust's ``str::parse::<f64>`` reads: Python's ``float`` would also take spaces and
``_``, which Drasi refuses (the value is then null)."""


def _floor_to_i64(number: float) -> int:
    if math.isnan(number):
        return 0
    if math.isinf(number):
        return I64_MAX if number > 0 else I64_MIN
    return min(max(math.floor(number), I64_MIN), I64_MAX)


def _parse_integer(text: str) -> int | None:
    """An i64 as Rust parses it, else a float's text floored, else null."""
    if _RUST_INTEGER.fullmatch(text) and I64_MIN <= (number := int(text)) <= I64_MAX:
        return number
    parsed = _parse_float(text)
    return None if parsed is None else _floor_to_i64(parsed)


def _parse_float(text: str) -> float | None:
    return float(text) if _RUST_FLOAT.fullmatch(text) else None


def to_float(value: Any) -> float | None:
    if value is None:
        return None
    if is_number(value):
        return float(value)
    if isinstance(value, str):
        return _parse_float(value)
    raise _bad_argument("toFloat", "a String or number", value)


def to_boolean(value: Any) -> bool | None:
    """``'true'``/``'false'`` in any case, nothing around them (Drasi); other strings null."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {"true": True, "false": False}.get(value.lower())
    if isinstance(value, int):
        return value != 0
    raise _bad_argument("toBoolean", "a String, Integer or Boolean", value)


def _or_null(conversion: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``toIntegerOrNull`` and friends (Drasi registers them): the conversion, but a value of
    a type it does not take gives null instead of an error. The conversions raise for nothing
    else. Drasi's ``toBooleanOrNull`` reads only lower-case ``'true'``/``'false'`` where its
    ``toBoolean`` takes any case; that slip is not copied: both take any case here."""

    def call(value: Any) -> Any:
        try:
            return conversion(value)
        except QueryEvaluationError:
            return None

    return call


def null_if(value: Any, other: Any) -> Any:
    return None if equals(value, other) else value


def is_empty(value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, (str, Mapping)) or is_list(value):
        return len(value) == 0
    raise _bad_argument("isEmpty", "a String, List or Map", value)


def timestamp() -> int:
    """Milliseconds since the epoch, now."""
    return time.time_ns() // 1_000_000


# --------------------------------------------------------------------------- lists


def range_list(start: Any, end: Any, step: Any = 1) -> list[int]:
    """``range(start, end[, step])``: inclusive of ``end``, as Cypher."""
    first, stop = _integer("range", start), _integer("range", end)
    stride = _integer("range", step)
    if stride == 0:
        raise QueryEvaluationError("range() step must not be zero")
    return list(range(first, stop + (1 if stride > 0 else -1), stride))


def tail(value: Any) -> list[Any] | None:
    """All but the first item; the tail of an empty list is null (Drasi), not ``[]``."""
    if value is None:
        return None
    items = _sequence("tail", value)
    return list(items[1:]) if items else None


def coll_distinct(value: Any) -> list[Any] | None:
    """``coll.distinct(list)``: the items in first-seen order, each value once. An Integer and
    an equal Float are two values (``[2, 2.0]`` stays as it is), as Drasi has them in all but
    a random few lists (docs/conformance.md, ``distinct_integer_float``)."""
    if value is None:
        return None
    seen: set[Any] = set()
    result = []
    for item in _sequence("coll.distinct", value):
        key = strict_key(item)
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


def coll_index_of(value: Any, search: Any) -> int | None:
    """``coll.indexOf(list, value)``: the first position of ``value`` (by ``=``), else -1;
    null if either is null."""
    if value is None or search is None:
        return None
    for position, item in enumerate(_sequence("coll.indexOf", value)):
        if equals(item, search):
            return position
    return -1


def coll_insert(value: Any, position: Any, item: Any) -> list[Any] | None:
    """``coll.insert(list, index, value)``: a copy with ``value`` at ``index`` (0 to the
    list's size, else an error); null if the list or the index is null."""
    if value is None or position is None:
        return None
    items = _sequence("coll.insert", value)
    index = _integer("coll.insert", position)
    if not 0 <= index <= len(items):
        raise QueryEvaluationError(
            f"coll.insert() index {index} is outside 0..{len(items)} (the list's size)"
        )
    return [*items[:index], item, *items[index:]]


def drasi_stdevp(value: Any) -> float | None:
    """``drasi.stdevp(list)``: the population standard deviation of the numbers in a list,
    other items (null included) left out, summed left to right as Drasi's (so the same
    Float). Null for null, and for a list without numbers, where Drasi's panics
    (docs/conformance.md)."""
    if value is None:
        return None
    numbers = [float(item) for item in _sequence("drasi.stdevp", value) if is_number(item)]
    if not numbers:
        return None
    mean = _left_sum(numbers) / len(numbers)
    return math.sqrt(
        _left_sum([(number - mean) * (number - mean) for number in numbers]) / len(numbers)
    )


def _left_sum(numbers: Sequence[float]) -> float:
    """Floats added one by one, left to right: Python 3.12's ``sum`` compensates rounding,
    which would give a different last digit than Drasi's plain fold."""
    total = 0.0
    for number in numbers:
        total += number
    return total


_LIST_HELPER_PASSES = (str, int, float, bool, Mapping, dt.date, dt.time, temporal.Duration)
"""What ``drasi.listMax``/``listMin`` return as they are when given instead of a list."""


def drasi_list_max(value: Any, _ignored: Any = _NO_ARGUMENT) -> Any:
    """``drasi.listMax(list)``: the greatest item by Drasi's order of values
    (:func:`~drasi_ray.query.ordering.compare`). As Drasi's: the first item is the starting
    candidate even when null, later nulls are skipped, an item unordered with the candidate
    never replaces it, and a value that is not a list (a number, a string, a map, a temporal
    value) comes back as it is; a second argument is accepted and ignored. An empty list
    gives null, where Drasi's panics (docs/conformance.md)."""
    return _list_extreme("drasi.listMax", value, 1)


def drasi_list_min(value: Any) -> Any:
    """``drasi.listMin(list)``: the least item, under the rules of :func:`drasi_list_max` (so a
    leading null is never replaced: nothing is less than null)."""
    return _list_extreme("drasi.listMin", value, -1)


def _list_extreme(function: str, value: Any, wanted: int) -> Any:
    if value is None:
        return None
    if not is_list(value):
        if isinstance(value, _LIST_HELPER_PASSES):
            return value
        raise _bad_argument(function, "a List", value)
    if not value:
        return None
    best = value[0]
    for item in value:
        if item is not None and ordering.compare(item, best) == wanted:
            best = item
    return best


# --------------------------------------------------------------------------- graph


def element_id(value: Any) -> str | None:
    """The element's id only (Drasi's elementId: without its source, also when the query
    names it by its graph id, :mod:`drasi_ray.model.identity`)."""
    return None if value is None else user_element_id(_element("elementId", value).id)


def keys(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, Element):
        return list(value.properties)
    if isinstance(value, Mapping):
        return [str(key) for key in value]
    raise _bad_argument("keys", "a node, relationship or Map", value)


def labels(value: Any) -> list[str] | None:
    return None if value is None else list(_element("labels", value).labels)


def relationship_type(value: Any) -> str | None:
    if value is None:
        return None
    element = _element("type", value)
    if not element.is_relation:
        raise _bad_argument("type", "a relationship", value)
    return element.labels[0] if element.labels else None


def properties(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, Element):
        return dict(value.properties)
    if isinstance(value, Mapping):
        return dict(value)
    raise _bad_argument("properties", "a node, relationship or Map", value)


def change_date_time(value: Any) -> dt.datetime | None:
    """``drasi.changeDateTime(e)``: when the element last changed (its effective_from), UTC."""
    if value is None:
        return None
    return temporal.from_epoch_millis(_element("drasi.changeDateTime", value).effective_from)


# --------------------------------------------------------------------------- temporal


def date(value: Any = _NO_ARGUMENT) -> dt.date | None:
    if value is _NO_ARGUMENT:
        return temporal.now().date()
    if value is None:
        return None
    if isinstance(value, str):
        return temporal.parse_date(value)
    if isinstance(value, Mapping):
        return temporal.date_from_map(value)
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    raise _bad_argument("date", "a String, Map or temporal value", value)


def datetime(value: Any = _NO_ARGUMENT) -> dt.datetime | None:
    if value is _NO_ARGUMENT:
        return temporal.now()
    if value is None:
        return None
    if isinstance(value, str):
        return temporal.parse_datetime(value)
    if isinstance(value, Mapping):
        return temporal.now_in_zone_of(value) or temporal.datetime_from_map(value)
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time(0), tzinfo=dt.timezone.utc)
    raise _bad_argument("datetime", "a String, Map or temporal value", value)


def local_datetime(value: Any = _NO_ARGUMENT) -> dt.datetime | None:
    if value is _NO_ARGUMENT:
        return temporal.now().replace(tzinfo=None)
    if value is None:
        return None
    if isinstance(value, str):
        return temporal.parse_local_datetime(value)
    if isinstance(value, Mapping):
        now = temporal.now_in_zone_of(value)
        return now.replace(tzinfo=None) if now else temporal.local_datetime_from_map(value)
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time(0))
    raise _bad_argument("localdatetime", "a String, Map or temporal value", value)


def local_time(value: Any = _NO_ARGUMENT) -> dt.time | None:
    if value is _NO_ARGUMENT:
        return temporal.now().time()
    if value is None:
        return None
    if isinstance(value, str):
        return temporal.parse_local_time(value)
    if isinstance(value, Mapping):
        return temporal.time_from_map(value)
    if isinstance(value, dt.datetime):
        return value.time()
    if isinstance(value, dt.time):
        return value.replace(tzinfo=None)
    raise _bad_argument("localtime", "a String, Map or temporal value", value)


def zoned_time(value: Any = _NO_ARGUMENT) -> dt.time | None:
    if value is _NO_ARGUMENT:
        return temporal.now().timetz()
    if value is None:
        return None
    if isinstance(value, str):
        return temporal.parse_time(value)
    if isinstance(value, Mapping):
        now = temporal.now_in_zone_of(value)
        return now.timetz() if now else temporal.zoned_time_from_map(value)
    if isinstance(value, dt.datetime):
        return value.timetz() if value.tzinfo else value.time().replace(tzinfo=dt.timezone.utc)
    if isinstance(value, dt.time):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    raise _bad_argument("time", "a String, Map or temporal value", value)


def duration(value: Any) -> temporal.Duration | None:
    if value is None:
        return None
    if isinstance(value, str):
        return temporal.parse_duration(value)
    if isinstance(value, Mapping):
        return temporal.duration_from_map(value)
    if isinstance(value, temporal.Duration):
        return value
    raise _bad_argument("duration", "a String or Map", value)


def datetime_from_epoch_millis(millis: Any) -> dt.datetime | None:
    return (
        None if millis is None else temporal.from_epoch_millis(_integer("fromEpochMillis", millis))
    )


def datetime_from_epoch(seconds: Any, nanoseconds: Any = 0) -> dt.datetime | None:
    if seconds is None or nanoseconds is None:
        return None
    return temporal.from_epoch_seconds(
        _number("fromEpoch", seconds), _integer("fromEpoch", nanoseconds)
    )


# --------------------------------------------------------------------------- query clocks

_CLOCK_VALUES: Mapping[str, Callable[[dt.datetime], Any]] = {
    "date": lambda instant: instant.date(),
    "localtime": lambda instant: instant.time(),
    "localdatetime": lambda instant: instant.replace(tzinfo=None),
    "time": lambda instant: instant.timetz(),
    "datetime": lambda instant: instant,
}
"""What each temporal type takes of a clock's instant (in UTC, or in the zone asked for)."""

_CLOCKS = ("transaction", "realtime", "statement")


def _clock_function(kind: str, clock: str) -> Callable[..., Any]:
    """``<kind>.<clock>([zone])``: the query's clock
    (:class:`~drasi_ray.query.evaluation.QueryClock`, read from the context: a contextual
    function, the compiler passes the context first) as a value of type ``kind``, in UTC or in
    ``zone`` (an IANA name, ``Z``, an offset; spaces read as underscores, brackets ignored, as
    Drasi). ``.statement`` reads the realtime clock, as Drasi's. Drasi reads an offset, and a
    zone name with a hyphen, as UTC, and gives UTC for ``localdatetime.<clock>(zone)``; here
    each is the zone's own clock (docs/conformance.md)."""
    value_of = _CLOCK_VALUES[kind]
    field = "transaction_ms" if clock == "transaction" else "realtime_ms"

    def call(context: Any, zone: Any = _NO_ARGUMENT) -> Any:
        instant = temporal.from_epoch_millis(getattr(context.clock, field))
        if zone is not _NO_ARGUMENT:
            instant = instant.astimezone(_clock_zone(f"{kind}.{clock}", zone))
        return value_of(instant)

    return call


def _clock_zone(function: str, zone: Any) -> dt.tzinfo:
    name = _string(function, zone).replace(" ", "_").replace("[", "").replace("]", "")
    return temporal.parse_zone(name)


# --------------------------------------------------------------------------- the registry


def _spec(
    name: str, impl: Callable[..., Any], min_args: int, max_args: int | None = -1
) -> FunctionSpec:
    return FunctionSpec(name, impl, min_args, min_args if max_args == -1 else max_args)


def _text_functions() -> list[FunctionSpec]:
    """String functions."""
    return [
        _spec("toupper", to_upper, 1),
        _spec("tolower", to_lower, 1),
        _spec("upper", to_upper, 1),
        _spec("lower", to_lower, 1),
        _spec("trim", trim, 1),
        _spec("ltrim", ltrim, 1),
        _spec("rtrim", rtrim, 1),
        _spec("reverse", reverse, 1),
        _spec("left", left, 2),
        _spec("right", right, 2),
        _spec("replace", replace, 3),
        _spec("split", split, 2),
        _spec("substring", substring, 2, 3),
        _spec("tostring", to_string_function, 1),
        _spec("tostringornull", to_string_or_null, 1),
        _spec("randomuuid", random_uuid, 0),
    ]


def _numeric_functions() -> list[FunctionSpec]:
    """Numeric functions (``floor``/``ceil`` give Float, ``round`` too but for an Integer given a
    precision)."""
    return [
        _spec("abs", absolute, 1),
        _spec("ceil", ceil, 1),
        _spec("floor", floor, 1),
        _spec("round", round_number, 1, 3),
        _spec("sign", sign, 1),
        _spec("rand", rand, 0),
        _spec("sqrt", _float_function("sqrt", math.sqrt), 1),
        _spec("exp", _float_function("exp", math.exp), 1),
        _spec("log", _float_function("log", math.log), 1),
        _spec("log10", _float_function("log10", math.log10), 1),
        _spec("pi", lambda: math.pi, 0),
        _spec("e", lambda: math.e, 0),
        _spec("cos", _trigonometric("cos", math.cos), 1),
        _spec("sin", _trigonometric("sin", math.sin), 1),
        _spec("tan", _trigonometric("tan", math.tan), 1),
        _spec("degrees", _trigonometric("degrees", math.degrees), 1),
        _spec("radians", _trigonometric("radians", math.radians), 1),
    ]


def _scalar_functions() -> list[FunctionSpec]:
    """Scalar functions."""
    return [
        _spec("size", size, 1),
        _spec("char_length", char_length, 1),
        _spec("character_length", char_length, 1),
        _spec("coalesce", coalesce, 0, None),
        _spec("head", head, 1),
        _spec("last", last, 1),
        _spec("tointeger", to_integer, 1),
        _spec("tofloat", to_float, 1),
        _spec("toboolean", to_boolean, 1),
        _spec("tointegerornull", _or_null(to_integer), 1),
        _spec("tofloatornull", _or_null(to_float), 1),
        _spec("tobooleanornull", _or_null(to_boolean), 1),
        _spec("nullif", null_if, 2),
        _spec("isempty", is_empty, 1),
        _spec("timestamp", timestamp, 0),
    ]


def _list_and_graph_functions() -> list[FunctionSpec]:
    """List functions and element introspection."""
    return [
        _spec("range", range_list, 2, 3),
        _spec("tail", tail, 1),
        _spec("coll.distinct", coll_distinct, 1),
        _spec("coll.indexof", coll_index_of, 2),
        _spec("coll.insert", coll_insert, 3),
        _spec("elementid", element_id, 1),
        _spec("keys", keys, 1),
        _spec("labels", labels, 1),
        _spec("type", relationship_type, 1),
        _spec("properties", properties, 1),
        _spec("drasi.changedatetime", change_date_time, 1),
        _spec("drasi.stdevp", drasi_stdevp, 1),
        _spec("drasi.listmax", drasi_list_max, 1, 2),
        _spec("drasi.listmin", drasi_list_min, 1),
        _spec("retainhistory", retain_history, 0, None),
        FunctionSpec("drasi.getversionbytimestamp", past.get_version_by_timestamp, 2, 2, True),
        FunctionSpec("drasi.getversionsbytimerange", past.get_versions_by_time_range, 3, 4, True),
    ]


def retain_history(*values: Any) -> Any:
    """``retainHistory(x)``: ``x`` (null without an argument, the first with several, as
    Drasi). Around an aggregate it changes how the aggregate forgets: see
    :class:`~drasi_ray.query.aggregates.Retained`."""
    return values[0] if values else None


def _temporal_functions() -> list[FunctionSpec]:
    """Temporal constructors and ``duration.*`` / ``datetime.*`` helpers."""
    return [
        _spec("date", date, 0, 1),
        _spec("datetime", datetime, 0, 1),
        _spec("localdatetime", local_datetime, 0, 1),
        _spec("localtime", local_time, 0, 1),
        _spec("time", zoned_time, 0, 1),
        _spec("duration", duration, 1),
        _spec("datetime.fromepochmillis", datetime_from_epoch_millis, 1),
        _spec("datetime.fromepoch", datetime_from_epoch, 1, 2),
        _spec("duration.between", temporal.between, 2),
        _spec("duration.inseconds", temporal.in_seconds, 2),
        _spec("duration.indays", temporal.in_days, 2),
        _spec("duration.inmonths", temporal.in_months, 2),
        *(_spec(f"{kind}.truncate", truncation.truncate, 2, 3) for kind in _CLOCK_VALUES),
        *(
            FunctionSpec(f"{kind}.{clock}", _clock_function(kind, clock), 0, 1, True)
            for kind in _CLOCK_VALUES
            for clock in _CLOCKS
        ),
    ]


def _build_registry() -> dict[str, FunctionSpec]:
    groups = (
        _text_functions(),
        _numeric_functions(),
        _scalar_functions(),
        _list_and_graph_functions(),
        _temporal_functions(),
    )
    return {spec.name: spec for group in groups for spec in group}


FUNCTIONS: Mapping[str, FunctionSpec] = _build_registry()
"""Every scalar function, by lower-case name. Built at import: it is a constant."""


def lookup(name: str) -> FunctionSpec | None:
    """The scalar function called ``name`` (any case), or None."""
    return FUNCTIONS.get(name.lower())


def is_aggregate(name: str) -> bool:
    return name.lower() in AGGREGATES


_AGGREGATE_ARGUMENT_COUNTS: Mapping[str, int] = {"drasi.lineargradient": 2}
"""The aggregates that take other than one argument (the engine hands an aggregate of several
arguments their values as one list)."""


def aggregate_argument_count(name: str) -> int:
    """How many arguments aggregate ``name`` (lower-case) takes."""
    return _AGGREGATE_ARGUMENT_COUNTS.get(name, 1)
