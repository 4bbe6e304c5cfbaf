"""drasi_ray's benchmark suite: ``python -m bench`` runs every module, ``python -m bench.X`` one.

Each benchmark module exposes ``main(argv: list[str] | None) -> int``, starts what it needs
through :mod:`bench.common` (a private Redis, a local 2-CPU Ray) and appends its figures to
``bench/results.jsonl`` (:mod:`bench.results`: one JSON line per figure, with the machine, the
date, the git commit and the exact command). ``python -m bench.current`` writes
``bench/CURRENT.md``, the latest value of every figure. How each benchmark measures:
``docs/performance.md``.
"""
