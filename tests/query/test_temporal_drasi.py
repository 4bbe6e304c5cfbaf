"""Temporal values as Drasi computes them (drasi-core's temporal functions and expressions).

Values are compared through ``toString``-like ISO text or through accessors, never through the
text a result row gets (tested in test_output_values.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from drasi_ray.query import temporal
from drasi_ray.query.values import to_output
from tests.query._helpers import evaluate


def value_of(text: str) -> Any:
    """An expression's value, a temporal one as its ISO text."""
    value = evaluate(text)
    iso = temporal.to_iso(value)
    return to_output(value) if iso is None else iso


# --------------------------------------------------------------------------- duration.*


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The elapsed time, never split into months (drasi-core Between: a chrono difference).
        ("duration.between(date('2024-01-01'), date('2024-03-06'))", "P65D"),
        ("duration.between(date('2024-03-06'), date('2024-01-01'))", "P-65D"),
        ("duration.between(date('2024-01-01'), date('2024-03-06')).days", 65),
        (
            "duration.between(datetime('2024-01-01T00:00Z'), datetime('2024-02-02T01:10Z'))",
            "PT769H10M",
        ),
        (
            "duration.between(localdatetime('2024-01-31T10:00'), "
            "localdatetime('2024-03-01T10:00'))",
            "PT720H",
        ),
        # A local datetime paired with a zoned one is taken in the zoned one's zone.
        (
            "duration.between(datetime({year: 2024, month: 1, day: 15, hour: 10, "
            "timezone: '+01:00'}), localdatetime('2024-01-15T11:30'))",
            "PT1H30M",
        ),
        ("duration.between(null, date('2024-01-01'))", None),
        # Calendar months between the two dates, whatever the days of month.
        ("duration.inMonths(date('2024-01-31'), date('2024-02-01'))", "P1M"),
        ("duration.inMonths(date('2024-01-01'), date('2025-03-31'))", "P1Y2M"),
        ("duration.inMonths(date('2024-03-15'), date('2024-01-20'))", "P-2M"),
        (
            "duration.inMonths(datetime({year: 2024, month: 1, day: 31, hour: 23, "
            "timezone: '-02:00'}), localdatetime('2024-03-01T00:00'))",
            "P2M",
        ),
        ("duration.inMonths(localtime('10:00'), localtime('12:00'))", "PT0S"),
        ("duration.inMonths(null, date('2024-01-01'))", None),
    ],
)
def test_duration_functions(text: str, expected: Any) -> None:
    assert value_of(text) == expected
