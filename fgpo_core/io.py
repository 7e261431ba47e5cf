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

__all__ = ["atomic_path", "atomic_dir", "write_text", "write_json"]


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
