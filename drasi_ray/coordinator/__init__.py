"""The control plane without Ray.

- :mod:`.registry`: the registered queries, their subscribers and the subscription table;
- :mod:`.control`: ``ControlPlane``, which registers queries, runs bootstrap rounds, barriers
  and rescales over the shards and the hosts.

The Ray shell is :mod:`drasi_ray.actors.coordinator`.
"""
