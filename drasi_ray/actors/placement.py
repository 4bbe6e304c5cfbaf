"""Where the pipeline's actors run on a Ray cluster (``RayConfig.placement``).

- ``round_robin`` (the default): the app deals its actors over the cluster's alive nodes in
  turn, in the order it starts them: the coordinator (shard 0), store shards 1 .. K-1, the query
  hosts, then each source's consumers. Each actor gets a *soft* node affinity to its node (the
  app's :meth:`~drasi_ray.app.DrasiRay.placement_plan`), because only a soft affinity lets Ray
  restart an actor on another node when its node is lost, and reserves
  :data:`PLACEMENT_MEMORY_BYTES` of Ray's logical ``memory`` resource. That reservation is what
  makes the affinity hold: Ray schedules an actor that reserves nothing on whichever raylet it
  is handed to, which ignores a soft affinity to another node much of the time (measured on a
  3-node ``Cluster``, Ray 2.60: 2-7 of 12 such actors on their node, 12 of 12 with the
  reservation, also right after the nodes joined). Every node has ``memory``, even a head
  started with ``num_cpus=0``. When the node is lost, the actor is restarted on another.
- ``spread``: Ray's ``SPREAD`` scheduling strategy (Ray balances the actors over the nodes).
- ``pack``: Ray's default strategy (a node fills up before the next is used).

The head node comes first in the dealing order, then the others by node id, so the same
cluster gives the same plan.
"""

from __future__ import annotations

from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from drasi_ray.model.config import Placement

HEAD_RESOURCE = "node:__internal_head__"
PLACEMENT_MEMORY_BYTES = 1
"""What a ``round_robin`` actor reserves of Ray's logical ``memory`` resource (module
docstring: a reservation, however small, makes Ray honour the soft node affinity)."""


class Placer:
    """Ray options for each next actor, by the app's placement rule (module docstring)."""

    def __init__(self, placement: Placement) -> None:
        self._placement = placement
        self._nodes: list[str] | None = None
        self._next = 0
        self.plan: dict[str, str] = {}
        """Actor name -> the id of the node ``round_robin`` dealt it (empty for the others)."""

    def next_options(self, *actor_names: str) -> dict[str, Any]:
        """The scheduling options of the next actor to start (``actor_names``: the actor, or
        the actors started together with these options, recorded in :attr:`plan`)."""
        if self._placement is Placement.PACK:
            return {}
        if self._placement is Placement.SPREAD:
            return {"scheduling_strategy": "SPREAD"}
        nodes = self._alive_nodes()
        node = nodes[self._next % len(nodes)]
        self._next += 1
        self.plan.update(dict.fromkeys(actor_names, node))
        return {
            "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=True),
            "memory": PLACEMENT_MEMORY_BYTES,
        }

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
