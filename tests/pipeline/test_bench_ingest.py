"""The ingest benchmark's consumer section runs against the package as it is.

:mod:`bench.sink` stands in for the store shard the consumer dispatches to; when the
dispatcher's protocol changes and the stand-in does not, ``bench.ingest`` (c) waits for acks
that never come. Here it drains a small backlog instead, and every change reaches the sink.
"""

from __future__ import annotations

from bench.common import sensor_payloads
from bench.ingest import time_consumer


def test_one_consumer_actor_drains_a_backlog_into_the_counting_sink(
    ray_session: None, redis_url: str
) -> None:
    payloads = sensor_payloads(2_000)
    _seconds, stats = time_consumer(redis_url, payloads)
    assert stats["sink"]["entries"] == stats["sink"]["changes"] == len(payloads)
    assert stats["acked"] == len(payloads)
