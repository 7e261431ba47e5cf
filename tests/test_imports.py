"""The library's shape, read from its source with ``ast`` (nothing is imported): no module imports
another's private name, no two modules import each other (directly or round a longer loop), and no
library file is over 450 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "fgpo_core"
MAX_LINES = 450


def library_modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (file, is a package's __init__)}`` of every module under ``root/package``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _base(module: str, is_pkg: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module a ``from ... import`` statement reads from."""
    if node.level == 0:
        return node.module
    parts = module.split(".") if is_pkg else module.split(".")[:-1]
    if node.level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _statements(tree: ast.Module, top_level: bool):
    """Every statement of the module (``top_level=False``), or those run when it is imported:
    its body, looking inside ``if``/``try``/``with`` blocks but not into functions or classes."""
    if not top_level:
        yield from ast.walk(tree)
        return
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody"):
                stack += getattr(node, field, [])
            for handler in getattr(node, "handlers", []):
                stack += handler.body


def imports(modules: dict[str, tuple[Path, bool]], top_level: bool = True):
    """``(edges, names)``: ``edges[m]``, the library modules ``m`` imports; ``names``, every
    ``(importer, module, name)`` read by ``from module import name``. ``from pkg import sub``,
    where ``sub`` is a submodule, is an edge to ``pkg.sub``; any other name is an edge to ``pkg``."""
    edges = {m: set() for m in modules}
    names = []
    for m, (path, is_pkg) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in _statements(tree, top_level):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    # ``import a.b.c`` runs a.b.c; the deepest library module named is the edge
                    for i in range(len(parts), 0, -1):
                        if ".".join(parts[:i]) in modules:
                            edges[m].add(".".join(parts[:i]))
                            break
            elif isinstance(node, ast.ImportFrom):
                base = _base(m, is_pkg, node)
                if base is None or not (base == PACKAGE or base.startswith(PACKAGE + ".")):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in modules:
                        edges[m].add(sub)
                    else:
                        if base in modules:
                            edges[m].add(base)
                        names.append((m, base, alias.name))
        edges[m].discard(m)
    return edges, names


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative): each is a
    set of modules that import one another round a loop. Sorted, each sorted."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def private_imports(names) -> list[str]:
    """``importer imports _name from module`` for every private name read from another module."""
    return sorted(
        {
            f"{m} imports {name} from {base}"
            for m, base, name in names
            if name.startswith("_") and not name.startswith("__") and base != m
        }
    )


def describe(cycles) -> str:
    return "; ".join(" <-> ".join(c) for c in cycles)


MODULES = library_modules()


def test_the_library_is_found():
    assert len(MODULES) > 50
    assert "fgpo_core.table.io" in MODULES and "fgpo_core.genomics.tools" in MODULES


def test_no_module_imports_another_modules_private_name():
    _, names = imports(MODULES, top_level=False)
    private = private_imports(names)
    assert not private, "\n".join(private)


@pytest.mark.parametrize("top_level", [True, False], ids=["top-level", "also-inside-functions"])
def test_no_import_cycle(top_level):
    edges, _ = imports(MODULES, top_level=top_level)
    cycles = find_cycles(edges)
    assert not cycles, describe(cycles)


def test_no_library_file_over_450_lines():
    long = {m: n for m, (p, _) in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"


# -- the checks can fail --------------------------------------------------------------------------
def test_the_cycle_finder_on_small_graphs():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}, "x": {"a", "c"}}) == [["a", "b"], ["c", "d"]]


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, tuple[Path, bool]]:
    for rel, text in files.items():
        p = tmp_path / PACKAGE / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return library_modules(tmp_path)


def test_a_deliberate_cycle_is_caught(tmp_path):
    """Relative imports, ``from pkg import submodule`` and names read from a package's __init__
    each close a loop; a cycle through a function-level import is caught only by the full check."""
    mods = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "from .x import thing\n",
            "a/x.py": "from ..b import y\nthing = 1\n",  # a.x -> b.y (b's submodule)
            "b/__init__.py": "",
            "b/y.py": "from fgpo_core import a\n",  # b.y -> a (a subpackage, so its __init__)
            "c.py": "def f():\n    from . import d\n",
            "d.py": "import fgpo_core.c\n",
            "e.py": "from .a.x import thing\n",
        },
    )
    top, _ = imports(mods, top_level=True)
    assert top["fgpo_core.a.x"] == {"fgpo_core.b.y"}
    assert top["fgpo_core.b.y"] == {"fgpo_core.a"}
    assert find_cycles(top) == [["fgpo_core.a", "fgpo_core.a.x", "fgpo_core.b.y"]]
    every, _ = imports(mods, top_level=False)
    assert find_cycles(every) == [["fgpo_core.a", "fgpo_core.a.x", "fgpo_core.b.y"], ["fgpo_core.c", "fgpo_core.d"]]


def test_a_private_import_is_caught(tmp_path):
    mods = _package(
        tmp_path, {"__init__.py": "", "p.py": "_hidden = 1\n", "q.py": "def f():\n    from .p import _hidden\n"}
    )
    _, names = imports(mods, top_level=False)
    assert private_imports(names) == ["fgpo_core.q imports _hidden from fgpo_core.p"]
