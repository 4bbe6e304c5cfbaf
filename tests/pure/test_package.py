"""The package's public names (``from drasi_ray import ...``), imported on first use."""

from __future__ import annotations

import subprocess
import sys

import drasi_ray


def test_every_public_name_resolves_to_where_it_is_defined() -> None:
    assert set(drasi_ray.__all__) == set(drasi_ray._HOMES)
    for name in drasi_ray.__all__:
        value = getattr(drasi_ray, name)
        assert value.__module__ == drasi_ray._HOMES[name], name


def test_an_actor_module_does_not_import_the_whole_package() -> None:
    """What a Ray worker starting a consumer imports: not the app, not the query engine."""
    probe = (
        "import sys, drasi_ray.actors.consumer; "
        "print(sorted(m for m in ('drasi_ray.app', 'drasi_ray.query.engine') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
