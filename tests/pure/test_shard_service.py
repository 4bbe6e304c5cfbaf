"""drasi_ray.shards.service without Ray: a store shard's batches, deliveries and rescales.

The query hosts are stand-ins that record what they are handed and answer when told, so each
contract of the service shows: backpressure after DELIVERIES_IN_FLIGHT undelivered batches,
a host found gone or restarted marks its link, a new incarnation gets a new link numbered from
0, a batch split for another shard count is refused, and records move between shards.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from drasi_ray.model.changes import DecodedEntry, ElementChange, Op, Timing, node
from drasi_ray.model.config import QueryConfig
from drasi_ray.model.errors import ShardMapChangedError, StaleDeliveryError
from drasi_ray.model.registrations import QueryRegistration, TableCopy
from drasi_ray.model.shards import BootstrapPart, shard_of
from drasi_ray.model.wire import HostPacket
from drasi_ray.shards.routing import LabelFilter, SubscriptionTable
from drasi_ray.shards.service import DELIVERIES_IN_FLIGHT, ShardService
from drasi_ray.streams.records import Rejection


class Gone(Exception):
    """What the stand-in host raises for "the host is gone" (RayActorError in the app)."""


class Host:
    """A query host that records deliveries and holds each until released (or failed)."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[int, int, int, Any]] = []
        self.open: list[asyncio.Future[list[Rejection]]] = []
        self.closed = False
        self.hold = False

    async def deliver(
        self, shard: int, epoch: int, number: int, payload: HostPacket | BootstrapPart
    ) -> list[Rejection]:
        self.deliveries.append((shard, epoch, number, payload))
        if not self.hold:
            return []
        answer: asyncio.Future[list[Rejection]] = asyncio.get_running_loop().create_future()
        self.open.append(answer)
        return await answer

    async def take(self, *_args: object) -> Any:
        raise AssertionError("a shard never takes results")

    def close(self) -> None:
        self.closed = True


def _entry(number: int, element_id: str, t: int = 1) -> DecodedEntry:
    element = node(element_id, ["Sensor"], {"t": t}, effective_from=number)
    change = ElementChange(Op.UPDATE, element, (number, 0, 0), Timing(number))
    return DecodedEntry(f"{number}-0", (change,))


def _table() -> TableCopy:
    table = SubscriptionTable()
    table.register_query("q", ("s",), LabelFilter.of(["Sensor"], []))
    return TableCopy(1, table.to_records())


def _registration(host: str = "host") -> QueryRegistration:
    return QueryRegistration(
        QueryConfig(id="q", query="MATCH (s:Sensor) RETURN s.t AS t", sources=("s",)),
        host,
        ("Sensor",),
        None,
    )


def _service(hosts: dict[str, Host], index: int = 0, shards: int = 1) -> ShardService:
    def connect(name: str) -> Host:
        hosts[name] = Host()
        return hosts[name]

    return ShardService(index, shards, connect, gone=(Gone,))


def test_a_host_gets_its_part_then_each_batch_in_order_numbered_from_zero() -> None:
    async def scenario() -> None:
        hosts: dict[str, Host] = {}
        service = _service(hosts)
        await service.apply_batch("s", [_entry(1, "a")], None, 1)  # before: in the part
        assert await service.attach(_registration(), 7, "life-1", _table()) == 1
        for number in (2, 3):
            report = await service.apply_batch("s", [_entry(number, f"e{number}")], None, 1)
            assert (report.changes, report.applied) == (1, 1)
        assert await service.flush_deliveries() is True  # sent at once, delivered meanwhile
        host = hosts["host"]
        assert [d[2] for d in host.deliveries] == [0, 1, 2]
        part, *packets = [d[3] for d in host.deliveries]
        assert isinstance(part, BootstrapPart)
        assert (part.round, [e.id for e in part.elements]) == (7, ["a"])
        assert [[delta.after.id for delta in p.for_query("q")] for p in packets] == [["e2"], ["e3"]]

    asyncio.run(scenario())


