"""A hosted query's inbox: bootstrap rounds over several shards, held and superseded deltas."""

from __future__ import annotations

from drasi_ray.host.inbox import QueryInbox, merge_by_version
from drasi_ray.model.changes import ElementDelta, node
from drasi_ray.model.shards import BootstrapPart, shard_of, split_by_shard


def delta(element_id: str, ms: int, index: int = 0) -> ElementDelta:
    element = node(element_id, ["N"], {"v": ms})
    return ElementDelta(None, element, (ms, 0, index), ms)


def part(round_: int, shard: int, shards: int, *ids: str) -> BootstrapPart:
    return BootstrapPart("q", round_, shard, shards, tuple(node(i, ["N"]) for i in ids))


def test_the_graph_comes_once_every_shard_sent_its_part() -> None:
    inbox = QueryInbox()
    assert inbox.part(part(1, 0, 3, "a")) is None
    assert inbox.loading
    assert inbox.part(part(1, 2, 3, "c")) is None
    graph = inbox.part(part(1, 1, 3, "b"))
    assert graph is not None and sorted(e.id for e in graph.elements) == ["a", "b", "c"]
    assert not inbox.loading and inbox.bootstrapped


def test_deltas_after_a_shards_part_wait_and_deltas_before_it_are_superseded() -> None:
    inbox = QueryInbox()
    inbox.part(part(1, 0, 2, "a"))
    assert inbox.deltas({0: [delta("a", 5)], 1: [delta("b", 6)]}) == []
    assert inbox.superseded == 1  # shard 1's part (still to come) includes "b" at 6
    inbox.part(part(1, 1, 2, "b"))
    assert [d.version for d in inbox.take_held()] == [(5, 0, 0)]
    assert [d.version for d in inbox.deltas({1: [delta("b", 7)]})] == [(7, 0, 0)]


def test_a_newer_round_starts_over_and_an_older_part_is_ignored() -> None:
    inbox = QueryInbox()
    inbox.part(part(1, 0, 2, "a"))
    inbox.part(part(1, 1, 2, "b"))
    inbox.part(part(2, 1, 3, "b2"))  # rescaled to 3 shards: a new round
    inbox.deltas({1: [delta("b2", 9)]})
    assert inbox.part(part(1, 0, 2, "stale")) is None
    inbox.part(part(2, 0, 3, "a2"))
    graph = inbox.part(part(2, 2, 3, "c2"))
    assert graph is not None and sorted(e.id for e in graph.elements) == ["a2", "b2", "c2"]
    assert [d.version for d in inbox.take_held()] == [(9, 0, 0)]


def test_a_units_deltas_are_applied_in_the_batchs_order() -> None:
    inbox = QueryInbox()
    inbox.part(part(1, 0, 1))
    first = [delta("a", 1), delta("a", 3)]
    second = [delta("b", 2), delta("b", 4)]
    assert [d.version[0] for d in inbox.deltas({0: first, 1: second})] == [1, 2, 3, 4]
    assert merge_by_version([[], first]) == first


def test_split_by_shard_keeps_each_shards_changes_in_stream_order() -> None:
    from drasi_ray.model.changes import DecodedEntry, ElementChange, Op, Timing

    def change(element_id: str, ms: int, index: int) -> ElementChange:
        return ElementChange(Op.UPDATE, node(element_id, ["N"]), (ms, 0, index), Timing(0))

    ids = [f"e{i}" for i in range(40)]
    entries = [
        DecodedEntry(f"{ms}-0", tuple(change(i, ms, n) for n, i in enumerate(ids[ms::7])))
        for ms in range(7)
    ]
    parts = split_by_shard(entries, 3)
    seen = []
    for shard, owned in parts.items():
        versions = [c.version for entry in owned for c in entry.changes]
        assert versions == sorted(versions)
        for entry in owned:
            assert all(shard_of(c.element.id, 3) == shard for c in entry.changes)
            seen += [c.element.id for c in entry.changes]
    assert sorted(seen) == sorted(ids)


def test_shard_of_is_stable_and_spreads_ids_evenly() -> None:
    assert shard_of("sensor-1", 1) == 0
    assert shard_of("sensor-1", 4) == shard_of("sensor-1", 4)
    counts = [0, 0, 0, 0]
    for number in range(10_000):
        counts[shard_of(f"sensor-{number}", 4)] += 1
    assert min(counts) > 2_300 and max(counts) < 2_700
