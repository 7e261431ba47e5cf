"""Which run of each method a chapter uses: ``<runs_dir>/chosen.json`` (``fgpo choose``).

:func:`choose_runs` merges the methods it is given into the file (the others keep their
folders) and refuses a folder whose run was trained under another objective than the method's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

from ..io import inside, write_json

__all__ = ["CHOSEN_FILE", "CHOSEN_METHODS", "CHOSEN_EXTRAS", "CHOSEN_KEYS", "holds_selector", "choose_runs"]

CHOSEN_FILE = "chosen.json"
"""Under a runs folder: which run of each method a chapter uses (method -> folder relative to it)."""

CHOSEN_METHODS = {
    "fgpo": "FGPO",
    "fgpo-format": "FGPO + format term",
    "grpo": "GRPO",
    "sft": "SFT",
    "dpo": "DPO",
    "tools-with-descriptions": "Tools w/ Desc",
}
"""The methods of the LM selector's main table, by their key in :data:`CHOSEN_FILE`, and their row labels
(``tools-with-descriptions``, the untrained selector with named tools, keeps the paper's row label)."""

CHOSEN_EXTRAS = {"untrained": "Untrained", "warmup": "Warm-up", "fgpo-named": "FGPO (named tools)"}
"""Further rows a :data:`CHOSEN_FILE` may name: the selector before and after the format warm-up,
and FGPO trained with named tools (the tools' names in its prompt; the named-versus-anonymous
sensitivity)."""

CHOSEN_KEYS = {**CHOSEN_METHODS, **CHOSEN_EXTRAS}
"""Every key :data:`CHOSEN_FILE` may hold, with its row label."""


def holds_selector(folder: Path) -> bool:
    """A finished run, or the evaluations of a prompted or untrained selector."""
    return (folder / "manifest.json").exists() or (folder / "eval").is_dir()


def _objective_mismatch(method: str, manifest: dict | None) -> str | None:
    """Why a run (its manifest; None for a folder of evaluations only) cannot be ``method``'s, or None."""
    if method in ("untrained", "tools-with-descriptions"):
        return None if manifest is None else f"it holds a trained run ({manifest.get('objective')!r}), not {method}"
    if manifest is None:
        return "it holds evaluations only, no trained run"
    objective = manifest.get("objective")
    want = {"fgpo-format": "fgpo", "fgpo-named": "fgpo"}.get(method, method)
    if objective != want:
        return f"its objective is {objective!r}, not {want!r}"
    if want == "fgpo":  # a field the manifest lacks is not held against it
        setup, config = manifest.get("setup") or {}, manifest.get("config") or {}
        named = bool(setup.get("described", method == "fgpo-named"))
        if named != (method == "fgpo-named"):
            return "it was trained " + ("with" if named else "without") + " the tools' names in its prompt"
        weight = float(config.get("format_weight") or 0.0)
        if method != "fgpo-named" and "format_weight" in config and (weight > 0) != (method == "fgpo-format"):
            return f"its format_weight is {weight:g}"
    return None


def choose_runs(runs_dir, candidates: Mapping[str, str | Sequence[str]]) -> dict[str, str]:
    """Record in ``<runs_dir>/chosen.json``, for each method given (a key of :data:`CHOSEN_METHODS`
    or :data:`CHOSEN_EXTRAS`), its run folder, relative to ``runs_dir``; the methods not given keep
    the folders the file already names. A method given several finished FGPO-style runs (e.g. a
    learning-rate sweep) gets the one best on dev (:func:`~fgpo_core.experiments.run.best_dev`); a
    single folder is taken as it is, and must hold a finished run of the method's objective (or,
    for a prompted or untrained selector, an ``eval/`` folder). Returns the whole mapping written."""
    from .run import best_dev, run_manifest

    root = Path(runs_dir)
    unknown = sorted(set(candidates) - set(CHOSEN_KEYS))
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; known: {', '.join(CHOSEN_KEYS)}")
    chosen = {}
    for method, folders in candidates.items():
        folders = [folders] if isinstance(folders, str) else list(folders)
        if not folders:
            raise ValueError(f"no run given for {method}")
        for f in folders:
            inside(root, *str(f).rstrip("/").split("/"), what=f"{method}'s run folder (relative to {root}) part")
            if not holds_selector(root / f):
                raise FileNotFoundError(f"{root / f} holds no finished run and no evaluation")
            m = root / f / "manifest.json"
            why = _objective_mismatch(method, run_manifest(root / f) if m.exists() else None)
            if why:
                raise ValueError(f"{root / f} cannot be the {method} run: {why}")
        if len(folders) == 1:
            chosen[method] = folders[0]
        else:
            best = best_dev([root / f for f in folders])[0]
            chosen[method] = next(f for f in folders if str(root / f) == best)
    path = root / CHOSEN_FILE
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not valid JSON ({exc}); fix or delete it") from None
        if not isinstance(old, dict):
            raise ValueError(f"{path} does not map methods to folders; fix or delete it")
        chosen = {**old, **chosen}
    write_json(path, chosen, indent=1)
    return chosen
