"""Drasi's three tutorials as data: their resource files (tests/resources), the rows their
databases start with and the changes their steps make, as graph changes.

Each row is a node as Drasi's PostgreSQL and MySQL sources make it: labelled by its table, id
``<table>:<key>``, its columns as properties. Times (``effective_from``) are fixed milliseconds,
so ``drasi.changeDateTime`` gives the same values in both engines.

The queries whose results move with the wall clock (``inactive-people``: ``trueLater`` 20 s
after a message; ``delay``: ``trueFor`` 10 s at the curbside) are in ``TIMED``: the step
by step comparison leaves them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drasi_ray.model.config import QueryConfig
from drasi_ray.model.resources import QUERY, combine, read_resources
from tests.oracle.model import Case, GraphChange, QuerySpec

RESOURCES = Path(__file__).parents[1] / "resources"
BASE_MS = 1_732_000_000_000
TIMED = frozenset({"inactive-people", "delay"})


@dataclass(frozen=True, slots=True)
class Tutorial:
    """A tutorial: its query (and reaction) files, the source each subscription names, the
    rows its databases start with and the changes its steps make."""

    name: str
    query_files: tuple[str, ...]
    sources: tuple[str, ...]
    rows: tuple[GraphChange, ...]
    steps: tuple[GraphChange, ...]

    def queries(self) -> list[QueryConfig]:
        read = combine([read_resources(RESOURCES / self.name / f) for f in self.query_files])
        return [r.spec for r in read.of_kind(QUERY) if isinstance(r.spec, QueryConfig)]

    def oracle_specs(self) -> list[QuerySpec]:
        """The queries compared step by step (not :data:`TIMED`), as the oracle takes them."""
        return [_spec(query) for query in self.queries() if query.id not in TIMED]

    def case(self) -> Case:
        return Case(self.name, (*self.rows, *self.steps))


def _spec(query: QueryConfig) -> QuerySpec:
    return QuerySpec(
        query.id,
        query.query,
        tuple(join.model_dump(mode="json") for join in query.joins),
        tuple(spec.model_dump(mode="json") for spec in query.middleware),
        {source: tuple(names) for source, names in query.pipelines.items()},
        query.sources,
        query.query_language.value,
    )


def row(
    table: str, key: Any, at: int, source: str, op: str = "insert", **columns: Any
) -> GraphChange:
    """A row's change (``op`` insert, update or delete) at ``BASE_MS + at``."""
    return GraphChange(
        op,  # type: ignore[arg-type]
        f"{table}:{key}",
        (table,),
        columns,
        BASE_MS + at,
        source=source,
    )


def _messages() -> Tutorial:
    source = "hello-world"
    seed = [
        (1, "Buzz Lightyear", "To infinity and beyond!"),
        (2, "Brian Kernighan", "Hello World"),
        (3, "Antoninus", "I am Spartacus"),
        (4, "David", "I am Spartacus"),
    ]
    rows = tuple(
        row("Message", key, key, source, MessageId=key, From=who, Message=text)
        for key, who, text in seed
    )
    steps = (
        row("Message", 5, 100, source, MessageId=5, From="Allen", Message="Hello World"),
        row("Message", 6, 200, source, MessageId=6, From="Allen", Message="I am Spartacus"),
        row("Message", 7, 300, source, MessageId=7, From="Allen", Message="Goodbye"),
        row("Message", 2, 400, source, "delete"),
        row("Message", 5, 401, source, "delete"),
    )
    return Tutorial("getting-started", ("hello-world-queries.yaml",), (source,), rows, steps)


def _rooms() -> Tutorial:
    source = "building-facilities"
    rows: list[GraphChange] = [
        row("Building", "building_01", 1, source, id="building_01", name="Building 01")
    ]
    rooms = []
    for floor in (1, 2, 3):
        floor_id = f"floor_01_{floor:02d}"
        rows.append(
            row(
                "Floor",
                floor_id,
                2,
                source,
                id=floor_id,
                name=f"Floor {floor:02d}",
                building_id="building_01",
            )
        )
        for number in (1, 2, 3):
            room_id = f"room_01_{floor:02d}_{number:02d}"
            rooms.append(room_id)
            rows.append(
                row(
                    "Room",
                    room_id,
                    3,
                    source,
                    id=room_id,
                    name=f"Room {number:02d}",
                    temperature=70,
                    humidity=40,
                    co2=10,
                    floor_id=floor_id,
                )
            )

    def room(room_id: str, at: int, **changes: Any) -> GraphChange:
        floor_id = room_id[:11].replace("room", "floor")
        columns = {
            "id": room_id,
            "name": f"Room {room_id[-2:]}",
            "temperature": 70,
            "humidity": 40,
            "co2": 10,
            "floor_id": floor_id,
            **changes,
        }
        return row("Room", room_id, at, source, "update", **columns)

    steps = (
        room(rooms[0], 100, co2=1000),  # the control panel raises a room's CO2: 66, alert
        room(rooms[1], 200, temperature=90, co2=1000),
        room(rooms[2], 300, temperature=85, humidity=60, co2=1000),  # the floor's average
        room(rooms[4], 400, temperature=50),  # another floor, too cold
        room(rooms[0], 500),  # back to normal
        row("Room", rooms[8], 600, source, "delete"),
    )
    return Tutorial(
        "building-comfort",
        ("query-ui.yaml", "query-comfort-calc.yaml", "query-alert.yaml"),
        (source,),
        tuple(rows),
        steps,
    )


def _pickups() -> Tutorial:
    retail, physical = "retail-ops", "physical-ops"
    orders = [
        (1, "Sophia Carter", "Elijah Brooks", "A1234"),
        (2, "Mason Rivera", "Isabella Reed", "B5678"),
        (3, "Ava Mitchell", "Liam Bennett", "C9876"),
    ]
    rows = tuple(
        row(
            "orders",
            key,
            key,
            retail,
            id=key,
            customer_name=customer,
            driver_name=driver,
            plate=plate,
            status="preparing",
        )
        for key, customer, driver, plate in orders
    )

    def order(key: int, at: int, status: str) -> GraphChange:
        _, customer, driver, plate = orders[key - 1]
        return row(
            "orders",
            key,
            at,
            retail,
            "update",
            id=key,
            customer_name=customer,
            driver_name=driver,
            plate=plate,
            status=status,
        )

    def vehicle(plate: str, at: int, location: str, op: str = "insert") -> GraphChange:
        driver, customer = {
            "A1234": ("Elijah Brooks", "Sophia Carter"),
            "B5678": ("Isabella Reed", "Mason Rivera"),
        }[plate]
        return row(
            "vehicles",
            plate,
            at,
            physical,
            op,
            plate=plate,
            driver_name=driver,
            customer_name=customer,
            make="Toyota",
            model="Camry",
            color="Blue",
            location=location,
        )

    steps = (
        vehicle("A1234", 100, "Parking"),
        vehicle("A1234", 200, "Curbside", "update"),
        order(1, 300, "ready"),  # ready, its vehicle at the curbside: a delivery
        vehicle("B5678", 400, "Curbside"),
        order(2, 500, "ready"),
        vehicle("B5678", 600, "Parking", "update"),
        row("orders", 1, 700, retail, "delete"),  # handed over
    )
    return Tutorial(
        "curbside-pickup", ("delivery.yaml", "delay.yaml"), (physical, retail), rows, steps
    )


TUTORIALS: Sequence[Tutorial] = (_messages(), _rooms(), _pickups())
