"""The :class:`ToolLibrary`: ordered tool slots, one run per question, and the one evidence renderer.

The selector sees only slot indices ``0..n-1``; the library maps slots to tools,
runs every tool once per question (cached), and renders a subset's evidence as
the concatenation of its tools' titled blocks, in slot order. Rendering happens
here and in :func:`~fgpo_core.genomics.tools.base.render_block` only, so every method
and every reward-table row sees identical evidence for the same subset.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Mapping, Sequence

from ...core.subsets import ActionSpace
from .base import Evidence, Tool, ToolInput, check_evidence, render_block
from .composition import Composition
from .expert import GenomicExpert, ReferenceSet
from .homology import HomologyDatabase, HomologySearch
from .motifs import MotifScan
from .splice import SpliceAnalysis
from .validate import MAX_LENGTH

__all__ = ["TOOL_NAMES", "MAIN_TOOL_NAMES", "ToolLibrary"]

TOOL_NAMES = ("composition", "motif_scan", "splice", "expert", "homology")
"""T1..T5 in the paper's order."""

_MAIN = (Composition, MotifScan, SpliceAnalysis, GenomicExpert)
MAIN_TOOL_NAMES = tuple(t.name for t in _MAIN)
"""The tools of the paper's main library (:meth:`ToolLibrary.main`), in slot order: what a selector
trained with named tools is told."""


class ToolLibrary:
    """Ordered tool slots, one run per question, and the one evidence renderer."""

    def __init__(self, tools: Sequence[Tool], cache_size: int = 4096):
        if not tools:
            raise ValueError("a tool library needs at least one tool")
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tool names must be distinct, got {names}")
        self.tools = list(tools)
        self.space = ActionSpace(len(tools))
        self._cache: OrderedDict = OrderedDict()
        self.cache_size = cache_size
        self.calls = {t.name: 0 for t in tools}

    # -- construction --------------------------------------------------------
    @classmethod
    def main(
        cls, references: Mapping[str, ReferenceSet] | None = None, encoder=None, max_length: int = MAX_LENGTH
    ) -> "ToolLibrary":
        """The paper's four-tool library: T1 composition, T2 motif scan, T3 splice, T4 expert."""
        return cls(
            [
                Composition(max_length),
                MotifScan(max_length=max_length),
                SpliceAnalysis(max_length=max_length),
                GenomicExpert(references or {}, encoder, max_length=max_length),
            ]
        )

    @classmethod
    def five(
        cls,
        references: Mapping[str, ReferenceSet] | None = None,
        database: HomologyDatabase | None = None,
        encoder=None,
        max_length: int = MAX_LENGTH,
    ) -> "ToolLibrary":
        """The five-tool stress-test library: the main four plus T5 homology search."""
        lib = cls.main(references, encoder, max_length)
        db = database or HomologyDatabase([], [], [])
        return cls(lib.tools + [HomologySearch(db, max_length=max_length)])

    # -- views ---------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    @property
    def n_tools(self) -> int:
        return len(self.tools)

    def versions(self) -> dict[str, str]:
        return {t.name: t.version for t in self.tools}

    def slots(self) -> list[str]:
        """What the selector is shown of this library: anonymous slots ``0: type1 (A)`` ..."""
        from ...selectors.prompt import anonymous_slots

        return anonymous_slots(self.n_tools)

    # -- running and rendering -------------------------------------------------
    def run(self, inp: ToolInput, key: str | None = None) -> list[Evidence]:
        """Every tool's evidence for one question, in slot order; cached under ``key``
        (default: the question id) so a question's tools run once."""
        key = key if key is not None else inp.question_id
        if key is not None and key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        evs = []
        for t in self.tools:
            try:
                ev = t.run(inp)
            except SystemExit as exc:  # a tool may not end the command (a plugin's sys.exit)
                raise ValueError(
                    f"tool {t.name!r} called sys.exit({exc.code!r}) on question {inp.question_id or '(no id)'}"
                ) from None
            check_evidence(ev, t.name, list(inp.sequences))
            evs.append(ev)
            self.calls[t.name] += 1
        if key is not None:
            self._cache[key] = evs
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return evs

    def render(self, evidences: Sequence[Evidence], mask: int) -> str:
        """The evidence text of subset ``mask``: its tools' blocks in slot order, separated
        by a blank line; the empty string for the empty subset."""
        if len(evidences) != self.n_tools:
            raise ValueError(f"expected {self.n_tools} evidence blocks, got {len(evidences)}")
        return "\n\n".join(render_block(evidences[t]) for t in self.space.tools(mask))

    def evidence(self, inp: ToolInput, mask: int, key: str | None = None) -> str:
        return self.render(self.run(inp, key), mask)
