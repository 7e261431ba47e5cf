"""Execute the book's chapters with papermill under a profile, then render with Jupyter Book.

Chapters are the Jupytext percent files ``notebooks/NAME.py``; the table of
contents (``_toc.yml``) lists them as ``executed/NAME``. ``fgpo book`` reads
each chapter, injects the profile's parameters (only those the chapter
declares in its ``parameters`` cell), executes it headless into
``executed/NAME.ipynb``, hides the parameter cells, and builds the HTML with
``jupyter-book build -W -n --keep-going``. Math is typeset by a vendored
MathJax 3, so the rendered book needs no network.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = ["REPO_ROOT", "PROFILES", "ChapterResult", "chapters", "load_profile", "execute_chapter", "build_book"]

REPO_ROOT = Path(__file__).resolve().parents[2]
PROFILES = ("ci", "cpu", "gpu")
EXECUTED = "executed"
HIDDEN_TAGS = ("parameters", "injected-parameters")


@dataclass
class ChapterResult:
    name: str
    ok: bool
    seconds: float
    message: str = ""


def chapters(root: Path = REPO_ROOT) -> list[str]:
    """Chapter names in table-of-contents order (entries under ``executed/``)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    names: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            f = node.get("file")
            if isinstance(f, str) and f.startswith(EXECUTED + "/"):
                names.append(f.split("/", 1)[1])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    return names


def load_profile(profile: str, root: Path = REPO_ROOT) -> dict:
    """The parameters of a profile (``profiles/NAME.yaml``), or of a YAML file path."""
    path = Path(profile)
    if not path.suffix:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}: use one of {', '.join(PROFILES)} or a YAML file")
        path = root / "profiles" / f"{profile}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"profile file {path} does not exist")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a mapping of parameter names to values")
    return data


def read_chapter(name: str, root: Path = REPO_ROOT):
    """The chapter's notebook, read from its Jupytext percent source."""
    import jupytext

    src = root / "notebooks" / f"{name}.py"
    if not src.exists():
        raise FileNotFoundError(f"chapter {name!r} has no source {src}")
    nb = jupytext.read(src, fmt="py:percent")
    nb.metadata.setdefault("kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"})
    return nb


def declared_parameters(nb) -> dict:
    """Names and default values in the chapter's single ``parameters`` cell."""
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"a chapter needs exactly one cell tagged 'parameters', found {len(cells)}")
    scope: dict = {}
    exec(compile(cells[0].source, "<parameters>", "exec"), {}, scope)  # literals only
    return {k: v for k, v in scope.items() if not k.startswith("_")}


def _hide_parameter_cells(nb) -> None:
    for cell in nb.cells:
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if any(t in tags for t in HIDDEN_TAGS) and "remove-cell" not in tags:
            tags.append("remove-cell")


def _describe_failure(name: str, nb, exc) -> str:
    """Name the chapter, the failing cell (its code-cell number and execution count) and its source."""
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    failing = next(((i, c) for i, c in enumerate(code_cells, 1)
                    if any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    if failing is None:
        return f"chapter {name!r} failed: {ename}: {evalue}"
    i, cell = failing
    lines = cell.source.strip().splitlines()
    src = "\n".join("    | " + ln for ln in lines[:8]) + ("\n    | ..." if len(lines) > 8 else "")
    return (f"chapter {name!r} failed in code cell {i} (In [{cell.get('execution_count')}]): "
            f"{ename}: {evalue}\n{src}")


def execute_chapter(name: str, params: dict, out_dir: Path, root: Path = REPO_ROOT,
                    timeout: int | None = None) -> ChapterResult:
    """Execute one chapter headless with ``params`` into ``out_dir/NAME.ipynb``."""
    import nbformat
    import papermill as pm

    t0 = time.time()
    nb = read_chapter(name, root)
    declared = declared_parameters(nb)
    chosen = {k: v for k, v in params.items() if k in declared}
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name}.ipynb"
    # the kernel must run this interpreter, whatever PATH says
    env_bin = str(Path(sys.executable).parent)
    if not os.environ.get("PATH", "").startswith(env_bin):
        os.environ["PATH"] = env_bin + os.pathsep + os.environ.get("PATH", "")
    ok, message = True, ""
    try:
        pm.execute_notebook(nb, str(out), parameters=chosen, kernel_name="python3", progress_bar=False,
                            cwd=str(root / "notebooks"), execution_timeout=timeout, log_output=False)
    except pm.PapermillExecutionError as exc:
        ok, message = False, _describe_failure(name, nbformat.read(out, as_version=4), exc)
    executed = nbformat.read(out, as_version=4)
    _hide_parameter_cells(executed)
    nbformat.write(executed, out)
    return ChapterResult(name, ok, time.time() - t0, message)


def build_book(profile: str = "cpu", only: list[str] | None = None, root: Path = REPO_ROOT,
               execute: bool = True, html: bool = True) -> int:
    """Execute chapters under ``profile`` and render the book; returns an exit code.

    Every chapter is attempted (a failure does not stop the others); failures
    are reported with the chapter's name, the failing cell and its source.
    """
    names = chapters(root)
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise SystemExit(f"unknown chapter(s) {', '.join(unknown)}; chapters are: {', '.join(names)}")
        names = [n for n in names if n in only]
    params = load_profile(profile, root)
    out_dir = root / EXECUTED
    results: list[ChapterResult] = []
    if execute:
        for name in names:
            print(f"[fgpo book] executing {name} (profile {profile}) ...", flush=True)
            res = execute_chapter(name, params, out_dir, root)
            results.append(res)
            print(f"[fgpo book]   {'ok' if res.ok else 'FAILED'} in {res.seconds:.1f} s", flush=True)
    missing = [n for n in chapters(root) if not (out_dir / f"{n}.ipynb").exists()]
    if html and missing:
        print(f"[fgpo book] not yet executed: {', '.join(missing)}; run without --chapter first", file=sys.stderr)
        return 1
    code = 0
    if html:
        print("[fgpo book] rendering HTML with Jupyter Book ...", flush=True)
        jb = Path(sys.executable).with_name("jupyter-book")
        cmd = [str(jb) if jb.exists() else (shutil.which("jupyter-book") or "jupyter-book"),
               "build", str(root), "-W", "-n", "--keep-going"]
        proc = subprocess.run(cmd, cwd=root)
        code = proc.returncode
        if code == 0:
            print(f"[fgpo book] book written to {root / '_build' / 'html' / 'index.html'}")
        else:
            print(f"[fgpo book] Jupyter Book failed (exit {code})", file=sys.stderr)
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"[fgpo book] {r.message}", file=sys.stderr)
    if results:
        print("[fgpo book] chapter times: " + ", ".join(f"{r.name} {r.seconds:.0f} s" for r in results))
    return 1 if failed or code else 0
