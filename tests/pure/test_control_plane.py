"""drasi_ray.coordinator.control without Ray: registrations, rounds, control events, restarts.

Real shard services and a real query host, wired in one event loop; a shard or host can be
made "gone" (it raises what Ray's RayActorError stands for), as a dead actor would.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from drasi_ray.coordinator.control import ControlPlane
from drasi_ray.host.core import QueryHost
from drasi_ray.model.changes import (
    DecodedEntry,
    ElementChange,
    Op,
    SubscriptionControl,
    Timing,
    node,
)
from drasi_ray.model.config import DispatchMode, QueryConfig
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec
from drasi_ray.shards.service import HostConnection, ShardService

QUERY = QueryConfig(id="q", query="MATCH (s:Sensor) RETURN count(s) AS n", sources=("s",))


class Gone(Exception):
    """A peer that is gone (RayActorError in the app)."""


class Connection:
    """A shard's connection to a host in this loop."""

    def __init__(self, host: QueryHost) -> None:
        self._host = host
        self.deliver = host.deliver
        self.take = host.take

    def close(self) -> None:
        """Nothing to close."""


class GonePeer:
    """A shard or host whose every call finds it gone."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        async def call(*_args: object) -> Any:
            raise Gone(f"{self._name}.{method}")

        return call


class Cluster:
    """Shards and hosts in this loop; those named in ``gone`` raise :class:`Gone`."""

    def __init__(self, shards: int) -> None:
        self.hosts = {"host": QueryHost("host", "app")}
        self.shards = [ShardService(index, shards, self._connect) for index in range(shards)]
        self.gone: set[object] = set()

    def _connect(self, name: str) -> HostConnection:
        return Connection(self.hosts[name])

    def shard(self, index: int) -> Any:
        return GonePeer(f"shard {index}") if index in self.gone else self.shards[index]

    def host(self, name: str) -> Any:
        return GonePeer(name) if name in self.gone else self.hosts[name]

    def shards_alive(self) -> int:
        return len(self.shards)

    def hosts_alive(self) -> list[str]:
        return sorted(self.hosts)


def _entries(count: int) -> list[DecodedEntry]:
    return [
        DecodedEntry(
            f"{n}-0",
            (ElementChange(Op.INSERT, node(f"e{n}", ["Sensor"]), (n, 0, 0), Timing(n)),),
        )
        for n in range(1, count + 1)
    ]


async def _registered(cluster: Cluster) -> ControlPlane:
    control = ControlPlane(cluster.shards[0], cluster, gone=(Gone,))
    await control.loaded
    await cluster.hosts["host"].add_query(QueryRegistration(QUERY, "host", ("Sensor",), None))
    return control


def test_a_registration_bootstraps_the_query_from_every_shard() -> None:
    async def scenario() -> None:
        cluster = Cluster(shards=2)
        for shard in cluster.shards:  # each shard its own elements, as a dispatcher splits them
            mine = [e for e in _entries(10) if shard.owns(e.changes[0].element.id)]
            await shard.apply_batch("s", mine, None, 2)
        control = await _registered(cluster)
        loaded = await control.register_query(QueryRegistration(QUERY, "host", ("Sensor",), None))
        assert loaded == 10
        await control.flush_deliveries()
        assert await cluster.hosts["host"].results("q") == [{"n": 10}]
        assert (await control.stats()).elements == {"s": 10}

    asyncio.run(scenario())


def test_queries_registered_together_are_each_bootstrapped_and_routed_to() -> None:
    """``register_queries`` (an app starting): every query is loaded from every shard, each
    shard routes to all of them afterwards, and each count is returned in order."""
    hot = QueryConfig(id="hot", query="MATCH (s:Sensor) RETURN count(s) AS c", sources=("s",))

    async def scenario() -> None:
        cluster = Cluster(shards=2)
        for shard in cluster.shards:
            mine = [e for e in _entries(10) if shard.owns(e.changes[0].element.id)]
            await shard.apply_batch("s", mine, None, 2)
        control = await _registered(cluster)
        registrations = [
            QueryRegistration(config, "host", ("Sensor",), None) for config in (QUERY, hot)
        ]
        await cluster.hosts["host"].add_query(registrations[1])
        assert await control.register_queries(registrations) == [10, 10]
        for shard in cluster.shards:
            later = [e for e in _entries(12)[10:] if shard.owns(e.changes[0].element.id)]
            await shard.apply_batch("s", later, None, 2)
        await control.flush_deliveries()
        assert await cluster.hosts["host"].results("q") == [{"n": 12}]
        assert await cluster.hosts["host"].results("hot") == [{"c": 12}]
        assert sorted(control.registry.registrations) == ["hot", "q"]

    asyncio.run(scenario())


def test_a_shard_that_is_gone_is_left_out_of_a_round(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        cluster = Cluster(shards=2)
        control = await _registered(cluster)
        cluster.gone.add(1)
        with caplog.at_level(logging.WARNING, "drasi_ray.coordinator"):
            assert (
                await control.register_query(QueryRegistration(QUERY, "host", ("Sensor",), None))
                == 0
            )
        assert "shard 1 is gone" in caplog.text
        assert [report.shard for report in await control.shard_stats()] == [0]

    asyncio.run(scenario())


def test_control_events_give_every_shard_the_new_table_before_returning() -> None:
    async def scenario() -> None:
        cluster = Cluster(shards=2)
        control = await _registered(cluster)
        await control.register_query(QueryRegistration(QUERY, "host", ("Sensor",), None))
        extra = SubscriptionControl(Op.INSERT, "q", "q-extra", ("Room",))
        assert await control.apply_controls("s", [extra]) == 1
        for shard in cluster.shards:
            filters = shard.core.table.filter_for("q", "s")
            assert sorted(tuple(f.node_labels or ()) for f in filters) == [("Room",), ("Sensor",)]
        assert cluster.shards[0].core.stats.controls == 1

    asyncio.run(scenario())


def test_a_restarted_control_plane_learns_its_queries_and_subscribers_from_the_hosts() -> None:
    async def scenario() -> None:
        cluster = Cluster(shards=1)
        control = await _registered(cluster)
        await control.register_query(QueryRegistration(QUERY, "host", ("Sensor",), None))
        spec = SubscriberSpec("q", "sub", 10, DispatchMode.CHANNEL)
        await control.subscribe(spec)
        await cluster.shards[0].apply_batch("s", _entries(3), None, 1)
        # the coordinator's process restarts: shard 0 comes back empty (no durable state)
        cluster.shards[0] = ShardService(0, 1, cluster._connect, restarted=True)
        again = ControlPlane(cluster.shards[0], cluster, gone=(Gone,))
        await again.loaded
        assert list(again.registry.registrations) == ["q"]
        assert await again.subscribers_of("host") == [spec]
        await again.flush_deliveries()
        assert await cluster.hosts["host"].results("q") == []  # rebuilt from the shard, empty now
        cluster.gone.add("host")
        await again.unsubscribe("q", "sub")  # a host that is gone has lost it: no error
        assert await again.subscribers_of("host") == []

    asyncio.run(scenario())
