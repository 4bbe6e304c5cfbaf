"""Query chaining's row ledger: which node changes a query's row changes become (no I/O)."""

from __future__ import annotations

from typing import Any

import orjson

from drasi_ray.reactions.chain import (
    ENTRY_BYTES,
    ENTRY_EVENTS,
    NodeChange,
    Plan,
    RowLedger,
    content,
    entry_payloads,
    platform_events,
)


def ops(plan: Plan) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c.op, c.node_id, c.row) for c in plan.changes]


def test_row_changes_become_inserts_updates_and_deletes_of_nodes_by_row_id() -> None:
    ledger = RowLedger("up", {})
    added = ledger.plan_changes([({'["a"]': {"id": 1}, '["b"]': {"id": 1}}, 5)])
    assert ops(added) == [("i", '["a"]', {"id": 1}), ("i", '["b"]', {"id": 1})]
    assert [c.time_ms for c in added.changes] == [5, 5]
    updated = ledger.plan_changes([({'["b"]': {"id": 2}}, 6)])
    assert ops(updated) == [("u", '["b"]', {"id": 2})]
    deleted = ledger.plan_changes([({'["a"]': None, '["gone"]': None}, 7)])
    assert ops(deleted) == [("d", '["a"]', {"id": 1})]
    assert deleted.dropped == ['["a"]']
    assert ledger.rows() == {'["b"]': {"id": 2}}


def test_a_run_of_changes_writes_each_node_once_as_it_ends() -> None:
    ledger = RowLedger("up", {'["k"]': content({"k": "a", "n": 1})})
    first = ({'["k"]': {"k": "a", "n": 2}, '["new"]': {"k": "b", "n": 1}}, 1)
    second = ({'["k"]': {"k": "a", "n": 3}, '["new"]': None}, 2)
    plan = ledger.plan_changes([first, second])
    assert ops(plan) == [("u", '["k"]', {"k": "a", "n": 3})]
    assert plan.changes[0].time_ms == 2
    assert plan.put == {'["k"]': content({"k": "a", "n": 3})}
    assert plan.dropped == []


def test_a_row_that_reads_the_same_is_not_written_again_but_a_float_for_an_integer_is() -> None:
    ledger = RowLedger("up", {'["k"]': content({"n": 2, "top": 5.0})})
    assert ledger.plan_changes([({'["k"]': {"top": 5.0, "n": 2}}, 1)]).changes == []
    assert ops(ledger.plan_changes([({'["k"]': {"top": 5, "n": 2}}, 1)])) == [
        ("u", '["k"]', {"top": 5, "n": 2})
    ]


def test_a_held_row_of_other_columns_is_replaced_whole() -> None:
    ledger = RowLedger("up", {'["k"]': content({"n": 2, "old": 1})})
    assert ops(ledger.plan_reconcile({'["k"]': {"n": 2}}, 1)) == [("i", '["k"]', {"n": 2})]


def test_reconciling_writes_only_the_difference() -> None:
    held = {'["1"]': {"id": 1}, '["2"]': {"id": 2}, '["3"]': {"id": 2}}
    ledger = RowLedger("up", {node_id: content(row) for node_id, row in held.items()})
    current = {'["2"]': {"id": 2}, '["3"]': {"id": 3}, '["4"]': {"id": 2}}
    plan = ledger.plan_reconcile(current, 9)
    assert ops(plan) == [
        ("d", '["1"]', {"id": 1}),
        ("u", '["3"]', {"id": 3}),
        ("i", '["4"]', {"id": 2}),
    ]
    assert plan.dropped == ['["1"]']
    assert ledger.plan_reconcile(current, 10).changes == []
    assert ledger.rows() == current


def test_events_are_platform_changes_labelled_with_the_query_at_the_rows_time() -> None:
    changes = [NodeChange("i", '["s1"]', {"id": 1}, 1_700), NodeChange("d", '["s2"]', {}, 1_800)]
    inserted, deleted = platform_events("up", changes)
    assert inserted["op"] == "i"
    assert inserted["payload"]["after"] == {
        "id": '["s1"]',
        "labels": ["up"],
        "properties": {"id": 1},
    }
    assert inserted["payload"]["source"]["ts_ns"] == 1_700_000_000
    assert deleted["op"] == "d"
    assert deleted["payload"]["before"]["id"] == '["s2"]'


def test_a_large_plan_is_written_as_entries_a_reader_accepts() -> None:
    many = [NodeChange("i", f'["{n}"]', {"n": n}, 0) for n in range(ENTRY_EVENTS * 2 + 1)]
    assert [len(orjson.loads(p)["data"]) for p in entry_payloads("up", many)] == [500, 500, 1]
    wide = [NodeChange("i", f'["{n}"]', {"text": "x" * 100_000}, 0) for n in range(30)]
    payloads = entry_payloads("up", wide)
    assert all(len(payload) <= ENTRY_BYTES for payload in payloads)
    events = [event for payload in payloads for event in orjson.loads(payload)["data"]]
    assert [e["payload"]["after"]["id"] for e in events] == [c.node_id for c in wide]
