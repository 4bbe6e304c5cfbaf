"""A query's function state in Redis: written, deleted, reloaded, and dropped when the query
text it belongs to changed; the manual clock's time."""

from __future__ import annotations

import asyncio

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.stateful import FunctionState
from drasi_ray.shards.state import StateStore

QUERY = "MATCH (a:A) WHERE drasi.trueFor(a.on, duration({seconds: 10})) RETURN a.id AS id"


def _query_with_pending_entry() -> ContinuousQuery:
    query = ContinuousQuery("q", QUERY)
    element = node("a1", ["A"], {"id": "a1", "on": True}, 1_000)
    query.apply(ElementDelta(None, element, ZERO_VERSION, 1_000))
    return query


def test_function_state_round_trips_through_redis(redis_url: str) -> None:
    async def run() -> tuple[dict[str, bytes], dict[str, bytes]]:
        store = StateStore.from_url(redis_url, "app")
        query = _query_with_pending_entry()
        await store.save_function_state("q", query.state.take_changes(), "digest-1")
        saved = await store.load_function_state("q", "digest-1")
        query.fire_due(11_000)  # the entry is popped: its field is deleted
        await store.save_function_state("q", query.state.take_changes(), "digest-1")
        after = await store.load_function_state("q", "digest-1")
        await store.close()
        return saved, after

    saved, after = asyncio.run(run())
    restored = FunctionState()
    restored.load(saved)
    assert restored.restored and restored.queue.next_due() == 11_000
    assert not any(name.startswith("q:") for name in after)
    assert any(name.startswith("m:") for name in after)


def test_state_of_another_query_text_is_dropped(redis_url: str) -> None:
    async def run() -> tuple[dict[str, bytes], dict[str, bytes]]:
        store = StateStore.from_url(redis_url, "app")
        query = _query_with_pending_entry()
        await store.save_function_state("q", query.state.take_changes(), "old-text")
        other = await store.load_function_state("q", "new-text")
        again = await store.load_function_state("q", "old-text")
        await store.close()
        return other, again

    other, again = asyncio.run(run())
    assert other == {} and again == {}


def test_the_manual_clock_is_kept(redis_url: str) -> None:
    async def run() -> tuple[int | None, int | None]:
        store = StateStore.from_url(redis_url, "app")
        before = await store.load_manual_clock()
        await store.save_manual_clock(1_234)
        after = await store.load_manual_clock()
        await store.close()
        return before, after

    assert asyncio.run(run()) == (None, 1_234)
