"""Atomic file writes: the one way every long job of the library saves an artifact.

A file is written to a temporary name beside its destination and renamed over it
(``os.replace`` is atomic on one file system), so a job killed at any moment
leaves either the old file or the new one, never a truncated one.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "atomic_dir", "write_text", "write_json", "plain_name", "pid_lock", "finite_json"]


@contextmanager
def atomic_path(path, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends without error it is
    renamed to ``path``, otherwise removed. ``suffix`` ends the temporary name, for writers
    that insist on an extension (``numpy.savez`` adds ``.npz``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp{suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextmanager
def atomic_dir(path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path``; when the block ends without error it
    takes the place of ``path`` (an existing folder is moved aside first and removed after),
    otherwise it is removed. A job killed inside the block leaves ``path`` as it was."""
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")
    old = path.with_name(f"{path.name}.{os.getpid()}.old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        if path.exists():
            os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_json(path, obj, indent: int | None = 2, sort_keys: bool = False, default=None) -> Path:
    """Write ``obj`` as JSON (with a final newline) to ``path`` atomically."""
    return write_text(path, json.dumps(obj, indent=indent, sort_keys=sort_keys, default=default) + "\n")


def plain_name(name, what: str = "name") -> str:
    """``name`` if it can name a file directly under an output folder: not empty, not ``.`` or
    ``..``, no folder separator, no control character (so ``<out>/<name>`` never leads outside
    ``<out>``); otherwise a ValueError naming ``what`` it was."""
    if not isinstance(name, str) or not name or name in (".", "..") or name != name.strip() \
            or any(c in name for c in "/\\") or any(ord(c) < 32 for c in name):
        raise ValueError(f"{what} {name!r} is not a plain name (no folder part, not '.' or '..', no leading or "
                         "trailing space): it names a file inside the output folder")
    return name


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
                msg = busy(pid) if busy else (f"another process (pid {pid}) holds {lock}; wait for it, or delete "
                                              "the lock file if that process is gone")
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
