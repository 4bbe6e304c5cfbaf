"""Operations behind the ``drasi-ray`` subcommands: status, publish, dlq, replay, scale, validate.

Each module registers its subcommand (``add_parser``) and runs it (``run``); the logic is in
plain functions that the tests call directly. They talk to Redis with synchronous redis-py
clients (these are short-lived CLI processes); only ``scale`` and ``run`` need Ray.
"""
