"""Tools by name: the five built in, and any a user registers, without editing the library.

A tool is any object with ``name``, ``title``, ``version`` and ``run(ToolInput) -> Evidence``
(the :class:`~fgpo_core.genomics.tools.base.Tool` protocol). Register a class (or any factory)
under its name and build libraries by naming their slots::

    from fgpo_core.genomics.tools import Evidence, register_tool, library_from_names

    @register_tool("gc_skew")
    class GCSkew:
        name, title, version = "gc_skew", "GC skew", "1"

        def run(self, inp):
            ...
            return Evidence(self.name, self.title, records, lines)

    library = library_from_names(["composition", "gc_skew", "expert"], references=refs)

A factory is called with the keyword arguments it declares among ``references`` (the
expert's labelled reference sets by family), ``database`` (the homology database),
``encoder`` (the expert's sequence encoder) and ``max_length``; a plain class with no such
parameters is called with none. On the command line, ``--plugin FILE.py`` imports a file that
registers its tools, and ``--tools a,b,c`` names the slots (``fgpo table build``, ``fgpo tools``).

Beyond the paper's five, more are registered for larger libraries: ``genes`` (T6,
pyrodigal), ``cpg_islands`` (T7), ``low_complexity`` (T8, DUST and tandem repeats),
``thermo`` (T9, primer3), ``signature`` (T10, Karlin's genomic signature against the shipped
genomes), ``restriction`` (T11, Biopython's REBASE sites) and ``profiles`` (T12, HMMER3 on
the six-frame translation against the protein profiles pyhmmer ships).

The labelled reference sets of the genomic expert (T4) and homology search (T5) come from a
built benchmark's ``references.jsonl`` or from the user's own labelled file
(:func:`references_from_file`): rows ``{"id", "family", "seq", "label"}``, or schema-v1
questions of the ``describe`` shape, whose sequence is labelled by its answer's option text.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from pathlib import Path
from typing import Callable, Mapping, Sequence

__all__ = [
    "register_tool",
    "registered_tools",
    "make_tool",
    "library_from_names",
    "load_plugin",
    "references_from_rows",
    "references_from_file",
    "missing_references",
]

_FACTORIES: dict[str, Callable] = {}
_PLUGINS: set[str] = set()


def register_tool(name: str, factory: Callable | None = None, replace: bool = False):
    """Register ``factory`` (a tool class or a function returning a tool) under ``name``; usable
    as a decorator. A name already taken is refused unless ``replace``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a tool name must be a plain identifier, got {name!r}")

    def add(f: Callable) -> Callable:
        if not callable(f):
            raise TypeError(f"tool {name!r}: the factory must be callable, got {type(f).__name__}")
        old = _FACTORIES.get(name)
        same = old is f or (
            old is not None
            and (getattr(old, "__module__", None), getattr(old, "__qualname__", None))
            == (getattr(f, "__module__", None), getattr(f, "__qualname__", None))
        )
        if old is not None and not replace and not same:  # the same code imported again is no clash
            raise ValueError(f"a tool named {name!r} is already registered (pass replace=True to override it)")
        _FACTORIES[name] = f
        return f

    return add(factory) if factory is not None else add


def registered_tools() -> list[str]:
    """Every tool name that :func:`library_from_names` knows, the built-in five first."""
    return list(_FACTORIES)


def make_tool(name: str, **available):
    """One tool by name, given whichever of ``references``, ``database``, ``encoder`` and
    ``max_length`` its factory declares."""
    if name not in _FACTORIES:
        raise ValueError(
            f"no tool named {name!r}; registered tools: {', '.join(_FACTORIES)} "
            "(register your own with fgpo_core.genomics.tools.register_tool, or --plugin FILE.py)"
        )
    f = _FACTORIES[name]
    try:
        params = inspect.signature(f).parameters
    except (TypeError, ValueError):
        params = {}
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kw = {k: v for k, v in available.items() if v is not None and (takes_all or k in params)}
    tool = f(**kw)
    for attr in ("name", "title", "version", "run"):
        if not hasattr(tool, attr):
            raise TypeError(f"tool {name!r} has no {attr!r}: a tool needs name, title, version and run(ToolInput)")
    if tool.name != name:
        raise ValueError(f"the tool registered as {name!r} calls itself {tool.name!r}")
    return tool


