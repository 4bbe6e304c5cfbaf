"""The control plane without Ray.

- :mod:`.registry`: the registered queries, their subscribers and the subscription table.

The Ray shell is :mod:`drasi_ray.actors.coordinator`.
"""
