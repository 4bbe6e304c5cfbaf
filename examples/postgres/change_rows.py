"""Changes the shop's rows, one transaction per step, printing each.

    python examples/postgres/change_rows.py     # against the servers.py PostgreSQL

``run.py`` calls :func:`steps` one by one and shows what each did to the queries' results; run
alone, it applies them all (while ``drasi-ray run examples/postgres/app.yaml`` runs, say).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg2

HERE = Path(__file__).resolve().parent
STEPS = [
    ("Ann orders a lamp for 60.00", "INSERT INTO orders VALUES (4, 1, 60.00, 'open')"),
    ("Bob pays his order", "UPDATE orders SET status = 'paid' WHERE id = 2"),
    ("Cy moves from Rome to Oslo", "UPDATE customers SET city = 'Oslo' WHERE id = 3"),
    (
        "Dee signs up in Rome and orders a chair for 55.50",
        "INSERT INTO customers VALUES (4, 'Dee', 'Rome');"
        " INSERT INTO orders VALUES (5, 4, 55.50, 'open')",
    ),
    ("Ann's first order is cancelled", "DELETE FROM orders WHERE id = 1"),
]


def connect() -> object:
    password = (HERE / ".data" / "password").read_text().strip()
    connection = psycopg2.connect(
        host="127.0.0.1", port=55432, dbname="shop", user="postgres", password=password
    )
    connection.autocommit = True
    return connection


def steps() -> Iterator[str]:
    """Apply each step (one transaction), yielding its description once it committed."""
    connection = connect()
    try:
        for description, sql in STEPS:
            with connection.cursor() as cursor:  # type: ignore[attr-defined]
                cursor.execute(f"BEGIN; {sql}; COMMIT")
            yield description
    finally:
        connection.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    for number, description in enumerate(steps(), 1):
        print(f"{number}. {description}")
