"""The lock: every committed artifact's manifest names the versions constraints.txt pins."""

import json
import subprocess

import pytest

from fgpo_core.env import LOCK_FILE, RECORDED_PACKAGES, locked_versions, package_versions

ROOT = LOCK_FILE.parent


def committed_manifests():
    try:
        out = subprocess.run(
            ["git", "ls-files", "*manifest.json"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out]


def recorded(manifest: dict) -> dict:
    v = dict(manifest.get("versions", {}))
    if isinstance(manifest.get("torch"), str):
        v.setdefault("torch", manifest["torch"])
    return {k: x.split("+")[0] for k, x in v.items()}


def test_the_lock_pins_every_recorded_package():
    lock = locked_versions()
    missing = [p for p in RECORDED_PACKAGES if p not in lock]
    assert not missing, f"constraints.txt pins no version of {missing}"


def test_committed_artifacts_were_made_under_the_lock():
    lock = locked_versions()
    stale = {}
    for path in committed_manifests():
        m = json.loads(path.read_text())
        diff = {k: (v, lock.get(k)) for k, v in recorded(m).items() if v != "absent" and lock.get(k) not in (None, v)}
        if diff:
            stale[str(path.parent.relative_to(ROOT))] = diff
    assert not stale, (
        "these artifacts were made under other versions than constraints.txt pins; rebuild them "
        f"(or restore the lock): {stale}"
    )


def test_package_versions_drop_local_build_labels():
    v = package_versions(("numpy", "no-such-package-xyz"))
    assert "+" not in v["numpy"] and v["no-such-package-xyz"] == "absent"
