"""Query chaining's row ledger: which node changes a query's results become (no I/O)."""

from __future__ import annotations

from typing import Any

from drasi_ray.model.results import QueryResult
from drasi_ray.reactions.chain import RowLedger, platform_events


def result(*diffs: dict[str, Any]) -> QueryResult:
    return QueryResult("up", 1, 0, 0, tuple(diffs))


def ops(plan: object) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c.op, c.node_id, c.row) for c in plan.changes]  # type: ignore[attr-defined]


def test_adds_updates_and_deletes_keep_one_node_per_row() -> None:
    ledger = RowLedger("up", {}, 0)
    added = ledger.plan_results(
        [result({"type": "ADD", "data": {"id": 1}}, {"type": "ADD", "data": {"id": 1}})]
    )
    assert ops(added) == [("i", "up:0", {"id": 1}), ("i", "up:1", {"id": 1})]
    assert added.next_number == 2
    updated = ledger.plan_results(
        [result({"type": "UPDATE", "before": {"id": 1}, "after": {"id": 2}})]
    )
    assert ops(updated) == [("i", "up:1", {"id": 2})]
    deleted = ledger.plan_results([result({"type": "DELETE", "data": {"id": 1}})])
    assert ops(deleted) == [("d", "up:0", {"id": 1})]
    assert ledger.rows() == {"up:1": {"id": 2}}


def test_an_aggregation_updates_its_group_and_a_new_group_is_added() -> None:
    ledger = RowLedger("up", {}, 0)
    first = {"type": "aggregation", "before": {"k": "a", "n": 0}, "after": {"k": "a", "n": 1}}
    second = {"type": "aggregation", "before": {"k": "a", "n": 1}, "after": {"k": "a", "n": 2}}
    plan = ledger.plan_results([result(first), result(second)])
    assert ops(plan) == [("i", "up:0", {"k": "a", "n": 1}), ("i", "up:0", {"k": "a", "n": 2})]
    assert plan.put == {"up:0": {"k": "a", "n": 2}}


def test_reconciling_writes_only_the_difference() -> None:
    ledger = RowLedger("up", {"up:0": {"id": 1}, "up:1": {"id": 2}, "up:2": {"id": 2}}, 3)
    plan = ledger.plan_reconcile([{"id": 2}, {"id": 3}])
    assert sorted(ops(plan)) == [("d", "up:0", {"id": 1}), ("d", "up:1", {"id": 2}),
                                 ("i", "up:3", {"id": 3})]  # fmt: skip
    assert sorted(plan.dropped) == ["up:0", "up:1"]
    assert ledger.plan_reconcile([{"id": 2}, {"id": 3}]).changes == []


def test_events_are_platform_changes_labelled_with_the_query() -> None:
    ledger = RowLedger("up", {}, 0)
    plan = ledger.plan_results([result({"type": "ADD", "data": {"id": 1}})])
    (event,) = platform_events("up", plan.changes)
    assert event["op"] == "i"
    assert event["payload"]["after"] == {"id": "up:0", "labels": ["up"], "properties": {"id": 1}}
    assert event["payload"]["source"]["table"] == "node"
