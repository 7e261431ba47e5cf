"""The software an artifact was made with: the versions a manifest records, checked against the lock.

``constraints.txt`` at the top of the repository pins every package the committed artifacts
(tables, reader, adapters, studies) were made with; ``make`` and CI install under it.
:func:`package_versions` is what new manifests record, and :func:`locked_versions` reads the lock.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

__all__ = ["RECORDED_PACKAGES", "package_versions", "locked_versions", "LOCK_FILE"]

LOCK_FILE = Path(__file__).resolve().parents[1] / "constraints.txt"

RECORDED_PACKAGES = ("torch", "numpy", "pandas", "scipy", "pyarrow", "transformers", "peft", "trl", "datasets")
"""The packages whose versions can change a committed number, recorded in every new manifest."""


def _base(version: str) -> str:
    return version.split("+")[0]  # torch's local label (+cpu) names the build, not the version


def package_versions(packages=RECORDED_PACKAGES) -> dict[str, str]:
    """The installed version of each package (``"absent"`` when it is not installed)."""
    out = {}
    for p in packages:
        try:
            out[p] = _base(metadata.version(p))
        except metadata.PackageNotFoundError:
            out[p] = "absent"
    return out


def locked_versions(path=LOCK_FILE) -> dict[str, str]:
    """Package name (lower case, ``_`` as ``-``) -> version pinned by the lock file."""
    out = {}
    for line in Path(path).read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)", line.strip())
        if m:
            out[m.group(1).lower().replace("_", "-")] = _base(m.group(2))
    return out
