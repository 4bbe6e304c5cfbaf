"""The element history a store shard keeps for a query calling Drasi's past functions: fed
the deltas routed to the query, shipped with its bootstraps, and durable in Redis."""

from __future__ import annotations

import asyncio

from drasi_ray.model.changes import Element, Op, node
from drasi_ray.model.history import ElementHistory, HistoryLimits
from drasi_ray.shards.core import ShardCore
from drasi_ray.shards.routing import LabelFilter
from drasi_ray.shards.state import StateStore
from drasi_ray.source.decode import change_event, decode_entry, encode_cloud_event


def _apply(core: ShardCore, *changes: tuple[Op, Element]) -> None:
    entries = []
    for number, (op, element) in enumerate(changes, start=1):
        event = change_event(op, element, element.effective_from * 1_000_000)
        entry_id = f"{number}-{element.effective_from}"
        entries.append(decode_entry(entry_id, {b"data": encode_cloud_event([event])}))
    core.apply_entries("s", entries)


def _thing(value: int, time: int, element_id: str = "t1", label: str = "Thing") -> Element:
    return node(element_id, [label], {"Value": value}, effective_from=time)


def _values(history: ElementHistory, element_id: str = "t1") -> list[int]:
    return [e.properties["Value"] for e in history.between(element_id, 0, 10**9, False)]


def _core(durable: bool = False) -> ShardCore:
    core = ShardCore(durable=durable)
    core.table.register_query("past", ["s"], LabelFilter.of(["Thing"], []))
    core.table.register_query("plain", ["s"], LabelFilter.of(["Thing"], []))
    core.keep_history("past", HistoryLimits(max_versions=3))
    return core


def test_the_shard_core_records_what_it_routes_to_a_history_query() -> None:
    core = _core()
    _apply(core, *[(Op.UPDATE, _thing(value, value * 1000)) for value in range(5)])
    _apply(core, (Op.INSERT, _thing(9, 9000, "other", "Other")))
    assert set(core.histories) == {"past"}
    assert _values(core.histories["past"]) == [2, 3, 4]
    assert core.histories["past"].as_at("other", 10**9) is None


def test_an_element_leaving_the_querys_labels_leaves_its_history() -> None:
    core = _core()
    _apply(core, (Op.INSERT, _thing(1, 1000)), (Op.INSERT, _thing(2, 2000, "t2")))
    relabelled = _thing(3, 3000, "t1", "Gone")
    _apply(core, (Op.UPDATE, relabelled), (Op.DELETE, _thing(2, 4000, "t2")))
    assert len(core.histories["past"]) == 0


def test_a_bootstrap_ships_the_history_of_its_snapshot() -> None:
    core = _core()
    _apply(core, *[(Op.UPDATE, _thing(value, value * 1000)) for value in range(3)])
    elements = core.snapshot("past", ["s"])
    shipped = ElementHistory()
    shipped.load(core.history_records("past", elements))
    assert _values(shipped) == [0, 1, 2]
    assert core.history_records("plain", elements) == {}


def test_a_new_history_query_starts_from_the_snapshot() -> None:
    core = _core()
    _apply(core, (Op.INSERT, _thing(1, 1000)))
    core.keep_history("late", HistoryLimits())
    core.table.register_query("late", ["s"], LabelFilter.of(["Thing"], []))
    records = core.history_records("late", core.snapshot("late", ["s"]))
    shipped = ElementHistory()
    shipped.load(records)
    assert _values(shipped) == [1]
    core.keep_history("late", None)
    assert "late" not in core.histories


def test_histories_and_their_limits_survive_in_redis(redis_url: str) -> None:
    async def run() -> ElementHistory:
        core = _core(durable=True)
        _apply(core, *[(Op.UPDATE, _thing(value, value * 1000)) for value in range(5)])
        _apply(core, (Op.INSERT, _thing(7, 100, "t2")), (Op.DELETE, _thing(7, 200, "t2")))
        state = StateStore.from_url(redis_url, "app")
        await state.save_history_limits("past", HistoryLimits(max_versions=3))
        await state.save_history("past", core.histories["past"].take_writes())
        loaded = await state.load_histories()
        await state.save_history_limits("past", None)
        assert await state.load_histories() == {}
        await state.close()
        return loaded["past"]

    history = asyncio.run(run())
    assert history.limits == HistoryLimits(max_versions=3) and history.durable
    assert _values(history) == [2, 3, 4]
    assert history.as_at("t2", 10**9) is None