def library_from_names(
    names: Sequence[str], references: Mapping | None = None, database=None, encoder=None, max_length: int | None = None
):
    """A :class:`~fgpo_core.genomics.tools.ToolLibrary` whose slots hold the named tools, in order."""
    from .expert import KmerSpectrumEncoder
    from .library import ToolLibrary

    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise ValueError("name at least one tool")
    encoder = encoder or KmerSpectrumEncoder()
    return ToolLibrary(
        [
            make_tool(n, references=dict(references or {}), database=database, encoder=encoder, max_length=max_length)
            for n in names
        ]
    )


def load_plugin(path) -> list[str]:
    """Import a Python file that registers tools; returns the names it added."""
    path = Path(path)
    if not path.is_file() or path.suffix != ".py":
        raise FileNotFoundError(f"plugin {path} is not a Python file")
    key = str(path.resolve())
    if key in _PLUGINS:  # a file is imported once per process
        return []
    before = set(_FACTORIES)
    spec = importlib.util.spec_from_file_location(f"fgpo_plugin_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:  # a plugin may not end the command (with status 0, as if it had succeeded)
        sys.modules.pop(spec.name, None)
        raise ValueError(
            f"plugin {path} called sys.exit({exc.code!r}) while loading; a plugin registers tools and returns"
        ) from None
    except Exception as exc:
        sys.modules.pop(spec.name, None)
        raise ValueError(f"plugin {path} failed to load: {type(exc).__name__}: {exc}") from exc
    _PLUGINS.add(key)
    return sorted(set(_FACTORIES) - before)


def references_from_rows(rows: Sequence[dict], encoder=None):
    """The expert's reference sets by family and the homology database (repeat family) of
    labelled rows ``{"id", "family", "seq", "label"}``: ``(references, database)``."""
    from .expert import KmerSpectrumEncoder, ReferenceSet
    from .homology import HomologyDatabase
    from .validate import MAX_LENGTH, SequenceError, validate_sequence

    encoder = encoder or KmerSpectrumEncoder()
    by_family: dict = {}
    for r in rows:
        if not isinstance(r, dict):
            raise ValueError(f"a labelled reference row must be a JSON object, got {type(r).__name__}")
        missing = [k for k in ("id", "family", "seq", "label") if k not in r]
        if missing:
            raise ValueError(
                f"a labelled reference row needs id, family, seq and label; one lacks {', '.join(missing)}"
            )
        odd = [k for k in ("id", "family", "label") if not isinstance(r[k], str) or not r[k].strip()]
        if odd:
            raise ValueError(f"reference row {r.get('id')!r}: field {odd[0]!r} must be a non-empty string")
        try:  # checked only: the reference sets read the row as it is
            validate_sequence(r["seq"], max(MAX_LENGTH, len(str(r["seq"]))), name=f"reference row {r['id']!r}: seq")
        except SequenceError as exc:
            raise ValueError(str(exc)) from None
        by_family.setdefault(r["family"], []).append(r)
    refs = {
        f: ReferenceSet.build(f, [r["id"] for r in rs], [r["seq"] for r in rs], [r["label"] for r in rs], encoder)
        for f, rs in by_family.items()
    }
    rep = by_family.get("repeat", [])
    return refs, HomologyDatabase([r["id"] for r in rep], [r["seq"] for r in rep], [r["label"] for r in rep])


def _rows_of(path: Path) -> list[dict]:
    from ..benchmarks.schema import read_questions, unique_keys

    first = next((ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()), None)
    if first is None:
        raise ValueError(f"{path} is empty: a labelled reference file needs at least one row")
    rows = []
    for i, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if ln.strip():
            try:
                rows.append(json.loads(ln, object_pairs_hook=unique_keys))
            except ValueError as exc:
                raise ValueError(f"{path}: line {i}: not a valid JSON object ({exc})") from None
    if not (isinstance(rows[0], dict) and "options" in rows[0]):  # reference rows
        return rows
    rows = []
    for q in read_questions(path):  # schema-v1 questions: each describe sequence, labelled by its answer
        if q.shape == "describe":
            rows.append({"id": q.id, "family": q.family, "seq": q.sequences[""], "label": q.options[q.answer]})
    if not rows:
        raise ValueError(f"{path} holds no describe-shaped question to label a reference sequence")
    return rows


def references_from_file(path, encoder=None):
    """:func:`references_from_rows` of a JSONL file: labelled rows, or schema-v1 questions
    (a training file: each describe question's sequence labelled by its correct option)."""
    return references_from_rows(_rows_of(Path(path)), encoder)


def missing_references(library, families: Sequence[str]) -> list[str]:
    """The question families the library's expert has no labelled reference set for (it would
    answer "No labelled reference set" on all of them); empty when the library has no expert."""
    expert = next((t for t in library.tools if getattr(t, "name", "") == "expert"), None)
    if expert is None:
        return []
    return sorted(set(families) - set(getattr(expert, "references", {}) or {}))


def _builtin() -> None:
    from .composition import Composition
    from .expert import GenomicExpert
    from .homology import HomologyDatabase, HomologySearch
    from .motifs import MotifScan
    from .splice import SpliceAnalysis
    from .validate import MAX_LENGTH

    def ml(max_length):
        return max_length or MAX_LENGTH

    register_tool("composition", lambda max_length=None: Composition(ml(max_length)))
    register_tool("motif_scan", lambda max_length=None: MotifScan(max_length=ml(max_length)))
    register_tool("splice", lambda max_length=None: SpliceAnalysis(max_length=ml(max_length)))
    register_tool(
        "expert",
        lambda references=None, encoder=None, max_length=None: GenomicExpert(
            references or {}, encoder, max_length=ml(max_length)
        ),
    )
    register_tool(
        "homology",
        lambda database=None, max_length=None: HomologySearch(
            database or HomologyDatabase([], [], []), max_length=ml(max_length)
        ),
    )

    def lazy(module: str, cls: str):  # the larger library's tools import their packages when built
        def make(max_length=None):
            import importlib

            return getattr(importlib.import_module(f"{__package__}.{module}"), cls)(ml(max_length))

        make.__qualname__ = f"make_{cls}"
        return make

    for name, module, cls in EXTRA_TOOLS:
        register_tool(name, lazy(module, cls))

    def signature(references=None, max_length=None):  # noqa: ARG001 (the expert's references are not genomes)
        from .signature import GenomicSignature

        return GenomicSignature(default_signature_references(), ml(max_length))

    register_tool("signature", signature)


def default_signature_references() -> dict:
    """The genomic signature's references: the training share of each shipped genome (the
    splits cut every genome by position, so no test fragment lies in a reference) and the
    human training exons joined, by organism name."""
    from ..benchmarks.sources import exons_for_split, genome_region
    from ..data import GENOMES, genome

    refs = {}
    for org in GENOMES:
        g, region = genome(org), genome_region(org, "train")
        refs[org] = "N".join(g[a:b] for a, b in region.intervals)
    refs["Homo sapiens"] = "N".join(s for _, s in exons_for_split("train"))
    return refs


EXTRA_TOOLS = (
    ("genes", "genes", "GeneCalls"),
    ("cpg_islands", "cpg_islands", "CpGIslands"),
    ("low_complexity", "low_complexity", "LowComplexity"),
    ("thermo", "thermo", "Thermodynamics"),
    ("restriction", "restriction", "RestrictionSites"),
    ("profiles", "profiles", "ProfileScan"),
)
"""T6-T9, T11 and T12, the larger library's tools beyond the paper's five: (name, module, class);
T10, the genomic signature, is registered with its reference genomes."""


_builtin()
