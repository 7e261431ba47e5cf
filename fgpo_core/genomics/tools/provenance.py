"""What a tool library is made of, by content: each tool's code and the labelled references it reads.

A table records these (:func:`library_provenance`) so that a build resumed with a tool replaced
under the same name and version (a plugin overriding a built-in tool), or with other labelled
references, is refused instead of mixing rows made under both.
"""

from __future__ import annotations

import hashlib
import inspect
import sys

import numpy as np

__all__ = ["tool_code_digest", "references_digest", "library_provenance"]


def tool_code_digest(tool) -> str:
    """A digest of the code that makes ``tool``'s evidence: its class's module, name and source
    (the module file where the source cannot be read)."""
    cls = type(tool)
    h = hashlib.sha256(f"{cls.__module__}.{cls.__qualname__}\n".encode())
    try:
        h.update(inspect.getsource(cls).encode())
    except (OSError, TypeError):
        path = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if path:
            try:
                with open(path, "rb") as fh:
                    h.update(fh.read())
            except OSError:
                pass
    return h.hexdigest()[:16]


def _update(h, values) -> None:
    arr = np.asarray(values)
    h.update(str(arr.dtype).encode() + str(arr.shape).encode())
    h.update(np.ascontiguousarray(arr).tobytes() if arr.dtype != object else "\0".join(map(str, arr.ravel())).encode())


def references_digest(library) -> str | None:
    """The sha256 of every labelled reference the library's tools read (the expert's reference
    sets by family, homology's database); None when no tool reads any."""
    h, seen = hashlib.sha256(), False
    for tool in library.tools:
        refs = getattr(tool, "references", None)
        if isinstance(refs, dict):
            seen = True
            h.update(f"{tool.name}:references\n".encode())
            for fam in sorted(refs):
                r = refs[fam]
                h.update(f"{fam}\n".encode())
                for attr in ("ids", "labels", "embeddings"):
                    if hasattr(r, attr):
                        _update(h, getattr(r, attr))
        db = getattr(tool, "database", None) or getattr(tool, "db", None)
        if db is not None and hasattr(db, "seqs"):
            seen = True
            h.update(f"{tool.name}:database\n".encode())
            for attr in ("ids", "seqs", "labels"):
                h.update("\0".join(map(str, getattr(db, attr, []))).encode() + b"\n")
    return h.hexdigest() if seen else None


def library_provenance(library) -> dict:
    """``{"tool_code": {name: digest}, "references_sha256": ...}`` of a tool library."""
    return {
        "tool_code": {t.name: tool_code_digest(t) for t in library.tools},
        "references_sha256": references_digest(library),
    }
