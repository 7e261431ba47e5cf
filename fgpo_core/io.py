"""Safe file writes and checked results: the one way every job of the library saves an artifact.

A file is written to a fresh temporary file created exclusively (``mkstemp``: a random name,
``O_CREAT|O_EXCL``, so a link planted beside the destination is never followed) in the
destination's own folder and renamed over it (``os.replace`` is atomic on one file system and
replaces a link at the final name instead of writing through it), so a job killed at any moment
leaves either the old file or the new one, never a truncated one. :func:`inside` is the one check
that a path made from user input or from ids inside input files stays in its output folder.

A result made of several files (a study, a table, a features set, a run) is complete only when
its manifest, written last, names the sha256 of every file it covers (:func:`with_digests`);
readers check it (:func:`verify_files`) and refuse a torn or altered result in one line
(:class:`CorruptResult`). A manifest without digests was written before they were recorded: it is
read as it is (legacy, unverified).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

__all__ = [
    "atomic_path",
    "atomic_file",
    "atomic_dir",
    "write_text",
    "write_json",
    "plain_name",
    "inside",
    "pid_lock",
    "finite_json",
    "file_digest",
    "with_digests",
    "verify_files",
    "CorruptResult",
    "read_manifest",
    "manifest_field",
    "FILES_KEY",
]

FILES_KEY = "files"
"""The manifest field that names the sha256 of each file of a result (relative name -> digest)."""


class CorruptResult(ValueError):
    """A result's file is missing, torn or altered: it no longer matches its manifest's digest."""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fresh(path: Path, suffix: str) -> tuple[int, Path]:
    """A new file beside ``path``, created exclusively under a random name (mode as a plain
    ``open`` would give it); its descriptor and path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=f".tmp{suffix}", dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())
    return fd, Path(tmp)


def _commit(fd_stat: os.stat_result, tmp: Path, path: Path) -> None:
    """Rename ``tmp`` over ``path`` if it is still the regular file created for it."""
    now = os.lstat(tmp)
    if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (fd_stat.st_dev, fd_stat.st_ino):
        raise FileExistsError(
            f"{tmp} was replaced while it was written (a planted file or link): nothing written to {path}"
        )
    os.replace(tmp, path)


@contextmanager
def atomic_path(path, suffix: str = "") -> Iterator[Path]:
    """Yield the path of a new, empty, exclusively created temporary file beside ``path``; when
    the block ends without error it is renamed to ``path``, otherwise removed. ``suffix`` ends the
    temporary name, for writers that insist on an extension (``numpy.savez`` adds ``.npz``)."""
    path = Path(path)
    fd, tmp = _fresh(path, suffix)
    made = os.fstat(fd)
    os.close(fd)
    try:
        yield tmp
        _commit(made, tmp, path)
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()


@contextmanager
def atomic_file(path, mode: str = "wb") -> Iterator:
    """Like :func:`atomic_path`, but yield the temporary file itself, open for writing (``wb`` or
    ``w``): the writer never opens a path by name, so nothing it writes can be redirected."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_file writes with 'wb' or 'w', not {mode!r}")
    path = Path(path)
    fd, tmp = _fresh(path, "")
    made = os.fstat(fd)
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as fh:
            yield fh
            fh.flush()
        _commit(made, tmp, path)
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()


@contextmanager
def atomic_dir(path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path`` (created exclusively under a random name);
    when the block ends without error it takes the place of ``path`` (an existing folder is moved
    aside first and removed after), otherwise it is removed. A job killed inside the block leaves
    ``path`` as it was."""
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name[:100]}.", suffix=".partial", dir=path.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # as a plain mkdir would make it
    old = path.with_name(f".{path.name[:100]}.{secrets.token_hex(8)}.old")
    try:
        yield tmp
        if path.is_symlink():
            path.unlink()
        elif path.exists():
            os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically; returns the path."""
    with atomic_file(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_json(path, obj, indent: int | None = 2, sort_keys: bool = False, default=None) -> Path:
    """Write ``obj`` as JSON (with a final newline) to ``path`` atomically."""
    return write_text(path, json.dumps(obj, indent=indent, sort_keys=sort_keys, default=default) + "\n")


def plain_name(name, what: str = "name") -> str:
    """``name`` if it can name a file directly under an output folder: not empty, not ``.`` or
    ``..``, no folder separator, no control character (so ``<out>/<name>`` never leads outside
    ``<out>``); otherwise a ValueError naming ``what`` it was."""
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or name != name.strip()
        or any(c in name for c in "/\\")
        or any(ord(c) < 32 for c in name)
    ):
        raise ValueError(
            f"{what} {name!r} is not a plain name (no folder part, not '.' or '..', no leading or "
            "trailing space): it names a file inside the output folder"
        )
    return name


def inside(folder, *names, what: str = "name") -> Path:
    """``folder/name/...`` where each of ``names`` is a :func:`plain_name` (a name from user input
    or from an id inside an input file): the path never leads outside ``folder``."""
    path = Path(folder)
    for name in names:
        path = path / plain_name(name, what)
    return path


def file_digest(path) -> str:
    """The sha256 of a file's bytes (read in blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def with_digests(manifest: dict, folder, names: Iterable[str]) -> dict:
    """``manifest`` with :data:`FILES_KEY` naming the sha256 of each of ``names`` (files of
    ``folder``, relative names): written last, it is the result's commit point."""
    folder = Path(folder)
    return {**manifest, FILES_KEY: {n: file_digest(folder / n) for n in sorted(names)}}


