"""Print the packages whose installed version differs from the pin in a constraints file.

Usage: python .ci/lock_diff.py constraints.txt. Pins whose environment marker does not hold for
this interpreter are skipped; a pinned package that is not installed is not reported.
"""

from __future__ import annotations

import sys
from importlib import metadata

from packaging.markers import Marker
from packaging.requirements import Requirement


def locked(path: str) -> dict[str, str]:
    """Package name (normalised) -> pinned version, for the pins that apply here."""
    pins: dict[str, str] = {}
    for line in open(path, encoding="utf-8"):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        requirement = Requirement(text)
        if requirement.marker is not None and not Marker(str(requirement.marker)).evaluate():
            continue
        (spec,) = requirement.specifier
        pins[requirement.name.lower().replace("_", "-")] = spec.version
    return pins


def main(path: str) -> int:
    changed = 0
    for name, pinned in sorted(locked(path).items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if installed != pinned:
            print(f"  {name}: {pinned} -> {installed}")
            changed += 1
    print(f"  ({changed} differ)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
