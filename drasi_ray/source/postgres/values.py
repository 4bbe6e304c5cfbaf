"""A column's text as a property value: Drasi's PostgreSQL type mapping.

pgoutput sends every value as the text its type's output function writes, and the snapshot
reads the same text (``column::text``), so one function maps both. The reader's sessions run
with ``DateStyle=ISO``, ``TimeZone=UTC``, ``extra_float_digits=3`` and ``bytea_output=hex``
(:mod:`.connection`), so the text has one shape whatever the server's defaults.

=================================  ============================================================
PostgreSQL type                    property value
=================================  ============================================================
``boolean``                        boolean
``smallint``, ``integer``,         integer
``bigint``, ``oid``
``real``, ``double precision``     float (NaN and infinities: null, as Drasi's JSON gives)
``numeric``                        float (as Drasi: "converted to f64"; NaN and infinities null)
``text``, ``varchar``, ``name``,   string (``char(n)`` without its padding, as Drasi)
``char(n)``, ``"char"``
``uuid``                           string
``timestamp``                      string ``2024-01-02 10:00:00.123456`` (as Drasi)
``timestamptz``                    string, RFC 3339 in UTC: ``2024-01-02T10:00:00.123456+00:00``
``date``, ``time``                 string ``2024-01-02``, ``10:00:00``
``json``, ``jsonb``                the value: maps, lists, numbers as Drasi reads JSON
``bytea``                          string, the bytes in base64 (as Drasi)
anything else                      string: the type's text, with a warning once per column
=================================  ============================================================
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any, Final

from drasi_ray.source.middleware.parse_json import parse_json_as_drasi

logger = logging.getLogger("drasi_ray.postgres")

BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID, JSON = 16, 17, 18, 19, 20, 21, 23, 25, 26, 114
FLOAT4, FLOAT8, BPCHAR, VARCHAR, DATE, TIME = 700, 701, 1042, 1043, 1082, 1083
TIMESTAMP, TIMESTAMPTZ, NUMERIC, UUID, JSONB = 1114, 1184, 1700, 2950, 3802


def _boolean(text: str) -> bool:
    if text in ("t", "true"):
        return True
    if text in ("f", "false"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _timestamptz(text: str) -> str:
    """``2024-01-02 10:00:00.5+00`` (TimeZone=UTC) -> ``2024-01-02T10:00:00.5+00:00``."""
    if not text.endswith("+00") or " " not in text:
        return text  # infinity, -infinity, a BC date: as PostgreSQL writes it
    return text[:-3].replace(" ", "T", 1) + "+00:00"


def _bytea(text: str) -> str:
    if not text.startswith("\\x"):
        raise ValueError("bytea text without the hex prefix")
    return base64.b64encode(binascii.unhexlify(text[2:])).decode("ascii")


def _json(text: str) -> Any:
    return parse_json_as_drasi(text)


def _text(text: str) -> str:
    return text


CONVERTERS: Final[dict[int, Callable[[str], Any]]] = {
    BOOL: _boolean,
    INT2: int,
    INT4: int,
    INT8: int,
    OID: int,
    FLOAT4: _finite,
    FLOAT8: _finite,
    NUMERIC: _finite,
    TEXT: _text,
    VARCHAR: _text,
    NAME: _text,
    CHAR: _text,
    BPCHAR: lambda text: text.rstrip(" "),
    UUID: _text,
    TIMESTAMP: _text,
    TIMESTAMPTZ: _timestamptz,
    DATE: _text,
    TIME: _text,
    JSON: _json,
    JSONB: _json,
    BYTEA: _bytea,
}
"""The types Drasi maps, by type OID (the built-in OIDs never change)."""


def supported(type_oid: int) -> bool:
    """Whether a type has a mapping (any other is read as its text, with a warning)."""
    return type_oid in CONVERTERS


class ValueReader:
    """Maps column text to property values; warns once per column read as plain text.

    ``where`` in each call names the column (``table.column``) for the warning: a column of
    an unsupported type, or a value its type's mapping cannot read (a JSON number beyond a
    double), is the text as PostgreSQL wrote it.
    """

    def __init__(self, source_id: str) -> None:
        self.source_id = source_id
        self._warned: set[str] = set()

    def read(self, type_oid: int, text: str | None, where: str) -> Any:
        if text is None:
            return None
        convert = CONVERTERS.get(type_oid)
        if convert is None:
            self._warn(where, f"its type (OID {type_oid}) has no mapping")
            return text
        try:
            return convert(text)
        except ValueError as exc:
            self._warn(where, f"a value could not be read ({exc})")
            return text

    def announce(self, places: Sequence[str], type_oids: Sequence[int]) -> None:
        """Warn now (once) of each column without a mapping: at start, before any value."""
        for where, type_oid in zip(places, type_oids, strict=True):
            if type_oid not in CONVERTERS:
                self._warn(where, f"its type (OID {type_oid}) has no mapping")

    def _warn(self, where: str, why: str) -> None:
        if where in self._warned:
            return
        self._warned.add(where)
        logger.warning(
            "PostgreSQL source %r: column %s is read as text: %s", self.source_id, where, why
        )

    @property
    def warned(self) -> frozenset[str]:
        """The columns read as text so far (``table.column``)."""
        return frozenset(self._warned)
