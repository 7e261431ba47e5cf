"""A finished run's record read back: its manifest, checked (:func:`run_manifest`), and the folders
it names (:func:`recorded_folder`). The manifest, written last, names the sha256 of the run's
adapter files (:data:`ADAPTER_FILES`): a run whose adapter was torn or altered since is refused."""
from __future__ import annotations

from pathlib import Path

from ..io import manifest_field, read_manifest, verify_files

__all__ = ["ADAPTER_FILES", "run_manifest", "recorded_folder"]


ADAPTER_FILES = ("adapter/adapter_model.safetensors", "adapter/adapter_config.json")
"""The files of a run folder its manifest names by sha256 (the commit point of a finished run)."""


def run_manifest(run_dir) -> dict:
    """The manifest of a finished run; a clear error for a run that is missing or unfinished, for a
    hand-edited manifest whose fields are of the wrong type, and for an adapter torn or altered
    since the manifest recorded its sha256. A snapshot's manifest written before snapshots
    recorded their run's configuration gets it from that run (``snapshot_of``)."""
    path = Path(run_dir) / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} holds no finished run (no manifest.json): train it with `fgpo train`")
    m = read_manifest(path, "run manifest")
    for key, kind in (("objective", str), ("config", dict), ("setup", dict), ("dev", list),
                      ("snapshot_of", dict)):
        if key in m:
            manifest_field(m, key, kind, path)
    verify_files(run_dir, m, "run", redo=f"train it again (`fgpo train --out-dir {run_dir}` resumes from its "
                                           "checkpoints) or delete the folder")
    source = m.get("snapshot_of")
    if source is not None and "config" not in m:
        config = _source_config(Path(run_dir), source)
        if config is not None:
            m["config"] = config
    return m


def _source_config(run_dir: Path, source: dict) -> dict | None:
    """The configuration of the run a snapshot was taken from (its manifest or ``ckpt/config.json``)."""
    src = recorded_folder(str(source.get("run", "")), run_dir)
    for f in (src / "manifest.json", src / "ckpt" / "config.json"):
        if f.exists():
            data = read_manifest(f, "run record")
            return manifest_field(data, "config", dict, f) if f.name == "manifest.json" else data
    return None  # its run is gone: the snapshot is read as it was written


def recorded_folder(recorded: str, beside) -> Path:
    """A run folder as a manifest recorded it (``init_adapter``, ``out_dir``: relative to where the
    run was started, usually the repository root), or, where that path does not exist from here,
    the folder of that name beside ``beside`` (a chapter reads runs from another working directory)."""
    folder = Path(recorded)
    return folder if folder.exists() else Path(beside).parent / folder.name
