"""How query parts turn row changes into diffs, step by step as drasi-core's own part tests
(``core/src/evaluation/parts/tests/*.rs``) drive them, through a whole ContinuousQuery.

Drasi's part tests look at one part's raw output; a continuous query then drops an
aggregation whose before equals its after unless it is a new row entering its group
(``continuous_query.rs``), so where a part test shows such a no-change aggregation, the
query emits nothing, and so do we.
"""

from __future__ import annotations

from typing import Any

from tests.query.test_engine import Graph, add, agg, assert_diffs, delete, update


def _put(g: Graph, element_id: str, **props: Any) -> list[dict[str, Any]]:
    return g.node(element_id, "X", **props)


# --------------------------------------------------------------------------- single part


def test_non_aggregating_update_then_leaving_the_where() -> None:
    # single_part_non_aggregating.rs, update_solution
    g = Graph("MATCH (a) WHERE a.Value1 < 10 RETURN a.Value1 AS v, a.Name AS name")
    assert_diffs(_put(g, "1", Value1=1, Name="foo"), add(v=1, name="foo"))
    assert_diffs(
        _put(g, "1", Value1=2, Name="bar"),
        update({"v": 1, "name": "foo"}, {"v": 2, "name": "bar"}),
    )
    assert_diffs(_put(g, "1", Value1=10, Name="bar"), delete(v=2, name="bar"))


def test_aggregating_updates_across_the_where() -> None:
    # single_part_aggregating.rs, aggregating_query_update_solution
    g = Graph(
        "MATCH (a) WHERE a.Value1 < 10 "
        "RETURN a.Name AS key, sum(a.Value1) AS my_sum, min(a.Value1) AS my_min"
    )
    assert_diffs(
        _put(g, "1", Value1=1, Name="foo"),
        agg(
            {"key": "foo", "my_sum": 0.0, "my_min": None},
            {"key": "foo", "my_sum": 1.0, "my_min": 1.0},
        ),
    )
    _put(g, "2", Value1=2, Name="foo")
    _put(g, "3", Value1=5, Name="bar")
    foo = {"key": "foo"}
    assert_diffs(
        _put(g, "1", Value1=2, Name="foo"),
        agg({**foo, "my_sum": 3.0, "my_min": 1.0}, {**foo, "my_sum": 4.0, "my_min": 2.0}),
    )
    assert_diffs(
        _put(g, "1", Value1=7, Name="foo"),
        agg({**foo, "my_sum": 4.0, "my_min": 2.0}, {**foo, "my_sum": 9.0, "my_min": 2.0}),
    )
    # The row stops passing the WHERE: taken out of its group.
    assert_diffs(
        _put(g, "1", Value1=17, Name="foo"),
        agg({**foo, "my_sum": 9.0, "my_min": 2.0}, {**foo, "my_sum": 2.0, "my_min": 2.0}),
    )
    # The row starts passing the WHERE again: before is null.
    assert_diffs(
        _put(g, "1", Value1=3, Name="foo"), agg(None, {**foo, "my_sum": 5.0, "my_min": 2.0})
    )


def test_aggregating_group_switch_reports_both_groups() -> None:
    # single_part_aggregating.rs, group_switch and group_switch_complex_accumulator
    g = Graph("MATCH (a) RETURN a.Name AS key, sum(a.Value1) AS s, avg(a.Value1) AS m")
    _put(g, "1", Value1=1, Name="foo")
    _put(g, "2", Value1=2, Name="foo")
    _put(g, "3", Value1=5, Name="bar")
    assert_diffs(
        _put(g, "1", Value1=1, Name="bar"),
        agg({"key": "bar", "s": 5.0, "m": 5.0}, {"key": "bar", "s": 6.0, "m": 3.0}),
        agg({"key": "foo", "s": 3.0, "m": 1.5}, {"key": "foo", "s": 2.0, "m": 2.0}),
    )


# --------------------------------------------------------------------------- several parts


