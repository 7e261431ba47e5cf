"""Execute the book's chapters with papermill under a profile, then render with Jupyter Book.

Chapters are the Jupytext percent files ``notebooks/NAME.py``; the table of
contents (``_toc.yml``) lists them as ``executed/NAME``. ``fgpo book`` reads
each chapter, injects the profile's parameters (only those the chapter
declares in its ``parameters`` cell), executes it headless into
``executed/NAME.ipynb``, hides the parameter cells, and builds the HTML with
``jupyter-book build -W -n --keep-going``. Math is typeset by a vendored
MathJax 3, so the rendered book needs no network.

Executed chapters are cached in ``book/cache/<profile>/`` under a key that hashes
everything their outputs depend on: the chapter's source, the parameters it receives,
the source of the library modules the chapter imports, transitively (its import closure,
:mod:`fgpo_core.import_closure`: a docstring edit in a module no chapter's closure holds
re-executes none), the lock (``constraints.txt``) and every file under each path the
parameters name (the committed tables, runs and studies it reads). A chapter whose key
matches its cached copy is not executed again; one whose inputs changed is. The key file
names the sha256 of the cached notebook, so a torn or altered copy is a miss (executed
again), never copied into ``executed/``. A profile given as a YAML file outside
``profiles/`` caches under ``book/cache/file-<digest of its path>``, never over a named
profile's cache. The cpu profile's cache is committed, so a fresh clone renders the book
from it in minutes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..import_closure import all_modules, closure_files, import_closure

__all__ = [
    "REPO_ROOT",
    "PROFILES",
    "CACHE",
    "KEY_FORMAT",
    "ChapterResult",
    "chapters",
    "load_profile",
    "execute_chapter",
    "chapter_modules",
    "chapter_inputs",
    "chapter_key",
    "cached_chapter",
    "cache_name",
    "build_book",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
PROFILES = ("ci", "cpu", "gpu")
EXECUTED = "executed"
HIDDEN_TAGS = ("parameters", "injected-parameters")
CACHE = Path("book") / "cache"
"""Executed chapters by profile (``CACHE/<profile>/NAME.ipynb``) with their keys (``NAME.key.json``)."""
KEY_FORMAT = 2
"""What a key is made of (part of every key): 2 hashes the chapter's import closure, 1 hashed the
whole library. Raise it when a key's recipe or how a chapter is executed changes."""


@dataclass
class ChapterResult:
    name: str
    ok: bool
    seconds: float
    message: str = ""
    cached: bool = False


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

    walk({"file": toc.get("root")})
    walk(toc.get("parts", toc.get("chapters", [])))
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
    data = yaml.safe_load(path.read_text())
    if data is None:
        raise ValueError(f"{path} holds no parameters (an empty or torn profile)")
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a mapping of parameter names to values")
    for key, value in data.items():  # a chapter's parameters are literals: a string, a number, true or false
        if not isinstance(key, str) or not isinstance(value, (str, int, float, bool)):
            raise ValueError(
                f"{path}: parameter {key!r} must be named by a string and be a string, a number, true or false, "
                f"got {value!r}"
            )
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
    failing = next(
        (
            (i, c)
            for i, c in enumerate(code_cells, 1)
            if any(o.get("output_type") == "error" for o in c.get("outputs", []))
        ),
        None,
    )
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    if failing is None:
        return f"chapter {name!r} failed: {ename}: {evalue}"
    i, cell = failing
    lines = cell.source.strip().splitlines()
    src = "\n".join("    | " + ln for ln in lines[:8]) + ("\n    | ..." if len(lines) > 8 else "")
    return f"chapter {name!r} failed in code cell {i} (In [{cell.get('execution_count')}]): {ename}: {evalue}\n{src}"


def _tracked_files(path: Path, root: Path) -> list[Path]:
    """The files under ``path`` that a clone of the repository holds: git's tracked and
    not-ignored files when ``root`` is a git checkout (so local build outputs such as
    checkpoints do not change a key), else every file."""
    if path.is_file():
        return [path]
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", str(path.resolve())],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
        files = [root / f for f in out.decode().split("\0") if f]
        return sorted({f for f in files if f.is_file()})
    except (OSError, subprocess.CalledProcessError):
        return sorted(f for f in path.rglob("*") if f.is_file())


_FILE_DIGESTS: dict = {}


def _file_digest(path: Path) -> str:
    st = path.stat()
    memo = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _FILE_DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _FILE_DIGESTS[memo] = h.hexdigest()
    return _FILE_DIGESTS[memo]


def _tree_digest(files: list[Path], base: Path) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f"{os.path.relpath(f.resolve(), base.resolve())}\0{_file_digest(f)}\n".encode())
    return h.hexdigest()


