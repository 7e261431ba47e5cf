"""The action space: every subset of an ``n``-tool library.

A subset ``a`` is stored as a bitmask (bit ``i`` set means tool slot ``i`` is
selected), so the ``2**n`` actions are the integers ``0 .. 2**n - 1`` and the
empty subset is ``0``. The selector writes a subset as a policy string,
``<answer>0,2</answer>``; an empty ``<answer></answer>`` selects no tool.

Parsing never raises on model output: a completion that cannot be read is a
*format failure* with a reason, which training and evaluation count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

import numpy as np

__all__ = ["ActionSpace", "ParsedAction", "FORMAT_FAILURE", "MAX_TOOLS"]

MAX_TOOLS = 12
"""The largest library an action space enumerates (4,096 subsets, the chapter "Past enumeration")."""

FORMAT_FAILURE = -1
"""The mask recorded for a completion that does not parse: a format failure (counted as wrong
and as zero tools wherever picks are scored)."""

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


@dataclass(frozen=True)
class ParsedAction:
    """Result of reading a policy completion.

    ``mask`` is the selected subset, or :data:`FORMAT_FAILURE` (-1) for a format failure, in
    which case ``error`` says why.
    """

    mask: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.mask != FORMAT_FAILURE


@dataclass(frozen=True)
class ActionSpace:
    """All ``2**n_tools`` subsets of a tool library with ``n_tools`` slots."""

    n_tools: int

    def __post_init__(self) -> None:
        if not isinstance(self.n_tools, (int, np.integer)) or isinstance(self.n_tools, bool):
            raise TypeError(f"n_tools must be an int, got {type(self.n_tools).__name__}")
        if not 1 <= self.n_tools <= MAX_TOOLS:
            raise ValueError(f"n_tools must be between 1 and {MAX_TOOLS} (2**n actions), got {self.n_tools}")

    # -- sizes ---------------------------------------------------------------
    @property
    def n_actions(self) -> int:
        return 1 << self.n_tools

    def __len__(self) -> int:
        return self.n_actions

    def __iter__(self):
        return iter(range(self.n_actions))

    def _check_mask(self, mask: int) -> int:
        if not isinstance(mask, (int, np.integer)) or isinstance(mask, bool):
            raise TypeError(f"a subset mask must be an int, got {type(mask).__name__}")
        if not 0 <= mask < self.n_actions:
            raise ValueError(f"mask {mask} is outside 0..{self.n_actions - 1} for {self.n_tools} tools")
        return int(mask)

    # -- conversions ---------------------------------------------------------
    def tools(self, mask: int) -> tuple[int, ...]:
        """Tool slots in a subset, ascending: ``tools(0b101) == (0, 2)``."""
        mask = self._check_mask(mask)
        return tuple(i for i in range(self.n_tools) if mask >> i & 1)

    def mask(self, tools: Iterable[int]) -> int:
        """Bitmask of a collection of tool slots; duplicates are an error."""
        out = 0
        for t in tools:
            if not isinstance(t, (int, np.integer)) or isinstance(t, bool):
                raise TypeError(f"tool slots are ints, got {t!r}")
            if not 0 <= t < self.n_tools:
                raise ValueError(f"tool slot {t} is outside 0..{self.n_tools - 1}")
            if out >> t & 1:
                raise ValueError(f"tool slot {t} appears twice")
            out |= 1 << int(t)
        return out

    def size(self, mask: int) -> int:
        """|a|, the number of tools in the subset."""
        return bin(self._check_mask(mask)).count("1")

    @cached_property
    def sizes(self) -> np.ndarray:
        """|a| for every action, shape ``[2**n]``."""
        return np.array([bin(m).count("1") for m in range(self.n_actions)], dtype=np.int64)

    @cached_property
    def membership(self) -> np.ndarray:
        """Boolean ``[2**n, n]``: ``membership[a, t]`` is True when tool t is in a."""
        m = np.arange(self.n_actions)[:, None]
        return (m >> np.arange(self.n_tools)[None, :] & 1).astype(bool)

    def label(self, mask: int, names: Sequence[str] | None = None) -> str:
        """Human label: ``"T1+T3"`` (1-based, as the paper writes), or ``"none"``."""
        tools = self.tools(mask)
        if not tools:
            return "none"
        if names is None:
            names = [f"T{i + 1}" for i in range(self.n_tools)]
        return "+".join(names[t] for t in tools)

    def labels(self, names: Sequence[str] | None = None) -> list[str]:
        return [self.label(m, names) for m in range(self.n_actions)]

    # -- policy strings ------------------------------------------------------
    def to_string(self, mask: int) -> str:
        """Canonical policy string: ``<answer>0,2</answer>``, ascending, no spaces."""
        return "<answer>" + ",".join(str(t) for t in self.tools(mask)) + "</answer>"

    def candidate_strings(self) -> list[str]:
        """The policy strings of all ``2**n`` actions, indexed by mask."""
        return [self.to_string(m) for m in range(self.n_actions)]

    def parse(self, completion: str) -> ParsedAction:
        """Read a subset from a completion; never raises on malformed text.

        The first ``<answer>...</answer>`` span is read. Inside it, slot indices
        are separated by commas (spaces allowed) in any order. A missing tag,
        a non-integer, an out-of-range or repeated index is a format failure.
        """
        if not isinstance(completion, str):
            return ParsedAction(FORMAT_FAILURE, f"completion is {type(completion).__name__}, not str")
        m = _ANSWER.search(completion)
        if m is None:
            return ParsedAction(FORMAT_FAILURE, "no <answer>...</answer> span")
        body = m.group(1).strip()
        if body == "":
            return ParsedAction(0)
        out = 0
        for part in body.split(","):
            part = part.strip()
            if not re.fullmatch(r"\d+", part):
                return ParsedAction(FORMAT_FAILURE, f"not a tool index: {part!r}")
            t = int(part)
            if t >= self.n_tools:
                return ParsedAction(FORMAT_FAILURE, f"tool index {t} is outside 0..{self.n_tools - 1}")
            if out >> t & 1:
                return ParsedAction(FORMAT_FAILURE, f"tool index {t} repeated")
            out |= 1 << t
        return ParsedAction(out)
