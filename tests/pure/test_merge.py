"""The query host's delivery merger: link order, whole batches, cycles, expiry, epochs."""

from __future__ import annotations

import itertools
import random

from drasi_ray.host.merge import Arrival, DeliveryMerger, Offered, Unit
from drasi_ray.model.shards import BatchTag


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def tag(consumer: str, number: int, *shards: int) -> BatchTag:
    return BatchTag(consumer, number, tuple(sorted(shards)))


def arrival(
    link: int, number: int, payload: str, batch: BatchTag | None = None, epoch: int = 1
) -> Arrival:
    return Arrival(link, epoch, number, batch, payload)


def payloads(units: list[Unit]) -> list[tuple[str, ...]]:
    return [tuple(sorted(part.payload for part in unit.parts)) for unit in units]


def test_untagged_deliveries_go_in_link_order_whatever_their_arrival_order() -> None:
    merger = DeliveryMerger()
    assert merger.offer(arrival(0, 1, "b")) == (Offered.ACCEPTED, [])
    assert merger.offer(arrival(0, 2, "c")) == (Offered.ACCEPTED, [])
    status, units = merger.offer(arrival(0, 0, "a"))
    assert status is Offered.ACCEPTED
    assert payloads(units) == [("a",), ("b",), ("c",)]
    assert merger.offer(arrival(0, 1, "b"))[0] is Offered.DUPLICATE
    assert merger.waiting == 0


def test_the_parts_of_one_batch_form_one_unit_once_both_are_at_their_heads() -> None:
    merger = DeliveryMerger()
    batch = tag("c", 0, 0, 1)
    assert merger.offer(arrival(0, 0, "a0", batch))[1] == []
    _, units = merger.offer(arrival(1, 0, "b0", batch))
    assert payloads(units) == [("a0", "b0")]
    assert units[0].merged
    assert merger.splits == 0


def test_one_consumer_keeps_every_batch_whole_whatever_the_interleaving() -> None:
    """With one consumer every shard sees its batches in the same order, so no batch is ever
    split, however the links' deliveries interleave on the way."""
    for seed in range(20):
        rng = random.Random(seed)
        merger = DeliveryMerger()
        arrivals = []
        for link in range(3):
            arrivals.append(
                [arrival(link, n, f"{link}:{n}", tag("c", n, 0, 1, 2)) for n in range(8)]
            )
        units: list[Unit] = []
        while any(arrivals):
            queue = rng.choice([q for q in arrivals if q])
            units += merger.offer(queue.pop(0))[1]
        assert [len(unit.parts) for unit in units] == [3] * 8
        assert [unit.parts[0].tag.number for unit in units if unit.parts[0].tag] == list(range(8))
        assert merger.splits == 0


def test_batches_applied_in_opposite_orders_by_two_shards_are_split_not_deadlocked() -> None:
    merger = DeliveryMerger()
    first, second = tag("c1", 0, 0, 1), tag("c2", 0, 0, 1)
    merger.offer(arrival(0, 0, "a-first", first))
    merger.offer(arrival(0, 1, "a-second", second))
    merger.offer(arrival(1, 0, "b-second", second))
    _, units = merger.offer(arrival(1, 1, "b-first", first))
    applied = [part.payload for unit in units for part in unit.parts]
    assert sorted(applied) == ["a-first", "a-second", "b-first", "b-second"]
    assert applied.index("a-first") < applied.index("a-second")  # each link in its order
    assert applied.index("b-second") < applied.index("b-first")
    assert merger.splits == 1
    assert merger.waiting == 0


