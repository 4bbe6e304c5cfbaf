"""JSON as drasi_ray writes it to users: the same bytes for the same values, whatever the
installed ``orjson`` version.

Drasi serialises result values with ``serde_json``, which formats floats with the ``zmij``
crate (serde_json switched from ``ryu`` to ``zmij`` in December 2025, serde-rs/json#1304;
drasi-lib 0.3.0 links serde_json 1.0.151 with zmij's tables). :func:`format_float` writes that
layout, and :func:`dumps` is ``orjson`` with every float written by it, so result rows on Redis,
JSON-lines reactions and ``status --json`` do not change with orjson's own float formatting
(3.8 wrote ``1e16``, 3.13 writes ``1e+16``).

The layout, for a finite float with shortest round-trip digits ``d1 d2 ... dn`` and first-digit
exponent ``e`` (``10**e <= |x| < 10**(e+1)``):

- ``-5 <= e <= 15``: positional, whole numbers keep ``.0``: ``21.0``, ``0.30000000000000004``,
  ``1000000000000000.0``, ``0.00001``;
- otherwise scientific, the exponent signed and without leading zeros: ``1e+16``,
  ``2.5e+16``, ``1e-7``, ``5e-324``;
- ``-0.0`` keeps its sign.

Non-finite floats have no JSON number. Drasi turns them into the strings ``"NaN"``, ``"inf"``
and ``"-inf"`` (checked through drasi-lib: ``toFloat('NaN')`` and an overflowing product come
back as those strings), and so does :func:`dumps`.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

_NON_FINITE = {math.inf: "inf", -math.inf: "-inf"}


def format_float(value: float) -> str:
    """``value`` as serde_json (zmij) writes it; non-finite values as Drasi's strings."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else _NON_FINITE[value]
    text = repr(value)
    if "e" not in text:
        return text  # repr is positional exactly where zmij is, except 1e-5 <= |x| < 1e-4
    mantissa, exponent_text = text.split("e")
    exponent = int(exponent_text)
    if exponent == -5:
        sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
        return f"{sign}0.0000{digits.replace('.', '')}"
    return f"{mantissa}e{'+' if exponent > 0 else '-'}{abs(exponent)}"


def _owned(value: Any) -> Any:
    """``value`` with every float replaced by its text (as a JSON fragment, or Drasi's string
    for a non-finite one); containers are copied only when they hold a float."""
    kind = type(value)
    if kind is float:
        if math.isfinite(value):
            return orjson.Fragment(format_float(value))
        return format_float(value)
    if isinstance(value, dict):
        return {key: _owned(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_owned(item) for item in value]
    return value


def dumps(value: Any, *, sort_keys: bool = False, indent: bool = False) -> bytes:
    """Serialise ``value`` (JSON types, plus whatever orjson natively writes) with drasi_ray's
    float formatting. ``indent`` gives two-space indentation for people to read."""
    option = (orjson.OPT_SORT_KEYS if sort_keys else 0) | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(_owned(value), option=option)