def test_aggregating_with_then_where_then_projecting_return() -> None:
    # multi_part.rs, aggregating_part_to_scalar_part_update_solution
    g = Graph(
        "MATCH (a) WHERE a.Value1 < 10 "
        "WITH a.Name AS interim_key, sum(a.Value1) AS interim_sum WHERE interim_sum > 2 "
        "RETURN interim_key AS key, interim_sum AS my_sum"
    )
    assert_diffs(_put(g, "1", Value1=1, Name="foo"))
    assert_diffs(_put(g, "2", Value1=2, Name="foo"), add(key="foo", my_sum=3.0))
    assert_diffs(_put(g, "3", Value1=5, Name="bar"), add(key="bar", my_sum=5.0))
    assert_diffs(
        _put(g, "1", Value1=2, Name="foo"),
        update({"key": "foo", "my_sum": 3.0}, {"key": "foo", "my_sum": 4.0}),
    )
    assert_diffs(
        _put(g, "1", Value1=1, Name="foo"),
        update({"key": "foo", "my_sum": 4.0}, {"key": "foo", "my_sum": 3.0}),
    )
    assert_diffs(_put(g, "1", Value1=0, Name="foo"), delete(key="foo", my_sum=3.0))
    assert_diffs(_put(g, "1", Value1=5, Name="foo"), add(key="foo", my_sum=7.0))
    assert_diffs(
        _put(g, "2", Value1=10, Name="foo"),
        update({"key": "foo", "my_sum": 7.0}, {"key": "foo", "my_sum": 5.0}),
    )


def test_aggregating_with_emptied_by_deletes() -> None:
    # multi_part.rs, aggregating_part_to_scalar_part_remove_solution
    g = Graph(
        "MATCH (a) WHERE a.Value1 < 10 WITH a.Name AS key, sum(a.Value1) AS my_sum "
        "WHERE my_sum > 0 RETURN key, my_sum"
    )
    _put(g, "1", Value1=1, Name="foo")
    _put(g, "2", Value1=2, Name="foo")
    _put(g, "3", Value1=5, Name="bar")
    assert_diffs(
        g.delete("2"), update({"key": "foo", "my_sum": 3.0}, {"key": "foo", "my_sum": 1.0})
    )
    assert_diffs(g.delete("1"), delete(key="foo", my_sum=1.0))


def test_aggregating_with_then_aggregating_return_with_comments() -> None:
    # multi_part.rs, aggregating_part_to_aggregating_part_group_switch_with_comments: an
    # unaliased `a.Category` in the WITH is the column `Category` of the next part.
    g = Graph(
        """MATCH (a)
        WITH a.Name, a.Category, sum(a.Value1) AS my_sum
        // a comment
        WHERE my_sum > 0
        RETURN Category, avg(my_sum) AS my_avg
        // another comment"""
    )
    assert_diffs(
        _put(g, "1", Value1=1, Name="foo", Category="A"),
        agg({"Category": "A", "my_avg": 0.0}, {"Category": "A", "my_avg": 1.0}),
    )
    _put(g, "2", Value1=2, Name="foo", Category="B")
    _put(g, "3", Value1=5, Name="bar", Category="A")
    assert_diffs(
        _put(g, "1", Value1=2, Name="foo", Category="A"),
        agg({"Category": "A", "my_avg": 3.0}, {"Category": "A", "my_avg": 3.5}),
    )
    assert_diffs(
        _put(g, "1", Value1=2, Name="foo", Category="B"),
        agg({"Category": "B", "my_avg": 2.0}, {"Category": "B", "my_avg": 4.0}),
        agg({"Category": "A", "my_avg": 3.5}, {"Category": "A", "my_avg": 5.0}),
    )


def test_sequential_aggregations() -> None:
    # multi_part.rs, sequential_aggregations1: the part test shows total 2 -> 2 for the
    # third and fourth steps; the continuous query drops those.
    g = Graph(
        "MATCH (a) WITH a.Category AS category, count(a) AS count "
        "RETURN count(CASE count WHEN 0 THEN NULL ELSE count END) AS total"
    )
    assert_diffs(_put(g, "1", Category="A"), agg({"total": 0}, {"total": 1}))
    assert_diffs(_put(g, "2", Category="B"), agg({"total": 1}, {"total": 2}))
    assert_diffs(_put(g, "3", Category="B"))
    assert_diffs(g.delete("2"))
    assert_diffs(g.delete("1"), agg({"total": 2}, {"total": 1}))
    # sequential_aggregations2
    s = Graph("MATCH (a) WITH a.Category AS category, sum(a.Value1) AS s RETURN sum(s) AS total")
    assert_diffs(_put(s, "1", Category="A", Value1=2), agg({"total": 0.0}, {"total": 2.0}))
    assert_diffs(_put(s, "2", Category="B", Value1=-2), agg({"total": 2.0}, {"total": 0.0}))
    assert_diffs(_put(s, "3", Category="B", Value1=1), agg({"total": 0.0}, {"total": 1.0}))
    assert_diffs(s.delete("2"), agg({"total": 1.0}, {"total": 3.0}))
    assert_diffs(s.delete("1"), agg({"total": 3.0}, {"total": 1.0}))
