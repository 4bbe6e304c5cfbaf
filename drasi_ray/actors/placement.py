"""Where the pipeline's actors run on a Ray cluster (``RayConfig.placement``).

- ``round_robin`` (the default): the app deals its actors over the cluster's alive nodes in
  turn, in the order it starts them: the coordinator (shard 0), store shards 1 .. K-1, the query
  hosts, then each source's consumers (the app's :meth:`~drasi_ray.app.DrasiRay.placement_plan`).
  Each actor requires its node by Ray's ``ray.io/node-id`` label and carries a fallback list
  (``fallback_strategy``): when its node is lost, Ray restarts it on the first node of that list
  still alive. The list deals the actors of a lost node over the nodes left by the same rule
  (:func:`fallback_order`): in turn, starting with the node after the lost one in the dealing
  order, so they spread instead of piling on one node. On a 3-node ``Cluster`` (Ray 2.60,
  8 actors, the node holding 3 of them ended) the soft node affinity this replaces let Ray's
  default policy restart all 3 on the head in each of 3 runs; with the fallback list they went
  where the rule deals them in each of 4 (docs/architecture.md). A last fallback takes any node
  not dealt to (one that joined later), so an actor outlives every node it knew.
  Each actor also reserves :data:`PLACEMENT_MEMORY_BYTES` of Ray's logical ``memory`` resource:
  it is what made Ray honour the soft affinity used before (an actor that reserves nothing is
  scheduled by whichever raylet it is handed to: 2-7 of 12 such actors ran on their node, 12 of
  12 with the reservation), and it is kept with the labels, which the multinode test checks.
- ``spread``: Ray's ``SPREAD`` scheduling strategy (Ray balances the actors over the nodes).
- ``pack``: Ray's default strategy (a node fills up before the next is used).

The head node comes first in the dealing order, then the others by node id, so the same
cluster gives the same plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ray

from drasi_ray.model.config import Placement

HEAD_RESOURCE = "node:__internal_head__"
NODE_ID_LABEL = "ray.io/node-id"
"""Ray's default label holding a node's id, set on every node."""
PLACEMENT_MEMORY_BYTES = 1
"""What a ``round_robin`` actor reserves of Ray's logical ``memory`` resource (module
docstring)."""


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
        dealt = self._next
        self._next += 1
        node = nodes[dealt % len(nodes)]
        self.plan.update(dict.fromkeys(actor_names, node))
        fallbacks = [{NODE_ID_LABEL: other} for other in fallback_order(nodes, dealt)]
        fallbacks.append({NODE_ID_LABEL: f"!in({','.join(nodes)})"})
        return {
            "label_selector": {NODE_ID_LABEL: node},
            "fallback_strategy": [{"label_selector": selector} for selector in fallbacks],
            "memory": PLACEMENT_MEMORY_BYTES,
        }

    def _alive_nodes(self) -> list[str]:
        if self._nodes is None:
            self._nodes = dealing_order()
        return self._nodes


def fallback_order(nodes: Sequence[str], dealt: int) -> list[str]:
    """Where the ``dealt``-th actor dealt over ``nodes`` goes when its node is lost, best first:
    the other nodes, from the one after its node in the dealing order round to the one before,
    turned by the actor's rank among its node's actors. So the r-th actor of a lost node goes
    to the r-th node left (mod their number), counting from the node after it: the lost node's
    actors are dealt over the nodes left in turn."""
    count = len(nodes)
    index, rank = dealt % count, dealt // count
    others = [nodes[(index + step) % count] for step in range(1, count)]
    if not others:
        return []
    turn = rank % len(others)
    return others[turn:] + others[:turn]


def dealing_order() -> list[str]:
    """The ids of the cluster's alive nodes in the order ``round_robin`` deals actors to them:
    the head node first, then the others by node id."""
    alive = [node for node in ray.nodes() if node.get("Alive")]  # type: ignore[no-untyped-call]
    alive.sort(key=lambda node: (HEAD_RESOURCE not in node["Resources"], node["NodeID"]))
    return [node["NodeID"] for node in alive]