def chapter_modules(name: str, root: Path = REPO_ROOT) -> list[str]:
    """The library modules (``fgpo_core.…``) chapter ``name`` imports, transitively, with the
    package ``__init__`` files on the way (:func:`fgpo_core.import_closure.import_closure`); every
    module when a source does not parse (the chapter then fails when executed, and says where)."""
    try:
        return import_closure(sources=[root / "notebooks" / f"{name}.py"], lib_root=root / "fgpo_core")
    except (SyntaxError, ValueError):
        return all_modules(root / "fgpo_core")


def chapter_inputs(name: str, params: dict, root: Path = REPO_ROOT) -> dict:
    """What chapter ``name``'s outputs depend on, each as a SHA-256: its source, the
    parameters it declares (with the values ``params`` gives them), the source of the library
    modules it imports (:func:`chapter_modules`, named under ``modules``), the lock, and, for
    every parameter whose value names existing paths (relative to ``notebooks/``; a
    comma-separated list names several), the files under them."""
    declared = declared_parameters(read_chapter(name, root))
    chosen = {**declared, **{k: v for k, v in params.items() if k in declared}}
    modules = chapter_modules(name, root)
    lib = closure_files(modules, root / "fgpo_core")
    lock = root / "constraints.txt"
    inputs = {
        "format": KEY_FORMAT,
        "chapter": _file_digest(root / "notebooks" / f"{name}.py"),
        "parameters": hashlib.sha256(json.dumps(chosen, sort_keys=True, default=str).encode()).hexdigest(),
        "modules": modules,
        "library": _tree_digest(sorted(lib), root),
        "lock": _file_digest(lock) if lock.exists() else "",
        "data": {},
    }
    for key, value in sorted(chosen.items()):
        if not isinstance(value, str) or not value.strip():
            continue
        paths = [root / "notebooks" / v.strip() for v in value.split(",") if v.strip()]
        if paths and all(p.exists() for p in paths):
            inputs["data"][key] = _tree_digest([f for p in paths for f in _tracked_files(p, root)], root)
    return inputs


