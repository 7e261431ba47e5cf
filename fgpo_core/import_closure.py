"""The library modules a piece of code imports, transitively, found by reading the source (``ast``).

A cache key that hashes only what a computation can run is both sound and narrow: the book keys a
chapter on the ``fgpo_core`` modules its Jupytext source imports (:mod:`fgpo_core.book.build`), and
a policy-head study keys its parts on the modules head training imports
(:func:`fgpo_core.experiments.study_inputs.training_code_digest`), so a docstring edit in an
LM-only module re-runs neither.

Nothing is imported: every module is parsed. What counts as an import, erring on the side of more:

* every ``import`` and ``from ... import`` statement anywhere in a module (inside functions too),
  relative ones resolved against the importing module's package; ``from P import n`` counts the
  submodule ``P.n`` when there is one;
* importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py``: they are in the closure;
* a string constant that names a library module (``"fgpo_core.algorithms.fgpo:FGPOConfig"``) and
  ``importlib.import_module("...")`` with a constant name;
* any other dynamic import (``importlib.import_module(name)``, ``__import__``,
  ``spec_from_file_location``) pulls in every module of the importing module's package, subpackages
  included;
* a package ``__init__`` may defer names to submodules with a module-level ``_LAZY`` dict literal
  (``{"LMSelector": ".lm"}``) read by its ``__getattr__`` (PEP 562): ``from P import LMSelector``
  and ``import P`` (``P.LMSelector``) pull in ``P.lm``; importing ``P.head`` does not. The imports
  inside such an ``__getattr__`` are not counted on their own.
"""

from __future__ import annotations

import ast
import hashlib
import re
from functools import cache
from pathlib import Path

__all__ = ["LIBRARY", "module_path", "all_modules", "import_closure", "closure_files", "closure_digest"]

LIBRARY = "fgpo_core"
LIB_ROOT = Path(__file__).resolve().parent
"""The package folder (``fgpo_core/``); its parent is the folder module names are relative to."""
_NAME = re.compile(rf"^({LIBRARY}(?:\.[A-Za-z_]\w*)*)(?::[A-Za-z_][\w.]*)?$")
_DYNAMIC = {"import_module", "__import__", "spec_from_file_location"}


_PATHS: dict = {}
"""module_path's answers during one :func:`import_closure` (files may come and go between calls)."""


def module_path(module: str, lib_root: Path = LIB_ROOT) -> Path | None:
    """The source file of a library module (``a/b.py`` or the package's ``a/b/__init__.py``), or None."""
    memo = (module, lib_root)
    if memo in _PATHS:
        return _PATHS[memo]
    parts, found = module.split("."), None
    if parts[0] == LIBRARY:
        base = lib_root.joinpath(*parts[1:])
        for f in (base.with_suffix(".py") if len(parts) > 1 else None, base / "__init__.py"):
            if f is not None and f.is_file():
                found = f
                break
    _PATHS[memo] = found
    return found


def _is_package(module: str, lib_root: Path) -> bool:
    f = module_path(module, lib_root)
    return f is not None and f.name == "__init__.py"


