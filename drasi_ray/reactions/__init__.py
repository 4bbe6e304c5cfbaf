"""Reactions: where a query's results go (Drasi's platform stream, a file, the log, a callback).

They run inside the query actor. Their settings are configuration
(:mod:`drasi_ray.model.reaction_specs`); here is the running side: :mod:`.base` (the protocol
and the worker that drives one reaction), one module per reaction, and :mod:`.factory` (specs
to running reactions, and the set a query actor drives).
"""
