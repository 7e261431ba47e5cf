"""A finished run's record read back: its manifest, checked (:func:`run_manifest`), and the folders
it names (:func:`recorded_folder`). The manifest, written last, names the sha256 of the run's
adapter files (:data:`ADAPTER_FILES`): a run whose adapter was torn or altered since is refused.
Also what is read off finished runs: the best of several on dev (:func:`best_dev`), how a
configuration differs from a recorded one (:func:`config_differences`), and the record of a run
stopped on purpose (:func:`record_stopped_run`)."""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, fields
from pathlib import Path

from ..io import manifest_field, read_manifest, verify_files, write_json

__all__ = [
    "ADAPTER_FILES",
    "run_manifest",
    "recorded_folder",
    "SETUP_FILE",
    "STOPPED_FILE",
    "record_stopped_run",
    "best_dev",
    "config_differences",
]


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
    for key, kind in (("objective", str), ("config", dict), ("setup", dict), ("dev", list), ("snapshot_of", dict)):
        if key in m:
            manifest_field(m, key, kind, path)
    verify_files(
        run_dir,
        m,
        "run",
        redo=f"train it again (`fgpo train --out-dir {run_dir}` resumes from its checkpoints) or delete the folder",
    )
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
    run was started, usually the repository root). Where that path does not exist from here (a
    chapter reads runs from another working directory): the folder of that name beside ``beside``,
    else the recorded path under the nearest folder above ``beside`` that holds it (a run that
    started from a run in another folder), else the name beside ``beside``."""
    folder = Path(recorded)
    if folder.exists():
        return folder
    near = Path(beside).parent / folder.name
    if near.exists() or folder.is_absolute():
        return near
    above = next((up / folder for up in Path(beside).resolve().parents if (up / folder).exists()), None)
    return above if above is not None else near


SETUP_FILE = "setup.json"


STOPPED_FILE = "stopped.json"


def record_stopped_run(run_dir, reason: str, out_dir=None) -> Path:
    """Keep what an FGPO run logged before it was stopped on purpose (e.g. a learning rate whose
    updates emptied p_gen's mass on the policy strings): its setup, configuration, every step's
    log and every dev evaluation, read from its last checkpoint, with ``reason``, written to
    ``<out_dir or run_dir>/stopped.json``. The checkpoints themselves are not kept: the record is
    what a chapter shows of a learning rate that was not chosen."""
    from ..algorithms.common import load_checkpoint

    run = Path(run_dir)
    last = run / "ckpt" / "last.pt"
    if not last.exists():
        raise FileNotFoundError(f"{run} holds no FGPO checkpoint (ckpt/last.pt) to record")
    if not reason.strip():
        raise ValueError("say why the run was stopped")
    state = load_checkpoint(last)
    config = json.loads((run / "ckpt" / "config.json").read_text())
    setup = json.loads((run / SETUP_FILE).read_text())
    n_batches = -(-setup["n_train"] // config["batch_size"])
    record = {
        "objective": "fgpo",
        "stopped": True,
        "reason": reason,
        "setup": setup,
        "config": config,
        "steps_taken": len(state["steps"]),
        "steps_planned": n_batches * config["epochs"],
        "steps": state["steps"],
        "dev": state["dev"],
    }
    out = Path(out_dir or run)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / STOPPED_FILE, record, indent=1, default=float)
    return out / STOPPED_FILE


def best_dev(run_dirs) -> tuple[str, dict]:
    """Of several finished FGPO runs (e.g. a learning-rate sweep), the one whose kept adapter
    ranks highest on dev by the runs' own ``select_by`` metric (:func:`fgpo_core.algorithms.fgpo.dev_key`:
    the accuracy, then J); returns its folder and manifest."""
    from ..algorithms.fgpo import dev_key

    scored = []
    for d in run_dirs:
        m = run_manifest(d)
        by = m.get("config", {}).get("select_by", "generation")
        rows = m.get("dev") or ([m["dev_at_step"]] if m.get("dev_at_step") else [])
        if not rows or not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{d} records no dev evaluation to choose it by")
        best = max(rows, key=lambda r: dev_key(r, by))
        scored.append((dev_key(best, by)[:2], str(d), m))
    if not scored:
        raise ValueError("no runs given")
    _, d, m = max(scored, key=lambda t: t[0])
    return d, m


def config_differences(config, recorded: dict) -> list[str]:
    """The fields in which the dataclass ``config`` differs from a manifest's ``recorded`` one.
    A field the manifest lacks (added to the dataclass after that run was trained) counts at
    its default, since every added field's default keeps the earlier behaviour."""
    want = json.loads(json.dumps(asdict(config), default=str))
    if hasattr(type(config), "from_record"):  # a config that reads its older records (renamed, nested fields)
        recorded = json.loads(json.dumps(asdict(type(config).from_record(recorded)), default=str))
    defaults = {f.name: f.default for f in fields(config) if f.default is not MISSING}
    have = {**json.loads(json.dumps(defaults, default=str)), **recorded}
    return sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