def test_a_head_waiting_for_a_part_still_on_its_way_is_not_split() -> None:
    """Link 1 holds batch y (whose part from link 2 is on its way) before batch n; link 0's n
    waits behind y without a cycle, so both batches stay whole once link 2's part comes."""
    merger = DeliveryMerger()
    y, n = tag("c", 0, 1, 2), tag("c", 1, 0, 1)
    merger.offer(arrival(1, 0, "b-y", y))
    merger.offer(arrival(1, 1, "b-n", n))
    assert merger.offer(arrival(0, 0, "a-n", n))[1] == []
    _, units = merger.offer(arrival(2, 0, "c-y", y))
    assert payloads(units) == [("b-y", "c-y"), ("a-n", "b-n")]
    assert merger.splits == 0


def test_a_part_whose_sibling_never_comes_goes_alone_after_the_wait() -> None:
    clock = Clock()
    merger = DeliveryMerger(wait_s=2.0, clock=clock)
    merger.offer(arrival(0, 0, "a0", tag("c", 0, 0, 1)))
    merger.offer(arrival(0, 1, "a1"))
    assert merger.next_deadline() == 2.0
    clock.now = 1.9
    assert merger.expire() == []
    clock.now = 2.0
    assert payloads(merger.expire()) == [("a0",), ("a1",)]
    assert merger.next_deadline() is None
    assert merger.splits == 1


def test_a_new_epoch_releases_the_old_queue_and_excuses_the_link() -> None:
    merger = DeliveryMerger()
    batch = tag("c", 0, 0, 1)
    merger.offer(arrival(0, 0, "a-old", batch))  # waits for link 1
    merger.offer(arrival(1, 0, "b-old", tag("c", 1, 0, 1)))  # link 1's part of a later batch
    _, units = merger.offer(arrival(1, 0, "b-new", epoch=2))  # link 1 restarted
    applied = [part.payload for unit in units for part in unit.parts]
    assert applied[0] == "b-old"  # the old epoch's queue goes first, alone
    assert "a-old" in applied and "b-new" in applied
    assert merger.offer(arrival(1, 1, "late", epoch=1))[0] is Offered.STALE
    assert merger.epoch(1) == 2


def test_deliveries_of_an_epoch_that_opens_later_are_held_until_it_opens() -> None:
    merger = DeliveryMerger()
    assert merger.offer(arrival(0, 3, "old", epoch=1)) == (Offered.ACCEPTED, [])
    assert merger.offer(arrival(0, 1, "new-1", epoch=5)) == (Offered.ACCEPTED, [])
    _, units = merger.offer(arrival(0, 0, "new-0", epoch=5))
    assert payloads(units) == [("new-0",), ("new-1",)]
    assert merger.epoch(0) == 5
    assert merger.waiting == 0  # the older epoch's delivery was dropped, never applied


def test_random_interleavings_of_several_consumers_apply_everything_once_in_link_order() -> None:
    for seed in range(30):
        rng = random.Random(seed)
        shards = 3
        per_link: list[list[Arrival]] = [[] for _ in range(shards)]
        numbers = [itertools.count() for _ in range(shards)]
        for batch_number in range(12):
            consumer = rng.choice(["c1", "c2", "c3"])
            involved = sorted(rng.sample(range(shards), rng.randint(1, shards)))
            batch = tag(consumer, batch_number, *involved) if len(involved) > 1 else None
            for link in involved:
                payload = f"{link}:{batch_number}"
                per_link[link].append(arrival(link, 0, payload, batch))
        for link, queue in enumerate(per_link):  # each shard applies in its own order
            rng.shuffle(queue)
            per_link[link] = [
                Arrival(link, 1, next(numbers[link]), a.tag, a.payload) for a in queue
            ]
        merger = DeliveryMerger()
        pending = [list(q) for q in per_link]
        units: list[Unit] = []
        while any(pending):
            queue = rng.choice([q for q in pending if q])
            units += merger.offer(queue.pop(rng.randrange(len(queue))))[1]
        applied = [part for unit in units for part in unit.parts]
        assert sorted(a.payload for a in applied) == sorted(
            a.payload for q in per_link for a in q
        ), seed
        for link in range(shards):
            order = [a.number for a in applied if a.link == link]
            assert order == sorted(order), seed
        assert merger.waiting == 0
