"""Runs the shop's app (``app.yaml``) while ``change_rows.py`` changes rows; shows the diffs.

    python examples/postgres/run.py      # after `python examples/postgres/servers.py up`

Starts the app (a local Ray): the reader takes a snapshot of both tables, so the queries begin
with the rows that exist; then each step of ``change_rows.py`` commits and the result diffs it
caused are printed, then the results.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from change_rows import steps  # noqa: E402

from drasi_ray import DrasiRay  # noqa: E402

QUERIES = ("open-orders-by-city", "big-orders")


def show(app: DrasiRay, title: str) -> None:
    print(title)
    for query_id in QUERIES:
        rows = sorted(app.results(query_id), key=lambda row: sorted(row.items()))
        print(f"  {query_id}: {rows}")


def main() -> None:
    app = DrasiRay.from_yaml(HERE / "app.yaml")
    app.start()  # returns once the reader has written the snapshot
    try:
        app.wait_until_idle(timeout=120)
        show(app, "the rows that were there (the snapshot):")
        subscriptions = {query_id: app.subscribe(query_id) for query_id in QUERIES}
        for number, description in enumerate(steps(), 1):
            app.wait_until_idle(timeout=60)  # the commit is on the stream, then applied
            print(f"{number}. {description}")
            for query_id, subscription in subscriptions.items():
                for result in subscription.drain():
                    for diff in result.results:
                        print(f"     {query_id} {diff['type'].upper()} {_row(diff)}")
        show(app, "now:")
        reader = app.status().reader("shop")
        print(f"the reader: {reader.state}, {reader.transactions} transactions written")
    finally:
        app.stop()


def _row(diff: dict[str, object]) -> object:
    if "after" in diff:
        return diff["after"]
    return diff["data"]


if __name__ == "__main__":
    main()
