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

__all__ = ["atomic_path", "write_text", "write_json"]


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


def write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_json(path, obj, indent: int | None = 2, sort_keys: bool = False, default=None) -> Path:
    """Write ``obj`` as JSON (with a final newline) to ``path`` atomically."""
    return write_text(path, json.dumps(obj, indent=indent, sort_keys=sort_keys, default=default) + "\n")
