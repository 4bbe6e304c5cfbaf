"""The ceiling model of :mod:`bench.layout`: which part of the pipeline limits first.

Built only from measured CPU per change (:class:`Costs`, µs of CPU one change of the stream
costs each kind of process). A part's ceiling is the rate at which it fills one core, ``1e6 /
its µs per change``, for the parts that run on one core whatever the cluster (a Redis server
has one thread), and for the parts spread over many actors the rate at which the busiest of
them fills its core:

- *store shards*: every consumer batch is split over the K shards and each shard is called
  once per batch, so a shard's µs per change of the stream is ``work / K + per_batch``; both
  terms are fitted from the K = 1 run and the run with the most shards. The shards together
  then carry ``1e6 / (work / K + per_batch)``, never more than ``1e6 / per_batch``: with
  ``per_batch`` above zero, adding shards stops paying at some K (a larger batch lowers it).
- *query hosts*: the same with M (a host hears from every shard once per batch).
- *consumers*: each reads its own entries, so C of them carry C times one's rate (no term
  shared by all); not a ceiling at cluster scale.
- *Redis, the streams*: reads and acks of a stream are one server's thread. A source reads
  P streams (one per partition of its element ids, ``stream_keys``), all on the one server of
  its ``redis_url``: they share that thread, so the line is the measured run of a source over
  P streams on one server (:class:`Partitioned`), not P times one stream's. P streams on P
  servers would carry P times a stream's rate; that needs several sources (one per server) or
  a cluster-aware client, which drasi_ray does not have, so the verdict says how many servers
  it would take.
- *Redis, the element store*: every shard writes its records into the source's one hash, so
  one server's thread (``state.redis_url`` can put it on a server of its own, apart from the
  stream); several streams do not divide it.
- *cores*: ``nodes * cores_per_node * 1e6`` over the µs per change summed over every actor
  kind (taken from the runs with the most shards and hosts, whose per-actor overheads are
  in it) and Ray's own processes.

What the model leaves out: the producers' XADDs (Redis spends CPU on them too; the layout
runs drain a backlog published before the clock), and the network between nodes (the direct
lines' CPU is in the actors' figures; their bandwidth is not a limit at these rates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.common import format_table

CLUSTER_NODES = 10
CORES_PER_NODE = 8


@dataclass(frozen=True)
class Scaled:
    """µs per change of the stream of one actor of a kind with n actors, at two n: 1 and the
    largest measured."""

    one: float
    many: float
    count: int

    @property
    def per_batch(self) -> float:
        """The fitted term every actor pays whatever n (0 when it fell at least as 1/n)."""
        if self.count <= 1:
            return 0.0
        work = (self.one - self.many) * self.count / (self.count - 1)
        return max(self.one - work, 0.0)

    @property
    def work(self) -> float:
        return self.one - self.per_batch

    def each(self, count: int) -> float:
        """µs per change of one actor of ``count`` (the fit)."""
        return self.work / count + self.per_batch

    @property
    def limit(self) -> float:
        """What any number of these actors carries at most (inf if nothing is shared)."""
        return math.inf if self.per_batch <= 0 else 1e6 / self.per_batch


@dataclass(frozen=True)
class Partitioned:
    """The Redis server's µs per change (no durable state) with the source over ``streams``
    streams on that one server: a measured run."""

    streams: int
    redis_us: float


@dataclass(frozen=True)
class Costs:
    """Measured µs of CPU per change of the stream, by kind of process."""

    consumers: float
    """summed over the consumers (their kind's total)"""
    shards: Scaled
    hosts: Scaled
    summed_actors: float
    """consumers + shards + hosts summed, in the runs with the most shards and hosts"""
    ray_system: float
    redis_stream: float
    """the Redis server's µs with no durable state: the stream's reads and acks"""
    redis_store: float
    """what durable state adds on the Redis server: the element store's writes"""
    partitioned: Partitioned | None = None
    """the run over several streams on one server, if measured"""


@dataclass(frozen=True)
class Ceiling:
    part: str
    rate: float
    how: str


def ceilings(costs: Costs, streams: int = 1) -> list[Ceiling]:
    """Each part's ceiling in a cluster large enough that cores are not the limit."""
    return [
        Ceiling(
            "one consumer (C consumers: C times)",
            1e6 / costs.consumers,
            f"1e6 / {costs.consumers:.2f} µs; nothing shared between consumers",
        ),
        Ceiling(
            "store shards, any K",
            costs.shards.limit,
            f"1e6 / per-batch µs per shard ({costs.shards.per_batch:.2f}); "
            f"at K={costs.shards.count}: {1e6 / costs.shards.each(costs.shards.count):,.0f}/s",
        ),
        Ceiling(
            "query hosts, any M",
            costs.hosts.limit,
            f"1e6 / per-batch µs per host ({costs.hosts.per_batch:.2f}); "
            f"at M={costs.hosts.count}: {1e6 / costs.hosts.each(costs.hosts.count):,.0f}/s",
        ),
        *_stream_ceilings(costs, streams),
        _store_ceiling(costs.redis_store),
    ]


RESOLUTION_US = 0.05
"""Below this, the difference of two runs' Redis µs per change is noise, not a cost."""


def _store_ceiling(store_us: float) -> Ceiling:
    part = "Redis: the source's element store (one hash)"
    if store_us < RESOLUTION_US:
        how = f"durable state added {store_us:.2f} µs per change: below what the runs resolve"
        return Ceiling(part, math.inf, how)
    return Ceiling(
        part, 1e6 / store_us, f"1e6 / {store_us:.2f} µs (one server thread, whatever the streams)"
    )


def _stream_ceilings(costs: Costs, servers: int) -> list[Ceiling]:
    """The streams' lines: one stream per server on ``servers`` servers, and the measured run
    over several streams on one server, if there is one."""
    lines = [
        Ceiling(
            f"Redis: the source's stream{'s' if servers > 1 else ''} ({servers})",
            servers * 1e6 / costs.redis_stream,
            f"{servers} x 1e6 / {costs.redis_stream:.2f} µs (one server thread per stream)",
        )
    ]
    measured = costs.partitioned
    if measured is not None:
        lines.append(
            Ceiling(
                f"Redis: the source's streams ({measured.streams} on one server, measured)",
                1e6 / measured.redis_us,
                f"1e6 / {measured.redis_us:.2f} µs (the streams share the server's one "
                f"thread; one stream: {costs.redis_stream:.2f} µs)",
            )
        )
    return lines


def by_cores(costs: Costs, nodes: int = CLUSTER_NODES, per_node: int = CORES_PER_NODE) -> float:
    """What ``nodes`` x ``per_node`` cores carry with every actor kind on them."""
    return nodes * per_node * 1e6 / (costs.summed_actors + costs.ray_system)


def streams_needed(costs: Costs, target: float) -> int:
    """The streams per source, each on its own server, for the streams not to bind below
    ``target``."""
    return max(1, math.ceil(target * costs.redis_stream / 1e6))


def _stream_rate(costs: Costs) -> float:
    """What the source's streams carry on its one server (the measured run's, else one
    stream's)."""
    us = costs.partitioned.redis_us if costs.partitioned is not None else costs.redis_stream
    return 1e6 / us


def verdict(costs: Costs) -> tuple[float, str]:
    """The 10-node estimate (one stream per source) and the sentence that explains it."""
    cores = by_cores(costs)
    parts = [*ceilings(costs)[1:], Ceiling("the cores", cores, "")]
    first = min(parts, key=lambda part: part.rate)
    others = [part for part in parts if part is not first and "stream" not in part.part]
    next_limit = min(part.rate for part in others)
    needed = streams_needed(costs, next_limit)
    text = (
        f"{CLUSTER_NODES} nodes x {CORES_PER_NODE} cores: {first.part} limit first at "
        f"{first.rate:,.0f} changes/s (the cores alone would carry {cores:,.0f}/s: "
        f"{costs.summed_actors + costs.ray_system:.1f} µs per change summed over the actors "
        f"and Ray's own processes)."
    )
    if "stream" in first.part:
        text += (
            f" The source's server is the ceiling: its streams share one thread, so "
            f"{needed} streams per source on servers of their own (several sources, or a "
            f"cluster-aware client: not built) would lift it to the next limit, "
            f"{next_limit:,.0f}/s."
        )
    else:
        text += (
            f" The source's streams on one server bind only above {_stream_rate(costs):,.0f}/s; "
            "more streams per source do not raise this limit."
        )
    return first.rate, text


def lines(costs: Costs) -> list[str]:
    """The model as printed by ``bench.layout``."""
    rows = [(c.part, c.rate, c.how) for c in ceilings(costs)]
    _rate, text = verdict(costs)
    return [
        "Ceiling model (bench/ceiling.py): each part's most changes/s, from the measured µs "
        "per change:",
        "",
        *format_table(("part", "changes/s", "from"), rows),
        "",
        text,
    ]
