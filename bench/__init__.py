"""drasi_ray's benchmark suite: ``python -m bench`` runs every module, ``python -m bench.X`` one.

Each benchmark module exposes ``main(argv: list[str] | None) -> int``, starts what it needs
through :mod:`bench.common` (a private Redis, a local 2-CPU Ray) and appends its figures to
``bench/RESULTS.md`` with the date, the git commit and the exact command.
"""
