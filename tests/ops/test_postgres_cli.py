"""The command line with a PostgreSQL source: its YAML checked with positions, and a start that
fails (wrong credentials) reported on one line, naming the database, the secret nowhere."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from drasi_ray.ops import cli
from drasi_ray.testing.postgres import EmbeddedPostgres

ROOT = Path(__file__).resolve().parents[2]
APP = """id: {app}
sources:
  - id: shop
    kind: PostgreSQL
    properties:
      host: 127.0.0.1
      port: {port}
      database: {database}
      user: postgres
      password_file: {password_file}
      ssl_mode: disable
      redis_url: {redis_url}
queries:
  - id: orders
    sources: [shop]
    query: MATCH (o:orders) RETURN o.id AS id
"""


def test_validate_checks_the_example_and_points_at_a_written_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["validate", str(ROOT / "examples" / "postgres" / "app.yaml")]) == 0
    text = APP.format(
        app="shop", port=5432, database="shop", password_file="/p", redis_url="redis://x:1"
    ).replace("      password_file: /p\n", "      password: hunter2\n")
    path = tmp_path / "app.yaml"
    path.write_text(text)
    assert cli.main(["validate", str(path)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith(f"{path}:6:7: sources.0.properties: Value error, a password is never")
    assert "hunter2" not in "\n".join(out)


def test_run_reports_wrong_credentials_on_one_line(
    ray_session: None,
    redis_url: str,
    postgres_server: EmbeddedPostgres,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    database = postgres_server.create_database(f"cli_{uuid.uuid4().hex[:8]}")
    wrong = tmp_path / "password"
    wrong.write_text("not-the-password\n")
    path = tmp_path / "app.yaml"
    path.write_text(
        APP.format(
            app=f"cli-{uuid.uuid4().hex[:6]}",
            port=postgres_server.port,
            database=database,
            password_file=wrong,
            redis_url=redis_url,
        )
    )
    assert cli.main(["run", str(path), "--exit-when-idle"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("drasi-ray: error: PostgreSQL source 'shop': database ")
    assert f"{database!r}" in err[0] and "password authentication failed" in err[0]
    assert "not-the-password" not in err[0]
