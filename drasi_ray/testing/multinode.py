"""A Ray cluster of three nodes on one machine: placement, results, and a node lost.

    python -m drasi_ray.testing.multinode --redis-url redis://127.0.0.1:6379 [--changes N]

Runs in a process of its own (it starts and stops its own Ray cluster) and prints a JSON
report; ``tests/pipeline/test_multinode.py`` runs it. The steps:

1. A cluster of one node (``ray.cluster_utils.Cluster``: 1 CPU, custom resource ``node-0``)
   runs the chaos workload (:mod:`drasi_ray.testing.chaos`: sensors in zones, relations whose
   endpoints hash to other shards, updates, deletes, re-inserts and producer retries) through
   an app with 3 store shards, 2 query hosts and 3 consumers: the reference results.
2. Two more nodes join (``node-1``, ``node-2``); a fresh app with the same settings deals its
   actors round-robin over the three nodes (``RayConfig.placement``). The report holds the
   app's plan (which must be the rule's, actor by actor) and the node every actor runs on,
   which must be the plan's (``off_plan`` lists those that are not).
3. Half of the workload is published; once it is applied (and a subscription to ``by_zone``
   drained), the added node running the most actors is ended (its raylet and every worker on
   it: ``Cluster.remove_node``); the next four tenths are published at once. Ray marks the node
   dead, restarts the lost actors on the nodes left (the report waits for both before reading
   where they went), each where the rule deals it (``expected_moved``: the lost node's actors,
   in start order, dealt in turn over the nodes left from the one after it in the dealing
   order: spread, not piled on the head). The restarted shards reload from Redis, the
   restarted consumers re-read their pending entries, the restarted hosts are bootstrapped
   again and open their subscribers' buffers again. Then the last tenth is published.
4. The report compares every query's results and the element store with the one-node run and
   with an in-order replay of the stream, counts what is left pending, and checks that the
   subscription received results before the loss and after the restart, with sequences
   strictly increasing across it (a change applied twice would show as a wrong aggregate or a
   repeated sequence).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import ray
import redis
from ray.cluster_utils import Cluster

from drasi_ray.actors import names
from drasi_ray.actors.placement import dealing_order
from drasi_ray.app import DrasiRay
from drasi_ray.model import keys
from drasi_ray.model.config import RayConfig, ScalingConfig
from drasi_ray.model.results import QueryResult
from drasi_ray.query.definition import Query
from drasi_ray.source.platform import PlatformSource
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.chaos import QUERIES, ChaosSettings, Oracle, workload
from drasi_ray.testing.drills import row_mismatches
from drasi_ray.testing.waiting import wait_until

SOURCE = "plant"
SYSTEM_CONFIG = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}
"""A lost node is noticed in ~3 s instead of Ray's default ~15 s."""
IDLE_TIMEOUT_S = 300.0
NODE_DEATH_TIMEOUT_S = 120.0


@dataclass(slots=True)
class MultiNodeReport:
    """What the run found; ``passed`` says whether it is all as it must be."""

    changes: int = 0
    planned: dict[str, str] = field(default_factory=dict)
    """Actor name -> the node (its custom resource) the app dealt it."""
    expected_placement: dict[str, str] = field(default_factory=dict)
    """Actor name -> the node the round-robin rule deals it."""
    placement: dict[str, str] = field(default_factory=dict)
    """Actor name -> the node it ran on before the node was lost."""
    off_plan: list[str] = field(default_factory=list)
    """Actors that ran on another node than the one dealt (must be none)."""
    nodes_used: int = 0
    lost_node: str = ""
    moved: dict[str, str] = field(default_factory=dict)
    """Actors of the lost node -> the node they were restarted on."""
    expected_moved: dict[str, str] = field(default_factory=dict)
    """Actors of the lost node -> the node the rule deals them when it is lost."""
    mismatched_vs_one_node: int = 0
    mismatched_vs_in_order: int = 0
    store_mismatches: int = 0
    pending: int = 0
    results_before_loss: int = 0
    """Results of ``by_zone`` a subscription drained before the node was lost."""
    results_after_restart: int = 0
    """... and of the last tenth of the workload, published once the lost actors were
    restarted: the subscription outlives its host's restart (docs/operations.md)."""
    sequences_increasing: bool = False
    sequence_breaks: list[tuple[int, int]] = field(default_factory=list)
    """The first places (at most 5) where a result sequence did not rise: (before, after)."""
    one_node_s: float = 0.0
    three_nodes_s: float = 0.0

    @property
    def passed(self) -> bool:
        return (
            self.planned == self.expected_placement
            and not self.off_plan
            and bool(self.moved)
            and self.moved == self.expected_moved
            and self.mismatched_vs_one_node == 0
            and self.mismatched_vs_in_order == 0
            and self.store_mismatches == 0
            and self.pending == 0
            and self.results_before_loss > 0
            and self.results_after_restart > 0
            and self.sequences_increasing
        )