def verify_files(folder, manifest: dict, what: str = "result", redo: str = "build it again") -> bool:
    """Check every file the manifest's :data:`FILES_KEY` names against its sha256: True when all
    match, False for a manifest without digests (legacy, unverified); a missing, torn or altered
    file raises :class:`CorruptResult` in one line (``redo`` says how to make it again)."""
    files = manifest.get(FILES_KEY) if isinstance(manifest, dict) else None
    if files is None:
        return False
    folder = Path(folder)
    if not isinstance(files, dict):
        raise CorruptResult(
            f"{folder}: the {what}'s manifest field {FILES_KEY!r} is not a mapping of file names "
            f"to sha256 digests; {redo}"
        )
    for name, digest in files.items():
        path = inside(folder, *str(name).split("/"), what=f"{what} file name")
        if not path.is_file():
            raise CorruptResult(
                f"{path} is missing, yet the {what}'s manifest names it: the {what} is incomplete; {redo}"
            )
        if file_digest(path) != digest:
            raise CorruptResult(f"{path} does not match the sha256 its manifest records (torn or altered); {redo}")
    return True


def read_manifest(path, what: str = "manifest") -> dict:
    """A JSON object read from ``path``; anything else (torn, hand-edited into a list, not JSON)
    is a one-line ValueError naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a JSON {what} (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a JSON {what} (torn or hand-edited: {exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a {what}: it holds a JSON {type(data).__name__}, not an object")
    return data


_TYPE_NAMES = {
    int: "a whole number",
    str: "a string",
    float: "a number",
    dict: "a mapping",
    list: "a list",
    bool: "true or false",
}


def manifest_field(manifest: dict, key: str, kind: type | tuple, where="manifest", positive: bool = False):
    """``manifest[key]`` if it is of ``kind`` (a bool is not a number; a whole float is not an int),
    else a one-line ValueError naming ``where`` and the field."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if key not in manifest:
        raise ValueError(f"{where}: field {key!r} is missing")
    v = manifest[key]
    ok = isinstance(v, kinds) and not (isinstance(v, bool) and bool not in kinds)
    if ok and positive and not v > 0:
        ok = False
    if not ok:
        want = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds) + (" > 0" if positive else "")
        raise ValueError(f"{where}: field {key!r} must be {want}, got {v!r}")
    return v


@contextmanager
def pid_lock(lock, busy=None, error: type = FileExistsError) -> Iterator[Path]:
    """Hold the lock file ``lock`` (it holds this process's pid) for the block: one live job at a
    time. A lock whose process is gone is taken over; a live one raises ``error`` with the message
    ``busy(pid)`` (default: which process holds it)."""
    lock = Path(lock)
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            try:
                pid = int(lock.read_text().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            alive = pid > 0 and pid != os.getpid()
            if alive:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    alive = False
                except PermissionError:
                    pass
            if alive:
                msg = (
                    busy(pid)
                    if busy
                    else (
                        f"another process (pid {pid}) holds {lock}; wait for it, or delete "
                        "the lock file if that process is gone"
                    )
                )
                raise error(msg) from None
            lock.unlink(missing_ok=True)  # stale: its process died
    else:
        raise error(f"could not lock {lock}")
    try:
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        yield lock
    finally:
        lock.unlink(missing_ok=True)


def finite_json(obj):
    """``obj`` with every NaN or infinite float replaced by None (JSON has no NaN: ``json.dumps``
    would write a bare ``NaN`` that JSON readers refuse)."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    if hasattr(obj, "item") and hasattr(obj, "dtype"):  # a numpy scalar
        return finite_json(obj.item())
    return obj
