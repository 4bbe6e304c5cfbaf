"""The ceiling model of bench/layout.py (bench/ceiling.py): the fit and the verdict."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bench.ceiling import Costs, Partitioned, Scaled, ceilings, streams_needed, verdict


def test_a_share_falling_as_one_over_n_has_no_shared_term() -> None:
    scaled = Scaled(one=12.0, many=3.0, count=4)
    assert scaled.per_batch == 0.0
    assert scaled.limit == math.inf
    assert scaled.each(2) == pytest.approx(6.0)


def test_a_share_that_does_not_fall_as_one_over_n_is_split_into_work_and_per_batch() -> None:
    scaled = Scaled(one=12.0, many=4.0, count=4)  # 12 = w + b, 4 = w/4 + b
    assert scaled.work == pytest.approx(32 / 3)
    assert scaled.per_batch == pytest.approx(4 / 3)
    assert scaled.each(4) == pytest.approx(4.0)
    assert scaled.limit == pytest.approx(750_000)


def _costs(redis_stream: float) -> Costs:
    return Costs(
        consumers=8.0,
        shards=Scaled(12.0, 4.0, 4),
        hosts=Scaled(10.0, 2.5, 4),
        summed_actors=40.0,
        ray_system=2.0,
        redis_stream=redis_stream,
        redis_store=2.0,
    )


def test_the_stream_limits_first_when_one_server_thread_is_slowest() -> None:
    rate, text = verdict(_costs(redis_stream=3.0))
    assert rate == pytest.approx(1e6 / 3.0)
    assert "stream" in text and "2 streams per source" in text
    assert streams_needed(_costs(3.0), 500_000) == 2


def test_several_streams_multiply_only_the_stream_ceiling() -> None:
    one, four = ceilings(_costs(3.0)), ceilings(_costs(3.0), streams=4)
    assert [c.rate for c in four if "stream" in c.part] == [
        4 * c.rate for c in one if "stream" in c.part
    ]
    assert [c.rate for c in four if "stream" not in c.part] == [
        c.rate for c in one if "stream" not in c.part
    ]


def test_a_measured_run_over_several_streams_on_one_server_is_its_own_line() -> None:
    costs = dataclasses.replace(_costs(redis_stream=3.0), partitioned=Partitioned(3, 3.3))
    streams = [c for c in ceilings(costs) if "stream" in c.part]
    assert [(c.part, round(c.rate)) for c in streams] == [
        ("Redis: the source's stream (1)", round(1e6 / 3.0)),
        ("Redis: the source's streams (3 on one server, measured)", round(1e6 / 3.3)),
    ]
    rate, text = verdict(costs)
    assert rate == pytest.approx(1e6 / 3.3)  # the measured streams bind first, not 1 stream
    assert "share one thread" in text and "not built" in text
    _rate, calm = verdict(dataclasses.replace(_costs(redis_stream=0.5), partitioned=None))
    assert "bind only above 2,000,000/s" in calm
