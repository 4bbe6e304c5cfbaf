"""The vocabulary every stage shares, with no I/O: errors, the change model, settings, results.

- :mod:`.errors`: the one error tree; :mod:`.changes`: the change model;
- :mod:`.config` and :mod:`.reaction_specs`: validated settings (the YAML schema);
- :mod:`.keys`: the whole Redis key schema; :mod:`.urls`: Redis URLs without their password;
- :mod:`.results`: query results and Drasi's platform result format; :mod:`.encoding`: JSON as
  drasi_ray writes it to users;
- :mod:`.backoff`: how every retry loop waits;
- :mod:`.batch`: batches as they cross between actors.

Nothing here imports Ray or talks to Redis; every other package may import it.
"""