def build_app(url: str, stream: str) -> DrasiRay:
    """3 shards, 2 query hosts, 3 consumers, the chaos queries, round-robin placement."""
    app = DrasiRay(
        f"multinode-{uuid.uuid4().hex[:6]}",
        ray_config=RayConfig(include_dashboard=False),
        scaling_config=ScalingConfig(shards=3, query_hosts=2),
    )
    app.add_source(
        PlatformSource.builder(SOURCE)
        .with_redis_url(url)
        .with_stream_key(stream)
        .with_consumers(3)
        .with_batch_size(100)
        .with_block_ms(100)
        .with_claim_idle_ms(2_000)
        .with_reclaim_interval_ms(500)
        .with_dispatch_buffer_capacity(1_000_000)
        .build()
    )
    for query_id, text in QUERIES.items():
        app.add_query(Query.cypher(query_id).query(text).from_source(SOURCE).build())
    return app


def node_names() -> dict[str, str]:
    """Node id -> the node's custom resource name (``node-<i>``)."""
    found = {}
    for node in ray.nodes():  # type: ignore[no-untyped-call]
        if node.get("Alive"):
            labels = [name for name in node["Resources"] if name.startswith("node-")]
            found[node["NodeID"]] = labels[0] if labels else node["NodeID"][:8]
    return found


def _alive(node_id: str) -> bool:
    """Whether Ray holds the node alive."""
    nodes = ray.nodes()  # type: ignore[no-untyped-call]
    return any(node["NodeID"] == node_id and node.get("Alive") for node in nodes)


def actor_nodes(app: DrasiRay) -> dict[str, str]:
    """Every actor of the app -> the node it runs on."""
    nodes = node_names()
    placed: dict[str, str] = {}
    for name in _actor_names(app):
        handle: Any = ray.get_actor(name, namespace=app.namespace)
        call: Any = handle.__ray_call__.remote(_node_id)
        node_id = str(ray.get(call, timeout=60))
        placed[name] = nodes.get(node_id, node_id[:8])
    return placed


def _node_id(_actor: object) -> str:
    """Run inside an actor: the id of its node."""
    return str(ray.get_runtime_context().get_node_id())


def _actor_names(app: DrasiRay) -> list[str]:
    """The app's actors in the order it starts (and places) them."""
    shards = [names.shard_actor(index) for index in range(3)]
    hosts = sorted(app.query_host_actors())
    consumers = [names.consumer_actor(SOURCE, index) for index in range(3)]
    return [*shards, *hosts, *consumers]


def _busiest(candidates: Sequence[str], placement: dict[str, str]) -> str:
    """The candidate node running the most actors (the first of those), to be ended."""
    running = [sum(node == candidate for node in placement.values()) for candidate in candidates]
    return candidates[running.index(max(running))]


def expected_placement(app: DrasiRay, order: Sequence[str]) -> dict[str, str]:
    """The round-robin rule (docs/architecture.md): the i-th actor started on node i mod N."""
    return {name: order[i % len(order)] for i, name in enumerate(_actor_names(app))}


def expected_moves(app: DrasiRay, order: Sequence[str], lost: str) -> dict[str, str]:
    """Where the rule (docs/architecture.md) deals the actors of the ``lost`` node: in start
    order, in turn over the nodes left, from the one after it in the dealing order."""
    at = order.index(lost)
    left = [*order[at + 1 :], *order[:at]]
    planned = expected_placement(app, order)
    victims = [name for name in _actor_names(app) if planned[name] == lost]
    return {name: left[j % len(left)] for j, name in enumerate(victims)}


