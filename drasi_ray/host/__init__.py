"""The query host without Ray: its queries, their deliveries, results and subscribers.

- :mod:`.core`: ``QueryHost``, the host (deliveries in order, its queries, their subscribers);
- :mod:`.hosted`: ``HostedQuery``, one query of a host (its worker, reactions, clock, state);
- :mod:`.runner`: ``QueryRunner``, a query's logic around the engine;
- :mod:`.inbox`: bootstrap rounds over the shards;
- :mod:`.merge`: the order in which a host applies the shards' deliveries;
- :mod:`.subscribers`: a subscriber's buffer of results;
- :mod:`.footprint`: memory per query;
- :mod:`.pipelines`: the source middleware pipelines a query sees its sources through.

The Ray shell is :mod:`drasi_ray.actors.query_host`.
"""
