"""The store shard without Ray: the versioned graph, who needs which change, durable state.

- :mod:`.store`: the versioned element store of one source;
- :mod:`.routing`: the subscription table (which query needs which change);
- :mod:`.state`: what survives a restart, in Redis (element stores, subscriptions, sequences);
- :mod:`.core`: ``ShardCore``, which applies a batch and routes its deltas;
- :mod:`.records`: the change record forwarded to the analytics change log;
- :mod:`.service`: ``ShardService``, a shard's data plane (batches in, deliveries out);
- :mod:`.calls`: the typed protocols of the direct-line calls (``apply_batch``, ``deliver``,
  ``take``);
- :mod:`.dispatch`: ``ShardDispatcher``, how a consumer hands a batch to the shards.

The Ray shell is :mod:`drasi_ray.actors.shard`.
"""
