"""drasi_ray.host.core without Ray: a query host's deliveries, in order, and its queries.

Deliveries are built as a store shard builds them (:func:`drasi_ray.shards.service.
host_packet`) and handed to a real :class:`~drasi_ray.host.core.QueryHost` with real queries.
"""

from __future__ import annotations

import asyncio

import pytest

from drasi_ray.host.core import QueryHost
from drasi_ray.model.changes import ElementDelta, node
from drasi_ray.model.config import DispatchMode, QueryConfig
from drasi_ray.model.errors import (
    StaleDeliveryError,
    SubscriptionLostError,
    UnknownComponentError,
)
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec
from drasi_ray.model.results import QueryResult
from drasi_ray.model.shards import BootstrapPart
from drasi_ray.model.wire import HostPacket
from drasi_ray.shards.service import host_packet

QUERY = QueryConfig(id="q", query="MATCH (s:Sensor) RETURN s.name AS name", sources=("s",))
REGISTRATION = QueryRegistration(QUERY, "host", ("Sensor",), None)
SPEC = SubscriberSpec("q", "sub", 100, DispatchMode.CHANNEL)


def _insert(name: str, version: int) -> ElementDelta:
    element = node(name, ["Sensor"], {"name": name}, effective_from=version)
    return ElementDelta(None, element, (version, 0, 0), version, True)


def _packet(*deltas: ElementDelta) -> HostPacket:
    return host_packet({"q": list(deltas)}, True, None)


def _part(round_: int = 1) -> BootstrapPart:
    return BootstrapPart("q", round_, 0, 1, ())


async def _names(host: QueryHost) -> list[str]:
    batch = await host.take("q", "sub", None, 0.0)
    return [
        diff["data"]["name"]
        for item in batch
        if isinstance(item, QueryResult)
        for diff in item.results
    ]


async def _host_with_query() -> QueryHost:
    host = QueryHost("host", "app")
    await host.add_query(REGISTRATION)
    await host.subscribe(SPEC)
    await host.deliver(0, 10, 0, _part())
    return host


def test_a_link_s_deliveries_are_applied_in_number_order_whatever_their_arrival() -> None:
    async def scenario() -> None:
        host = await _host_with_query()
        second = asyncio.ensure_future(host.deliver(0, 10, 2, _packet(_insert("b", 2))))
        await asyncio.sleep(0.01)
        assert not second.done()  # waits for delivery 1
        assert await host.deliver(0, 10, 1, _packet(_insert("a", 1))) == []
        await second
        assert await _names(host) == ["a", "b"]
        assert await host.all_settled()

    asyncio.run(scenario())


def test_a_delivery_made_twice_is_applied_once() -> None:
    async def scenario() -> None:
        host = await _host_with_query()
        packet = _packet(_insert("a", 1))
        await asyncio.gather(host.deliver(0, 10, 1, packet), host.deliver(0, 10, 1, packet))
        assert await host.deliver(0, 10, 1, packet) == []  # a late copy: a duplicate
        assert await _names(host) == ["a"]

    asyncio.run(scenario())


def test_deliveries_of_a_replaced_link_are_refused() -> None:
    async def scenario() -> None:
        host = await _host_with_query()
        waiting = asyncio.ensure_future(host.deliver(0, 10, 2, _packet(_insert("b", 2))))
        await asyncio.sleep(0)
        await host.deliver(0, 11, 0, _part(round_=2))  # the shard's new link
        with pytest.raises(StaleDeliveryError):
            await waiting
        with pytest.raises(StaleDeliveryError):
            await host.deliver(0, 10, 1, _packet(_insert("a", 1)))
        assert await _names(host) == []

    asyncio.run(scenario())


def test_a_part_that_comes_before_its_query_is_kept_until_the_query_is_added() -> None:
    async def scenario() -> None:
        host = QueryHost("host", "app")
        early: list[HostPacket | BootstrapPart] = [_part(), _packet(_insert("a", 1))]
        deliveries = [asyncio.ensure_future(host.deliver(0, 10, n, p)) for n, p in enumerate(early)]
        await asyncio.gather(*deliveries)  # nobody hosts the query yet: nothing to wait for
        await host.add_query(REGISTRATION)
        await host.subscribe(SPEC)
        await host.deliver(0, 10, 2, _packet(_insert("b", 2)))
        assert await host.results("q") == [{"name": "a"}, {"name": "b"}]

    asyncio.run(scenario())


def test_unknown_queries_and_subscribers() -> None:
    async def scenario() -> None:
        host = await _host_with_query()
        # a read is never answered with silence: a buffer nobody keeps is lost, and says so
        with pytest.raises(SubscriptionLostError, match="query 'other' is not on host host"):
            await host.take("other", "sub", None, 0.0)
        with pytest.raises(SubscriptionLostError, match="subscription nobody to query 'q'"):
            await host.take("q", "nobody", None, 0.0)
        with pytest.raises(UnknownComponentError, match="'other' is not on host host"):
            await host.results("other")
        assert [spec.subscriber_id for spec in await host.subscriber_specs()] == ["sub"]
        await host.unsubscribe("q", "sub")
        assert await host.subscriber_specs() == []
        assert host.host_info().queries == ["q"]

    asyncio.run(scenario())


def test_an_idle_query_applies_an_offered_delivery_in_the_offer_s_step() -> None:
    async def scenario() -> None:
        host = await _host_with_query()
        host.offer(0, 10, 1, _packet(_insert("a", 1)))  # no await: nothing else runs
        assert host.queries["q"].runner.engine.results() == [{"name": "a"}]
        assert await _names(host) == ["a"]

    asyncio.run(scenario())


def test_a_delivery_waiting_on_a_full_buffer_keeps_the_later_ones_behind_it() -> None:
    async def scenario() -> None:
        host = QueryHost("host", "app")
        await host.add_query(REGISTRATION)
        await host.subscribe(SubscriberSpec("q", "sub", 1, DispatchMode.CHANNEL))
        bootstrap = asyncio.ensure_future(host.deliver(0, 10, 0, _part()))
        while not bootstrap.done():  # its signals, one at a time
            await host.take("q", "sub", None, 0.01)
        first = host.offer(0, 10, 1, _packet(_insert("a", 1), _insert("b", 2)))
        second = host.offer(0, 10, 2, _packet(_insert("c", 3)))
        await asyncio.sleep(0.01)
        assert not first.done() and not second.done()  # "b" waits for room, "c" behind it
        names: list[str] = []
        while len(names) < 3:
            await asyncio.sleep(0.001)  # the waiting delivery goes on
            names += await _names(host)
        await asyncio.gather(first, second)
        assert names == ["a", "b", "c"]
        assert await host.all_settled()

    asyncio.run(scenario())
