"""The change model's structs as the rest of the package relies on them."""

from __future__ import annotations

import pickle

import msgspec
import pytest

from drasi_ray.model.changes import ElementChange, Op, Timing, node
from drasi_ray.query.values import same_values


def test_a_property_changing_type_is_a_change_of_the_element() -> None:
    """Query change detection compares a returned element's properties as Cypher values:
    numbers by value, but true is not 1."""
    one, one_float, true = (node("n", ["A"], {"x": value}) for value in (1, 1.0, True))
    assert one == true  # struct equality is Python's, where True == 1
    assert not same_values(one, true)
    assert same_values(one, one_float) and not same_values(one, node("n", ["A"], {"x": 2}))


def test_structs_are_frozen_and_pickle_as_themselves() -> None:
    change = ElementChange(
        Op.INSERT, node("n", ["A"], {"x": [1, {"y": None}]}), (1, 2, 3), Timing(4)
    )
    assert pickle.loads(pickle.dumps(change)) == change
    with pytest.raises(AttributeError):
        change.op = Op.DELETE  # type: ignore[misc]
    moved = msgspec.structs.replace(change.element, labels=("B",))
    assert moved.labels == ("B",) and change.element.labels == ("A",)
