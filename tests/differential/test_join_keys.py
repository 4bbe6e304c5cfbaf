"""Which key values a synthetic join links, and when, run through drasi-lib and drasi_ray.

A join links nodes whose key values are equal as Drasi hashes them: by kind and value (``true``
is not ``1``), a map by its entries whatever their order. The relations it makes carry the time
of the change that made the link (``drasi.changeDateTime``). Both engines must give the same
diffs, and these.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.differential.probes import Outcome, Probe, changes, run_probes

JOIN = {"id": "J", "keys": [{"label": "V", "property": "k"}, {"label": "O", "property": "k"}]}
QUERY = "MATCH (v:V)-[r:J]->(o:O) RETURN v.name AS v, o.name AS o, drasi.changeDateTime(r) AS t"


def _added(v: str, o: str, t: str) -> tuple[tuple[Any, ...], ...]:
    return (("ADD", None, {"v": v, "o": o, "t": t}),)


PROBES = {
    "a_boolean_does_not_join_an_integer": (
        Probe(
            "a_boolean_does_not_join_an_integer",
            QUERY,
            changes(
                ("insert", "v1", "V", {"k": True, "name": "v"}),
                ("insert", "o1", "O", {"k": 1, "name": "one"}),
                ("insert", "o2", "O", {"k": True, "name": "true"}),
            ),
            joins=(JOIN,),
        ),
        ((), (), _added("v", "true", "2023-11-14T22:13:22+00:00")),
    ),
    "maps_join_whatever_the_order_of_their_keys": (
        Probe(
            "maps_join_whatever_the_order_of_their_keys",
            QUERY,
            changes(
                ("insert", "v1", "V", {"k": {"a": 1, "b": 2}, "name": "v"}),
                ("insert", "o1", "O", {"k": {"b": 2, "a": 1}, "name": "o"}),
            ),
            joins=(JOIN,),
        ),
        ((), _added("v", "o", "2023-11-14T22:13:21+00:00")),
    ),
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, tuple[Outcome, Outcome]]:
    return run_probes(probe for probe, _steps in PROBES.values())


@pytest.mark.parametrize("name", list(PROBES))
def test_both_engines_link_these_keys_alike(
    name: str, outcomes: dict[str, tuple[Outcome, Outcome]]
) -> None:
    drasi, drasi_ray = outcomes[name]
    expected = PROBES[name][1]
    assert drasi.failure is None and drasi_ray.failure is None
    assert drasi.steps == expected, "drasi-lib"
    assert drasi_ray.steps == expected, "drasi_ray"
