"""Operations: the ``drasi-ray`` command line and what its subcommands do.

:mod:`.cli` is the entry point; each other module registers its subcommand (``add_parser``) and
runs it (``run``), with the logic in plain functions the tests call directly: status, publish,
dlq, replay, scale, validate, run, :mod:`.demo` and :mod:`.analytics` (Spark jobs over the
streams). They talk to Redis with synchronous redis-py clients (short-lived CLI processes);
``run``, ``scale``, ``demo`` and ``analytics`` need Ray.
"""
