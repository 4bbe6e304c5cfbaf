"""Which build of the hot path runs: the modules compiled to C, or their Python source.

The modules of :data:`COMPILED` (the per-change path of the store shard and of the query
engine) are compiled with mypyc when drasi_ray is installed (``setup.py``; ``DRASI_RAY_PURE=1``
at install time skips it). A compiled module is an extension module next to its source, and
Python imports an extension before a source of the same name. So a source edited after the
build (an editable install, a git checkout) would go on running the code it was compiled from.

:func:`select` (run by ``import drasi_ray``, before any of these modules is imported) prevents
that: the build wrote :data:`MANIFEST`, the SHA-256 of each source it compiled. Unless every
compiled module's source still matches, all of them are imported from their sources (they call
each other directly, so they are compiled and loaded as one), with one warning naming what to
do. ``DRASI_RAY_PURE=1`` at run time imports the sources without a warning. :data:`BUILD`
says which build runs, for status and benchmark records.

Standard library only: ``setup.py`` reads :data:`COMPILED` and :data:`MANIFEST` from this file
before anything is installed.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

COMPILED = (
    "drasi_ray.shards.store",
    "drasi_ray.shards.core",
    "drasi_ray.shards.routing",
    "drasi_ray.query.values",
    "drasi_ray.query.expressions",
    "drasi_ray.query.matching",
    "drasi_ray.query.indexes",
    "drasi_ray.query.contexts",
    "drasi_ray.query.parts",
    "drasi_ray.query.engine",
    "drasi_ray.host.runner",
)
"""The modules compiled with mypyc, as one group (one shared library, direct calls between
them): the per-change path from the store shard's apply through the query's diffs."""

MANIFEST = "native.json"
"""The build's record, in the package: ``{module: SHA-256 of the source it was compiled
from}`` (empty for a build without compiling)."""

PURE_VARIABLE = "DRASI_RAY_PURE"
"""``1`` at install time: compile nothing; at run time: import the sources."""

BUILD = "source"
"""``compiled`` when the modules of :data:`COMPILED` run compiled, else ``source``."""

_PACKAGE = Path(__file__).resolve().parent


def source_path(module: str, package: Path = _PACKAGE) -> Path:
    """The source file of ``module`` (a name under ``drasi_ray``)."""
    return package.parent.joinpath(*module.split(".")).with_suffix(".py")


def source_digest(path: Path) -> str:
    """The SHA-256 of a source file, as :data:`MANIFEST` records it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stale_modules(package: Path = _PACKAGE, modules: Sequence[str] = COMPILED) -> list[str]:
    """The modules whose compiled build is missing, or was made from another source."""
    try:
        recorded = json.loads((package / MANIFEST).read_text())
    except (OSError, ValueError):
        recorded = {}
    return [
        module
        for module in modules
        if not _has_extension(module, package)
        or recorded.get(module) != source_digest(source_path(module, package))
    ]


def select() -> str:
    """Decide which build of :data:`COMPILED` this process imports (module docstring); set
    and return :data:`BUILD`. Call it before any of them is imported."""
    global BUILD
    if not any(_has_extension(module) for module in COMPILED):
        BUILD = "source"
    elif os.environ.get(PURE_VARIABLE) == "1":
        _import_sources()
    elif stale := stale_modules():
        warnings.warn(
            f"drasi_ray: the compiled build of {', '.join(stale)} is not from the source now "
            "installed, so the Python source runs (slower). Reinstall drasi_ray "
            f"(pip install -e .) to compile it again, or set {PURE_VARIABLE}=1.",
            RuntimeWarning,
            stacklevel=2,
        )
        _import_sources()
    else:
        BUILD = "compiled"
    return BUILD


def _import_sources() -> None:
    global BUILD
    BUILD = "source"
    if not any(isinstance(finder, _SourceFirst) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst(frozenset(COMPILED)))


def _has_extension(module: str, package: Path = _PACKAGE) -> bool:
    stem = source_path(module, package).with_suffix("")
    return any(
        stem.with_name(stem.name + suffix).exists()
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
    )


class _SourceFirst:
    """A meta path finder that imports the modules it is given from their ``.py`` sources."""

    def __init__(self, modules: frozenset[str]) -> None:
        self._modules = modules

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name not in self._modules:
            return None
        return importlib.util.spec_from_file_location(name, source_path(name))
