"""The genomic tool library T1-T5 and the :class:`~fgpo_core.genomics.tools.library.ToolLibrary`
that runs and renders it.

The selector sees only slot indices ``0..n-1``; the library maps slots to tools,
runs every tool once per question (cached), and renders a subset's evidence as
the concatenation of its tools' titled blocks, in slot order. Rendering happens
here and in :func:`~fgpo_core.genomics.tools.base.render_block` only, so every method
and every reward-table row sees identical evidence for the same subset.
"""

from __future__ import annotations

from .base import Evidence, Tool, ToolInput, render_block
from .composition import Composition
from .expert import GenomicExpert, HFEncoder, KmerSpectrumEncoder, ReferenceSet
from .homology import HomologyDatabase, HomologySearch
from .library import MAIN_TOOL_NAMES, TOOL_NAMES, ToolLibrary
from .motifs import MotifScan
from .registry import (
    library_from_names,
    load_plugin,
    missing_references,
    references_from_file,
    references_from_rows,
    register_tool,
    registered_tools,
)
from .splice import SpliceAnalysis
from .validate import MAX_LENGTH, SequenceError, validate_sequence

__all__ = [
    "Evidence",
    "Tool",
    "ToolInput",
    "render_block",
    "ToolLibrary",
    "SequenceError",
    "validate_sequence",
    "Composition",
    "MotifScan",
    "SpliceAnalysis",
    "GenomicExpert",
    "HomologySearch",
    "HomologyDatabase",
    "ReferenceSet",
    "KmerSpectrumEncoder",
    "HFEncoder",
    "MAX_LENGTH",
    "TOOL_NAMES",
    "MAIN_TOOL_NAMES",
    "register_tool",
    "registered_tools",
    "library_from_names",
    "load_plugin",
    "references_from_rows",
    "references_from_file",
    "missing_references",
]