def _resolve(level: int, target: str | None, module: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><target> import ...`` inside ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def _package_modules(package: str, lib_root: Path) -> set[str]:
    """Every module of ``package``, subpackages included."""
    folder = module_path(package, lib_root).parent
    out = set()
    for f in folder.rglob("*.py"):
        rel = f.relative_to(lib_root.parent).with_suffix("").parts
        out.add(".".join(rel[:-1] if rel[-1] == "__init__" else rel))
    return out


def _lazy_names(tree: ast.Module, module: str) -> dict[str, str]:
    """A package's ``_LAZY = {"name": ".submodule"}``, resolved to absolute module names."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            out = {}
            for k, v in zip(node.value.keys, node.value.values):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, str):
                    rel = v.value
                    level = len(rel) - len(rel.lstrip("."))
                    out[str(k.value)] = _resolve(level, rel.lstrip(".") or None, module, True) if level else rel
            return out
    return {}


@cache
def _parse(path: Path, mtime_ns: int, size: int) -> ast.Module:  # mtime and size: the cache's key
    return ast.parse(path.read_bytes(), filename=str(path))


def _tree(path: Path) -> ast.Module:
    st = path.stat()
    return _parse(path, st.st_mtime_ns, st.st_size)


def _lazy_of(package: str, lib_root: Path) -> dict[str, str]:
    f = module_path(package, lib_root)
    return _lazy_names(_tree(f), package) if f is not None and f.name == "__init__.py" else {}


def _deferred_nodes(tree: ast.Module) -> set[int]:
    """The nodes inside a module-level ``__getattr__`` of a module that declares ``_LAZY``."""
    if not any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in n.targets)
        for n in tree.body
    ):
        return set()
    return {id(n) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__" for n in ast.walk(f)}


def _statements(tree: ast.Module, module: str, is_package: bool) -> list[tuple]:
    """The imports ``tree`` makes, as written: ``("name", module)`` for a module imported whole (``import
    a.b``, a constant ``import_module``, a string naming a module), ``("from", module, names)``, and
    ``("package", package)`` for a dynamic import."""
    deferred = _deferred_nodes(tree)
    out: list[tuple] = []
    for node in ast.walk(tree):
        if id(node) in deferred:
            continue
        if isinstance(node, ast.Import):
            out += [("name", a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            name = _resolve(node.level, node.module, module, is_package)
            out.append(("from", name, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _NAME.match(node.value)
            if m:
                out.append(("name", m.group(1)))
        elif isinstance(node, ast.Call) and module:
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if fname not in _DYNAMIC:
                continue
            first = node.args[0] if node.args else None
            if fname == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str):
                rel = first.value
                level = len(rel) - len(rel.lstrip("."))
                out.append(("name", _resolve(level, rel.lstrip(".") or None, module, is_package)))
            else:  # a name only known when it runs: the whole package it lives in
                out.append(("package", module if is_package else module.rsplit(".", 1)[0]))
    return out


_STATEMENTS: dict = {}


def _statements_of(path: Path, module: str, is_package: bool) -> list[tuple]:
    st = path.stat()
    memo = (str(path), module, is_package, st.st_mtime_ns, st.st_size)
    if memo not in _STATEMENTS:
        _STATEMENTS[memo] = _statements(_tree(path), module, is_package)
    return _STATEMENTS[memo]


def direct_imports(tree: ast.Module | None, module: str, is_package: bool, lib_root: Path = LIB_ROOT) -> set[str]:
    """The library modules that ``module`` (or, with ``module`` "", the source ``tree``, e.g. a
    chapter) imports itself. A name ending in NUL asks for a module's own code only (a package whose
    lazy names were not asked for); the parents of each are added by :func:`import_closure`."""
    if tree is None:
        stmts = _statements_of(module_path(module, lib_root), module, is_package)
    else:
        stmts = _statements(tree, module, is_package)
    out: set[str] = set()
    for kind, name, *names in stmts:
        if not (name == LIBRARY or name.startswith(LIBRARY + ".")):
            continue
        if kind == "package":
            out.update(_package_modules(name, lib_root))
        elif kind == "name":  # not a module (``"fgpo_core.x.Thing"``): its parent's code, in import_closure
            out.add(name)
        else:
            lazy, pkg, own = _lazy_of(name, lib_root), _is_package(name, lib_root), False
            for n in names[0]:
                if n == "*":
                    out.update(lazy.values())
                    own = True
                elif pkg and module_path(f"{name}.{n}", lib_root) is not None:
                    out.add(f"{name}.{n}")
                elif n in lazy:
                    out.add(lazy[n])
                else:
                    own = True
            if own or not pkg:
                out.add(name + "\0")
    return out


def import_closure(
    roots: list[str] | tuple[str, ...] = (), sources: list[Path] | tuple[Path, ...] = (), lib_root: Path = LIB_ROOT
) -> list[str]:
    """The library modules that importing ``roots`` (module names) or running ``sources`` (files
    outside the library, e.g. a chapter's Jupytext source) may execute, sorted: every module
    imported, transitively, and every package ``__init__`` on the way."""
    _PATHS.clear()
    todo: list[str] = list(roots)
    for src in sources:
        todo += direct_imports(ast.parse(Path(src).read_bytes(), filename=str(src)), "", False, lib_root)
    whole: set[str] = set()  # imported as a name (a package's lazy names included)
    seen: set[str] = set()  # whose own code is in the closure
    while todo:
        item = todo.pop()
        name, own_only = (item[:-1], True) if item.endswith("\0") else (item, False)
        if module_path(name, lib_root) is None:  # a name inside a module ("fgpo_core.x.Thing"): x's own code
            if "." in name:
                todo.append(name.rsplit(".", 1)[0] + "\0")
            continue
        if not own_only and name not in whole:
            whole.add(name)
            todo += _lazy_of(name, lib_root).values()
        parts = name.split(".")
        for i in range(1, len(parts)):  # the packages on the path run their __init__
            todo.append(".".join(parts[:i]) + "\0")
        if name in seen:
            continue
        seen.add(name)
        todo += direct_imports(None, name, _is_package(name, lib_root), lib_root)
    return sorted(seen)


def all_modules(lib_root: Path = LIB_ROOT) -> list[str]:
    """Every module of the library, sorted: the closure to fall back on when a source does not parse."""
    return sorted(_package_modules(LIBRARY, lib_root)) if (lib_root / "__init__.py").is_file() else []


def closure_files(modules: list[str], lib_root: Path = LIB_ROOT) -> list[Path]:
    """The source files of ``modules``."""
    return [module_path(m, lib_root) for m in modules]


def closure_digest(modules: list[str], lib_root: Path = LIB_ROOT) -> str:
    """One SHA-256 of the modules' names and sources."""
    h = hashlib.sha256()
    for m in sorted(modules):
        h.update(m.encode() + b"\0" + hashlib.sha256(module_path(m, lib_root).read_bytes()).digest())
    return h.hexdigest()
