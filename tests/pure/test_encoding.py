"""drasi_ray's JSON float layout (serde_json's, by zmij), checked over arbitrary floats.

The cases Drasi's output was checked on are pinned in tests/query/test_output_values.py; here a
second, independent derivation of the layout (from ``Decimal``) is compared with
:func:`~drasi_ray.model.encoding.format_float` for any finite float, and
:func:`~drasi_ray.model.encoding.dumps` is shown to use it wherever a float sits.
"""

from __future__ import annotations

import math
from decimal import Decimal

import orjson
from hypothesis import given
from hypothesis import strategies as st

from drasi_ray.model import encoding

finite_floats = st.floats(allow_nan=False, allow_infinity=False)


def zmij_layout(value: float) -> str:
    """The layout worked out from the shortest round-trip digits (Python's repr gives the
    same digits as zmij: both are the shortest that read back, nearest the exact value)."""
    number = Decimal(repr(value))
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return f"{sign}0.0"
    digits = "".join(map(str, number.as_tuple().digits)).rstrip("0") or "0"
    exponent = number.adjusted()  # of the first digit
    if -5 <= exponent <= 15:
        text = format(abs(number), "f")
        return sign + (text if "." in text else text + ".0")
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


@given(finite_floats)
def test_format_float_is_serde_jsons_layout_and_reads_back(value: float) -> None:
    text = encoding.format_float(value)
    assert text == zmij_layout(value)
    assert float(text) == value
    assert math.copysign(1.0, float(text)) == math.copysign(1.0, value)


@given(st.lists(finite_floats | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5)))
def test_dumps_writes_every_float_with_format_float(values: list[float | int | str]) -> None:
    written = encoding.dumps({"row": values, "nested": [{"x": values}]})
    expected = b",".join(
        encoding.format_float(item).encode() if isinstance(item, float) else orjson.dumps(item)
        for item in values
    )
    assert written == b'{"row":[' + expected + b'],"nested":[{"x":[' + expected + b"]}]}"


def test_non_finite_floats_are_drasis_strings_and_sort_keys_indent_are_kept() -> None:
    assert encoding.dumps([math.nan, math.inf, -math.inf]) == b'["NaN","inf","-inf"]'
    assert encoding.dumps({"b": 1e16, "a": (1e-7,)}, sort_keys=True) == b'{"a":[1e-7],"b":1e+16}'
    assert encoding.dumps({"a": 1.0}, indent=True) == b'{\n  "a": 1.0\n}'
