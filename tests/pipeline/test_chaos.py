"""The short chaos run (CI): actors SIGKILLed and Redis restarted while changes flow.

With one store shard and one query host, with three shards and two hosts, and with a source
over three streams (two shards, one host: each lane's batches split over them). The kills take
the kinds in turn, a store shard first (the coordinator or another shard), then a query host,
then a consumer. The full run is ``python -m bench.chaos`` (100,000 changes);
figures in bench/CURRENT.md.
"""

from __future__ import annotations

import pytest

from drasi_ray.testing.chaos import Chaos, ChaosSettings


@pytest.mark.slow
@pytest.mark.parametrize(
    ("shards", "hosts", "streams"),
    [(1, 1, 1), (3, 2, 1), (2, 1, 3)],
    ids=["K1-M1", "K3-M2", "K2-M1-3streams"],
)
def test_short_chaos_run_loses_nothing(
    ray_session: None, shards: int, hosts: int, streams: int
) -> None:
    settings = ChaosSettings(
        changes=4_000,
        kill_every_s=1.5,
        redis_restarts=1,
        rate_per_s=1_500,
        shards=shards,
        query_hosts=hosts,
        streams=streams,
    )
    report = Chaos(settings, echo=lambda _line: None).run()
    summary = "\n".join(report.lines() + report.kill_log)
    assert report.kills >= 1 and report.redis_restarts == 1, summary
    assert report.kill_log[0].startswith(("coordinator", "shard")), summary  # a store shard
    assert report.lost == 0, summary
    assert report.mismatched_rows == 0, summary
    assert report.dead_lettered == report.malformed > 0, summary
