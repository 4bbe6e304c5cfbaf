"""The accumulators on their own: Drasi's collect order, typed reads, and taking back a value
an accumulator does not hold."""

from __future__ import annotations

from drasi_ray.query.aggregates import (
    Collect,
    Max,
    Min,
    Sum,
    accumulator_factory,
    aggregate_value,
)
from drasi_ray.query.temporal import parse_duration


def test_collect_takes_back_the_first_equal_value_and_keeps_integers_and_floats_apart() -> None:
    collect = Collect()
    for token, value in enumerate(["b1", "b3", "b1", 2, 2.0]):
        collect.add(token, value)
    collect.remove(99, "b1")
    collect.remove(98, 2.0)
    assert collect.result() == ["b3", "b1", 2]
    assert type(collect.result()[2]) is int


def test_min_and_max_read_as_a_snapshot_are_typed_by_the_argument() -> None:
    maximum = Max()
    maximum.add(1, 5)
    maximum.add(2, 2.5)
    assert aggregate_value("max", maximum, 3, snapshot=False) == 5.0
    assert type(aggregate_value("max", maximum, 3, snapshot=True)) is int
    minimum = Min()
    minimum.add(1, 2.5)
    assert aggregate_value("min", minimum, 3, snapshot=True) == 2  # truncated, as Drasi
    assert aggregate_value("min", minimum, 3.0, snapshot=True) == 2.5


def test_sum_is_typed_by_what_the_group_holds_and_mixed_has_no_total() -> None:
    total = Sum()
    assert aggregate_value("sum", total, parse_duration("PT1S"), snapshot=True) == (
        parse_duration("PT0S")
    )
    total.add(1, 2)
    assert aggregate_value("sum", total, 2, snapshot=False) == 2.0
    total.add(2, parse_duration("PT1S"))
    assert aggregate_value("sum", total, 2, snapshot=False) is None
    distinct = accumulator_factory("sum", distinct=True)()  # read by result(), not typed
    distinct.add(1, 2)
    distinct.add(2, parse_duration("PT1S"))
    assert aggregate_value("sum", distinct, 2, snapshot=False) is None


def test_a_group_that_empties_sums_from_zero_again() -> None:
    # Drasi's running float keeps the rounding error of values long gone (docs/conformance.md,
    # sum_float_drift); here an emptied group forgets it.
    for name in ("sum", "avg"):
        total = accumulator_factory(name, distinct=False)()
        total.add(1, 100000.1)
        total.add(2, 0.2)
        total.remove(1, 100000.1)
        total.remove(2, 0.2)
        assert total.result() == 0.0
        total.add(3, 0.1)
        assert total.result() == 0.1


def test_taking_back_a_value_not_held_changes_nothing() -> None:
    # Drasi's bookkeeping of a group fed by an aggregating part can take back a value the
    # group never received (drasi-lib then fails the query with CorruptedData): not a crash.
    for name in ("min", "max"):
        extreme = accumulator_factory(name, distinct=False)()
        extreme.add(1, 3)
        extreme.remove(2, 7)
        assert extreme.result() == 3.0
    distinct = accumulator_factory("count", distinct=True)()
    distinct.remove(1, "x")
    assert distinct.result() == 0
