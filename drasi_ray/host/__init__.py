"""The query host without Ray: a hosted query's runner, inbox, delivery order and buffers.

- :mod:`.runner`: ``QueryRunner``, a query's logic around the engine;
- :mod:`.inbox`: bootstrap rounds over the shards;
- :mod:`.merge`: the order in which a host applies the shards' deliveries;
- :mod:`.subscribers`: a subscriber's buffer of results;
- :mod:`.footprint`: memory per query;
- :mod:`.pipelines`: the source middleware pipelines a query sees its sources through.

The Ray shells are :mod:`drasi_ray.actors.query_host` and :mod:`drasi_ray.actors.query`.
"""