def test_the_fifth_undelivered_batch_waits_for_the_host() -> None:
    async def scenario() -> None:
        hosts: dict[str, Host] = {}
        service = _service(hosts)
        await service.attach(_registration(), 1, "life-1", _table())
        host = hosts["host"]
        host.hold = True
        for number in range(DELIVERIES_IN_FLIGHT):
            await service.apply_batch("s", [_entry(number + 1, f"e{number}")], None, 1)
        fifth = asyncio.ensure_future(service.apply_batch("s", [_entry(9, "e9")], None, 1))
        await asyncio.sleep(0.05)
        assert not fifth.done()  # backpressure: 5 deliveries in flight
        host.open[0].set_result([])
        await asyncio.wait_for(fifth, 1)
        for answer in host.open[1:]:
            answer.set_result([])
        assert await service.flush_deliveries() is True

    asyncio.run(scenario())


@pytest.mark.parametrize("failure", [Gone("host died"), StaleDeliveryError("replaced")])
def test_a_host_found_gone_marks_its_link_until_a_new_incarnation_links_again(
    failure: Exception,
) -> None:
    async def scenario() -> None:
        hosts: dict[str, Host] = {}
        service = _service(hosts)
        await service.attach(_registration(), 1, "life-1", _table())
        first = hosts["host"]
        first.hold = True
        await service.apply_batch("s", [_entry(1, "a")], None, 1)
        await asyncio.sleep(0)  # the delivery starts
        first.open[0].set_exception(failure)
        assert await service.flush_deliveries() is False  # the host's queries are behind
        await service.attach(_registration(), 2, "life-2", _table())
        second = hosts["host"]
        assert second is not first and first.closed
        assert [d[2] for d in second.deliveries] == [0]  # a new epoch, numbered from 0
        assert second.deliveries[0][1] != first.deliveries[0][1]
        assert await service.flush_deliveries() is True

    asyncio.run(scenario())


def test_a_batch_split_for_another_count_or_during_a_rescale_is_refused() -> None:
    async def scenario() -> None:
        service = _service({}, index=0, shards=2)
        with pytest.raises(
            ShardMapChangedError, match="one of 2 shards; the batch was split for 1"
        ):
            await service.apply_batch("s", [_entry(1, "a")], None, 1)
        await service.fence()
        with pytest.raises(ShardMapChangedError, match="being rescaled"):
            await service.apply_batch("s", [_entry(1, "a")], None, 2)
        await service.finish_rescale(2)
        await service.apply_batch("s", [_entry(1, "a")], None, 2)

    asyncio.run(scenario())


def test_records_leave_for_their_new_owner_and_are_taken_in() -> None:
    async def scenario() -> None:
        old = _service({})
        ids = [f"e{number}" for number in range(20)]
        entries = [_entry(number + 1, element_id) for number, element_id in enumerate(ids)]
        await old.apply_batch("s", entries, None, 1)
        await old.fence()
        moving = await old.export_moving(2)
        new = _service({}, index=1, shards=2)
        assert await new.import_records(moving[1]) == len(moving[1]) > 0
        await old.finish_rescale(2)
        kept = {element.id for element in await old.elements("s")}
        taken = {element.id for element in await new.elements("s")}
        assert kept | taken == set(ids) and not kept & taken
        assert all(shard_of(element_id, 2) == 1 for element_id in taken)
        assert moving[0] == []

    asyncio.run(scenario())


def test_tombstones_below_the_bound_are_forgotten_and_counted() -> None:
    async def scenario() -> None:
        service = _service({})
        deleted = ElementChange(Op.DELETE, node("a", ["Sensor"]), (5, 0, 0), Timing(5))
        await service.apply_batch("s", [_entry(1, "a"), DecodedEntry("5-0", (deleted,))], None, 1)
        assert await service.forget_tombstones("s", (6, 0)) == 0  # not persisted yet: kept
        service.core.store("s").take_dirty()  # what a durable state's write does
        assert await service.forget_tombstones("s", (4, 0)) == 0
        assert await service.forget_tombstones("s", (6, 0)) == 1
        assert (await service.stats()).tombstones_forgotten == 1
        assert await service.forget_tombstones("unknown", (6, 0)) == 0

    asyncio.run(scenario())
