"""Every known difference with Drasi (tests/differential/known.py), run through both engines:
Drasi does what docs/conformance.md says it does, and so does drasi_ray. A drasi-lib release
that stops failing, or starts agreeing, fails here, so the docs can be corrected."""

from __future__ import annotations

import pytest

from drasi_ray.query.functions import FUNCTIONS
from tests.differential.known import KNOWN, Expected, Known, unmet
from tests.differential.probes import Outcome, run_probes

REFUSED = Expected(failure="refused")


@pytest.fixture(scope="module")
def outcomes() -> dict[str, tuple[Outcome, Outcome]]:
    return run_probes(known.probe for known in KNOWN)


def _ids(known: Known) -> str:
    return known.id


@pytest.mark.parametrize("known", KNOWN, ids=_ids)
def test_drasi_does_what_the_docs_say(
    known: Known, outcomes: dict[str, tuple[Outcome, Outcome]]
) -> None:
    problem = unmet(known.drasi, outcomes[known.id][0])
    assert problem is None, f"Drasi, {known.id}: {problem}"


@pytest.mark.parametrize("known", KNOWN, ids=_ids)
def test_drasi_ray_does_what_the_docs_say(
    known: Known, outcomes: dict[str, tuple[Outcome, Outcome]]
) -> None:
    expected = known.drasi_ray
    if known.function is not None and known.function.lower() not in FUNCTIONS:
        expected = REFUSED  # not supported yet: refused when added
    problem = unmet(expected, outcomes[known.id][1])
    assert problem is None, f"drasi_ray, {known.id}: {problem}"


def test_every_known_difference_is_a_difference(
    outcomes: dict[str, tuple[Outcome, Outcome]],
) -> None:
    """A known difference where both engines now agree is no longer one."""
    same = [known.id for known in KNOWN if outcomes[known.id][0] == outcomes[known.id][1]]
    assert not same, f"Drasi and drasi_ray agree on {same}: not a difference any more"
