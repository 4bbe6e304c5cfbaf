"""What tests, benchmarks, examples and drills share: real servers, real faults, exact checks.

- :mod:`.embedded_redis`: ``EmbeddedRedis``, a private throwaway redis-server;
- :mod:`.server_process`: ``ServerProcess``, what it and ``EmbeddedPostgres`` share;
- :mod:`.failpoints`: deterministic fault injection (the process exits at a precise point);
- :mod:`.conformance`: Drasi's scenario files run through the public API;
- :mod:`.chaos`: the chaos run (``python -m drasi_ray.testing.chaos``);
- :mod:`.drills`: what the chaos runs share (kills, fault points, comparisons, the report);
- :mod:`.waiting`: ``wait_until``, the one way to wait on a condition;
- :mod:`.apps`: ``one_source_app``, the app most tests and benchmarks run.
"""