def chapter_key(inputs: dict) -> str:
    """One SHA-256 of :func:`chapter_inputs`."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def cached_chapter(name: str, profile_name: str, inputs: dict, root: Path = REPO_ROOT) -> Path | None:
    """The cached executed notebook of ``name`` under ``profile_name`` if its key matches ``inputs``
    and the notebook is the one the key file names (its sha256): a torn, altered or unreadable copy
    or key file is a miss, so the chapter is executed again."""
    from ..io import file_digest

    folder = root / CACHE / profile_name
    nb, key = folder / f"{name}.ipynb", folder / f"{name}.key.json"
    try:
        if not (nb.is_file() and key.is_file()):
            return None
        recorded = json.loads(key.read_text())
        if not isinstance(recorded, dict) or recorded.get("key") != chapter_key(inputs):
            return None
        if recorded.get("notebook_sha256") != file_digest(nb):  # read afresh: never a memo
            print(
                f"[fgpo book] {name}: the cached notebook {nb} does not match its key file; executing it again",
                file=sys.stderr,
                flush=True,
            )
            return None
    except (OSError, ValueError):  # unreadable, not JSON, not text
        return None
    return nb


def _store_in_cache(name: str, profile_name: str, inputs: dict, executed: Path, root: Path) -> None:
    from ..io import atomic_path, file_digest, write_json

    folder = root / CACHE / profile_name
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / f"{name}.ipynb") as tmp:
        shutil.copyfile(executed, tmp)
        digest = file_digest(tmp)
    # the key file is written last: it commits the notebook it names
    write_json(
        folder / f"{name}.key.json", {"key": chapter_key(inputs), "notebook_sha256": digest, "inputs": inputs}, indent=1
    )


def cache_name(profile: str, root: Path = REPO_ROOT) -> str:
    """The folder under ``book/cache/`` of ``profile``: a named profile's name, and so for its own
    file ``profiles/NAME.yaml``; any other YAML file's ``file-<sha256 of its resolved path>``, so a
    file elsewhere called ``cpu.yaml`` never reads or overwrites the committed cpu cache."""
    path = Path(profile)
    if not path.suffix:
        return profile
    resolved = path.resolve()
    if path.stem in PROFILES and resolved == (root / "profiles" / f"{path.stem}.yaml").resolve():
        return path.stem
    return "file-" + hashlib.sha256(str(resolved).encode()).hexdigest()[:16]


def execute_chapter(
    name: str, params: dict, out_dir: Path, root: Path = REPO_ROOT, timeout: int | None = None
) -> ChapterResult:
    """Execute one chapter headless with ``params`` into ``out_dir/NAME.ipynb``, written whole or not
    at all (a killed or crashed run leaves no partial notebook there; a failing cell's notebook is
    written, with its error)."""
    import nbformat
    import papermill as pm

    from ..io import atomic_path

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
    with atomic_path(out, suffix=".ipynb") as tmp:
        try:
            pm.execute_notebook(
                nb,
                str(tmp),
                parameters=chosen,
                kernel_name="python3",
                progress_bar=False,
                cwd=str(root / "notebooks"),
                execution_timeout=timeout,
                log_output=False,
            )
        except pm.PapermillExecutionError as exc:
            ok, message = False, _describe_failure(name, nbformat.read(tmp, as_version=4), exc)
        executed = nbformat.read(tmp, as_version=4)
        _hide_parameter_cells(executed)
        nbformat.write(executed, tmp)
    return ChapterResult(name, ok, time.time() - t0, message)


def build_book(
    profile: str = "cpu",
    only: list[str] | None = None,
    root: Path = REPO_ROOT,
    execute: bool = True,
    html: bool = True,
    cache: bool = True,
) -> int:
    """Execute chapters under ``profile`` and render the book; returns an exit code.

    Every chapter is attempted (a failure does not stop the others); failures
    are reported with the chapter's name, the failing cell and its source. With ``cache``
    a chapter whose inputs match its copy in ``book/cache/<profile>/`` is taken from there
    instead of executed, and a chapter executed without error is stored there.
    """
    names = chapters(root)
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise ValueError(f"unknown chapter(s) {', '.join(unknown)}; chapters are: {', '.join(names)}")
        names = [n for n in names if n in only]
    params = load_profile(profile, root)
    out_dir = root / EXECUTED
    results: list[ChapterResult] = []
    profile_name = cache_name(profile, root)
    if execute:
        for name in names:
            inputs = chapter_inputs(name, params, root) if cache else None
            hit = cached_chapter(name, profile_name, inputs, root) if cache else None
            if hit is not None:
                from ..io import atomic_path

                out_dir.mkdir(parents=True, exist_ok=True)
                with atomic_path(out_dir / f"{name}.ipynb") as tmp:
                    shutil.copyfile(hit, tmp)
                results.append(ChapterResult(name, True, 0.0, cached=True))
                print(f"[fgpo book] {name}: inputs unchanged, taken from {CACHE / profile_name}", flush=True)
                continue
            print(f"[fgpo book] executing {name} (profile {profile}) ...", flush=True)
            res = execute_chapter(name, params, out_dir, root)
            results.append(res)
            print(f"[fgpo book]   {'ok' if res.ok else 'FAILED'} in {res.seconds:.1f} s", flush=True)
            if res.ok and cache:
                _store_in_cache(name, profile_name, inputs, out_dir / f"{name}.ipynb", root)
    claims_failed = _failed_claims(out_dir, [r.name for r in results])
    missing = [n for n in chapters(root) if not (out_dir / f"{n}.ipynb").exists()]
    if html and missing:
        print(f"[fgpo book] not yet executed: {', '.join(missing)}; run without --chapter first", file=sys.stderr)
        return 1
    code = 0
    if html:
        print("[fgpo book] rendering HTML with Jupyter Book ...", flush=True)
        jb = Path(sys.executable).with_name("jupyter-book")
        cmd = [
            str(jb) if jb.exists() else (shutil.which("jupyter-book") or "jupyter-book"),
            "build",
            str(root),
            "-W",
            "-n",
            "--keep-going",
        ]
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
        print(
            "[fgpo book] chapter times: "
            + ", ".join(f"{r.name} {'cached' if r.cached else f'{r.seconds:.0f} s'}" for r in results)
        )
    for name, names in claims_failed.items():
        print(f"[fgpo book] {name}: claims that no longer hold: {', '.join(names)}", file=sys.stderr)
    from .consistency import inconsistencies

    disagree = inconsistencies(out_dir, chapters=chapters(root))
    for line in disagree:
        print(f"[fgpo book] the pages disagree: {line}", file=sys.stderr)
    return 1 if failed or code or claims_failed or disagree else 0


def _failed_claims(out_dir: Path, names: list[str]) -> dict[str, list[str]]:
    """Chapter -> the claims that failed in its executed notebook (:mod:`fgpo_core.book.claims`)."""
    import nbformat

    from .claims import failed_claims

    out = {}
    for name in names:
        path = out_dir / f"{name}.ipynb"
        if path.exists():
            bad = failed_claims(nbformat.read(path, as_version=4))
            if bad:
                out[name] = bad
    return out
