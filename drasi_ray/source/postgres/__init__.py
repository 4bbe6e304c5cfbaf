"""The PostgreSQL source: logical replication (pgoutput) in, platform change events out.

A reader (:mod:`.reader`, run by the Ray shell :mod:`drasi_ray.actors.postgres`) reads a
replication slot and writes each committed transaction to the source's Redis stream as
platform entries, then confirms the slot's position; the source's consumers read that stream
like any other (docs/sources.md, "PostgreSQL"). Nothing here imports Ray.

- :mod:`.pgoutput`: the binary pgoutput messages, parsed into typed records;
- :mod:`.values`: a column's text as a property value (Drasi's type mapping);
- :mod:`.tables`: what the reader knows of a table, and a row as a node (and its relations);
- :mod:`.transactions`: messages assembled into committed transactions;
- :mod:`.entries`: changes as stream entries whose ids are WAL positions;
- :mod:`.connection`: connecting (the password read here), and errors that name the database;
- :mod:`.catalog`: what the reader asks the database (tables, keys, slot, publication);
- :mod:`.snapshot`: the tables' rows in the snapshot exported with the slot;
- :mod:`.writer`: the Redis side (entries, the stream's top, the reader's state);
- :mod:`.reader`: the loop (``PostgresReader``);
- :mod:`.definition`: ``PostgresSource`` and its builder.
"""