class MultiNode:
    """The run (module docstring)."""

    def __init__(self, url: str, settings: ChaosSettings) -> None:
        self.url = url
        self.settings = settings
        self.entries = list(workload(settings))
        self.report = MultiNodeReport(changes=len(self.entries))

    def run(self) -> MultiNodeReport:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 1,
                "resources": {"node-0": 1},
                "include_dashboard": False,
                "_system_config": SYSTEM_CONFIG,
            },
        )
        try:
            ray.init(address=cluster.address)
            reference = self._one_node()
            extra = [cluster.add_node(num_cpus=1, resources={f"node-{i}": 1}) for i in (1, 2)]
            cluster.wait_for_nodes()
            added = {f"node-{i}": node for i, node in zip((1, 2), extra, strict=True)}
            self._three_nodes(cluster, added, reference)
        finally:
            ray.shutdown()
            cluster.shutdown()  # type: ignore[no-untyped-call]
        return self.report

    def _one_node(self) -> dict[str, list[dict[str, Any]]]:
        started = time.monotonic()
        stream = f"multinode-one-{uuid.uuid4().hex[:6]}"
        app = build_app(self.url, stream).start()
        try:
            self._publish(stream, self.entries)
            app.wait_until_idle(IDLE_TIMEOUT_S)
            results = {query_id: app.results(query_id) for query_id in QUERIES}
        finally:
            app.stop()
        self.report.one_node_s = round(time.monotonic() - started, 1)
        return results

    def _three_nodes(
        self, cluster: Cluster, added: dict[str, Any], reference: dict[str, list[dict[str, Any]]]
    ) -> None:
        started = time.monotonic()
        stream = f"multinode-three-{uuid.uuid4().hex[:6]}"
        app = build_app(self.url, stream).start()
        report = self.report
        try:
            subscription = app.subscribe("by_zone")
            half, tail = len(self.entries) // 2, len(self.entries) - len(self.entries) // 10
            self._publish(stream, self.entries[:half])
            app.wait_until_idle(IDLE_TIMEOUT_S)
            nodes = node_names()
            order = [nodes[node_id] for node_id in dealing_order()]
            report.planned = {name: nodes[node] for name, node in app.placement_plan().items()}
            report.expected_placement = expected_placement(app, order)
            report.placement = actor_nodes(app)
            report.off_plan = sorted(
                name for name, node in report.placement.items() if report.planned.get(name) != node
            )
            report.nodes_used = len(set(report.placement.values()))
            before = subscription.drain()
            report.lost_node = _busiest(sorted(added), report.placement)
            report.expected_moved = expected_moves(app, order, report.lost_node)
            lost = added[report.lost_node]
            cluster.remove_node(lost, allow_graceful=False)
            self._publish(stream, self.entries[half:tail])
            report.moved = self._restarted_elsewhere(app, lost.node_id)
            app.wait_until_idle(IDLE_TIMEOUT_S)
            during = subscription.drain()
            self._publish(stream, self.entries[tail:])
            app.wait_until_idle(IDLE_TIMEOUT_S)
            after = subscription.drain()
            report.results_before_loss = len(before)
            report.results_after_restart = len(after)
            self._verify(app, stream, reference, [*before, *during, *after])
        finally:
            app.stop()
        report.three_nodes_s = round(time.monotonic() - started, 1)

    def _restarted_elsewhere(self, app: DrasiRay, lost_node_id: str) -> dict[str, str]:
        """Wait until Ray marks the lost node dead, then until every actor that ran there
        answers from a node left; those actors -> their new node.

        The wait is needed: a worker outlives its killed raylet by about a second and keeps
        answering (this machine, Ray 2.60), and Ray restarts its actors only once the node
        misses ``health_check_failure_threshold`` health checks (~6 s with SYSTEM_CONFIG).
        """
        wait_until(
            lambda: not _alive(lost_node_id), NODE_DEATH_TIMEOUT_S, what="the lost node marked dead"
        )
        lost = self.report.lost_node
        victims = [name for name, node in self.report.placement.items() if node == lost]
        if not victims:
            return {}

        def moved() -> dict[str, str]:
            try:
                now = actor_nodes(app)
            except ray.exceptions.ActorUnavailableError:  # restarting: not retried by Ray
                return {}
            answered = {name: now[name] for name in victims}
            return {} if lost in answered.values() else answered

        return wait_until(moved, NODE_DEATH_TIMEOUT_S, what="the lost node's actors restarted")

    def _publish(self, stream: str, entries: Sequence[bytes]) -> None:
        with Publisher.from_url(self.url) as publisher:
            for start in range(0, len(entries), 500):
                publisher.publish(stream, entries[start : start + 500])

    def _verify(
        self,
        app: DrasiRay,
        stream: str,
        reference: dict[str, list[dict[str, Any]]],
        delivered: Sequence[QueryResult],
    ) -> None:
        report = self.report
        with redis.Redis.from_url(self.url) as client:
            raw: Any = client.xrange(stream)
            report.pending = int(
                client.xpending(stream, keys.consumer_group(app.app_id))["pending"]
            )
        oracle = Oracle.replay({entry_id.decode(): fields for entry_id, fields in raw})
        ours = {query_id: app.results(query_id) for query_id in QUERIES}
        report.mismatched_vs_one_node = sum(row_mismatches(reference[q], ours[q]) for q in QUERIES)
        report.mismatched_vs_in_order = sum(
            row_mismatches(oracle.results(q), ours[q]) for q in QUERIES
        )
        report.store_mismatches = oracle.store_mismatches(app.elements(SOURCE))
        sequences = [result.sequence for result in delivered]
        report.sequences_increasing = sequences == sorted(set(sequences))
        report.sequence_breaks = [(a, b) for a, b in itertools.pairwise(sequences) if b <= a][:5]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--changes", type=int, default=3_000)
    args = parser.parse_args(argv)
    settings = ChaosSettings(
        changes=args.changes, sensors=200, zones=10, malformed_rate=0.0, duplicate_rate=0.01
    )
    wait_until(lambda: redis.Redis.from_url(args.redis_url).ping(), what="Redis")
    report = MultiNode(args.redis_url, settings).run()
    print(json.dumps({**asdict(report), "passed": report.passed}))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
