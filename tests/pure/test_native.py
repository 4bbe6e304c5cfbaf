"""The compiled hot path (drasi_ray/native.py): the install runs it, and a source edited after
the build runs as source, with a warning, instead of the code it was compiled from."""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import drasi_ray
from drasi_ray import native

PACKAGE = Path(drasi_ray.__file__).resolve().parent
EXTENSION = importlib.machinery.EXTENSION_SUFFIXES[0]


def _manifest() -> dict[str, str]:
    try:
        recorded: dict[str, str] = json.loads((PACKAGE / native.MANIFEST).read_text())
    except OSError:
        return {}
    return recorded


needs_compiled = pytest.mark.skipif(
    not _manifest(), reason=f"drasi_ray was installed with {native.PURE_VARIABLE}=1: no build"
)

_PROBE = textwrap.dedent(
    """
    import sys, warnings
    warnings.simplefilter("always")
    # import this tree's drasi_ray (an editable install's finder would pick the installed one)
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, sys.argv[1])
    import drasi_ray.query.engine as engine
    from drasi_ray import native
    print(native.BUILD, engine.__file__)
    """
)


def _probe(root: Path, **environment: str) -> tuple[str, str, str]:
    """In a new interpreter, import drasi_ray from ``root``: (BUILD, engine's file, stderr)."""
    env = {key: value for key, value in os.environ.items() if key != native.PURE_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(root)],
        capture_output=True,
        text=True,
        check=True,
        env={**env, **environment},
    )
    build, path = done.stdout.split()
    return build, path, done.stderr


@needs_compiled
def test_the_install_runs_every_module_of_the_hot_path_compiled() -> None:
    assert sorted(_manifest()) == sorted(native.COMPILED)
    assert native.BUILD == "compiled"
    assert native.stale_modules() == []
    for name in native.COMPILED:
        module = importlib.import_module(name)
        assert module.__file__ is not None and module.__file__.endswith(EXTENSION), name


@needs_compiled
def test_pure_at_run_time_imports_the_sources_without_a_warning() -> None:
    build, path, stderr = _probe(PACKAGE.parent, **{native.PURE_VARIABLE: "1"})
    assert (build, Path(path)) == ("source", PACKAGE / "query" / "engine.py")
    assert "RuntimeWarning" not in stderr


@needs_compiled
def test_a_source_edited_after_the_build_runs_as_source_with_a_warning(tmp_path: Path) -> None:
    copy = tmp_path / "drasi_ray"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    build, path, _stderr = _probe(tmp_path)
    assert build == "compiled" and path.endswith(EXTENSION)  # the copy, as built

    with (copy / "shards" / "store.py").open("a") as source:
        source.write("# edited after the build\n")
    build, path, stderr = _probe(tmp_path)
    # every module of the group runs as source, not only the edited one
    assert (build, Path(path)) == ("source", copy / "query" / "engine.py")
    assert "the compiled build of drasi_ray.shards.store is not from the source" in stderr
    assert "pip install -e ." in stderr
    assert native.stale_modules(copy) == ["drasi_ray.shards.store"]


def test_stale_modules_names_a_missing_build_and_a_missing_manifest(tmp_path: Path) -> None:
    package = tmp_path / "drasi_ray"
    (package / "query").mkdir(parents=True)
    source = package / "query" / "engine.py"
    source.write_text("X = 1\n")
    modules = ["drasi_ray.query.engine"]
    assert native.stale_modules(package, modules) == modules  # no extension, no manifest

    (package / "query" / f"engine{EXTENSION}").write_bytes(b"")
    assert native.stale_modules(package, modules) == modules  # no manifest
    digest = native.source_digest(source)
    (package / native.MANIFEST).write_text(json.dumps({"drasi_ray.query.engine": digest}))
    assert native.stale_modules(package, modules) == []
    source.write_text("X = 2\n")
    assert native.stale_modules(package, modules) == modules
