"""Build drasi_ray: the hot path's modules compiled to C with mypyc (drasi_ray/native.py).

``DRASI_RAY_PURE=1`` at install time compiles nothing (the package then runs as Python source).
Every other setting is in pyproject.toml.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
native = runpy.run_path(str(ROOT / "drasi_ray" / "native.py"))  # standard library only
modules: tuple[str, ...] = native["COMPILED"]
pure = os.environ.get(native["PURE_VARIABLE"]) == "1"
# pip runs this file for the metadata too: compile only for a command that builds
building = not {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop"}.isdisjoint(
    sys.argv
)

extensions = []
if building and not pure:
    from mypyc.build import mypycify

    sources = [str(native["source_path"](module).relative_to(ROOT)) for module in modules]
    # The same build whatever is installed where it runs: no config file (its plugins and
    # strictness are for the type check in CI), no installed package read (the dependencies'
    # types are Any to the compiler), and the package's other modules read for their types
    # only (their errors, in a check without the dependencies' types, are not the build's).
    options = ["--config-file=", "--no-site-packages", "--follow-imports=silent"]
    extensions = mypycify(
        [*options, "--ignore-missing-imports", *sources],
        opt_level="3",
        group_name="drasi_ray.native",
    )

if building:
    digest, path = native["source_digest"], native["source_path"]
    manifest = {} if pure else {module: digest(path(module)) for module in modules}
    (ROOT / "drasi_ray" / native["MANIFEST"]).write_text(json.dumps(manifest, indent=2) + "\n")

setup(ext_modules=extensions)
