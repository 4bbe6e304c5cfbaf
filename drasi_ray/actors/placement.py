"""Where the pipeline's actors run on a Ray cluster (``RayConfig.placement``).

- ``round_robin`` (the default): the app deals its actors over the cluster's alive nodes in
  turn, in the order it starts them: the coordinator (shard 0), store shards 1 .. K-1, the query
  hosts, then each source's consumers. Each actor gets a *soft* node affinity: it runs on its
  node while the node lives, and Ray restarts it on another node when that node is lost. With
  one node (a laptop) every actor is there, as before.
- ``spread``: Ray's ``SPREAD`` scheduling strategy (Ray balances the actors over the nodes).
- ``pack``: Ray's default strategy (a node fills up before the next is used).

The head node comes first in the dealing order, then the others by node id, so the same
cluster gives the same placement.
"""

from __future__ import annotations

from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from drasi_ray.model.config import Placement

HEAD_RESOURCE = "node:__internal_head__"


class Placer:
    """Ray options for each next actor, by the app's placement rule (module docstring)."""

    def __init__(self, placement: Placement) -> None:
        self._placement = placement
        self._nodes: list[str] | None = None
        self._next = 0

    def next_options(self) -> dict[str, Any]:
        """The scheduling options of the next actor to start."""
        if self._placement is Placement.PACK:
            return {}
        if self._placement is Placement.SPREAD:
            return {"scheduling_strategy": "SPREAD"}
        nodes = self._alive_nodes()
        node = nodes[self._next % len(nodes)]
        self._next += 1
        return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=True)}

    def _alive_nodes(self) -> list[str]:
        if self._nodes is None:
            self._nodes = dealing_order()
        return self._nodes


def dealing_order() -> list[str]:
    """The ids of the cluster's alive nodes in the order ``round_robin`` deals actors to them:
    the head node first, then the others by node id."""
    alive = [node for node in ray.nodes() if node.get("Alive")]  # type: ignore[no-untyped-call]
    alive.sort(key=lambda node: (HEAD_RESOURCE not in node["Resources"], node["NodeID"]))
    return [node["NodeID"] for node in alive]
