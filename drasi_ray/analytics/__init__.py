"""Analytics: the applied changes as a change log in Ray's object store, handed to Spark (RayDP).

- :mod:`~drasi_ray.shards.records`: the record the coordinator forwards per applied change.
- :mod:`~drasi_ray.analytics.changelog`: the Arrow accumulator (seal, consolidate, spill).
- :mod:`~drasi_ray.analytics.actor`: the analytics actor holding the log.
- :mod:`~drasi_ray.analytics.spark`: the lazily started RayDP Spark session.
- :mod:`~drasi_ray.analytics.jobs`: the built-in Spark jobs.
- :mod:`~drasi_ray.analytics.facade`: ``app.analytics``.
- ``drasi-ray analytics ...``: :mod:`drasi_ray.ops.analytics`.

Nothing here imports pyspark or raydp at module level.
"""
