"""The method-name grammar of ``fgpo study``, generated from the estimator registry and one table
of modifiers.

A name is ``<base>[-<modifier>...]``: a base of :data:`~fgpo_core.core.registry.ESTIMATORS` (a
dial's prefix takes a number: ``fgpo-k4``, ``shortlist-top16``), then modifiers ``-<key><value>``
of :data:`MODIFIERS` (``fgpo-lambda0.05``, ``grpo-G16``, ``dpo-beta0.1``, ``fgpo-noT3``). Stages of
post-training are joined by ``+`` (``sft-e4+fgpo-e16``). The parser and its help text read the
same table, so a new modifier is one row.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .registry import ESTIMATORS, Estimator

__all__ = ["Modifier", "MODIFIERS", "METHODS", "ALL_METHODS", "MethodSpec", "parse_method", "parse_stages",
           "method_kind", "modifier_help"]

_NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"


@dataclass(frozen=True)
class Modifier:
    """One ``-<key><value>`` of a method name."""

    key: str
    field: str
    """The :class:`~fgpo_core.algorithms.head.HeadConfig` field it sets, or a run-level one (``run``)."""
    cast: type
    help: str
    bases: tuple = ()
    """The base names it applies to with this meaning (empty: every base without a row of its own)."""
    run: bool = False
    """A run-level modifier (the training data or the library), the caller's to apply."""


MODIFIERS = (
    Modifier("lr", "lr", float, "a fixed learning rate, outside the study's sweep"),
    Modifier("lambda", "lam", float, "Eq. 1's parsimony weight lambda"),
    Modifier("beta", "beta", float, "FGPO's entropy bonus"),
    Modifier("beta", "dpo_beta", float, "DPO's beta", bases=("dpo",)),
    Modifier("T", "temperature", float, "the listwise temperature of q"),
    Modifier("G", "G", int, "the group size of the sampled methods"),
    Modifier("h", "hidden", int, "hidden units of the head"),
    Modifier("e", "epochs", int, "epochs"),
    Modifier("n", "n_train", int, "only the first n training questions", run=True),
    Modifier("noT", "drop_tool", int, "the library without tool i (from 1), retrained on the restricted table",
             run=True),
)
"""Every modifier; a key may have one row per set of bases (DPO's ``-beta`` is its own key)."""

METHODS = tuple(n for e in ESTIMATORS.values() if e.in_study for n in e.names)
"""The method names of ``fgpo study``'s main comparison (a dial takes any number: ``fgpo-k<k>``)."""

ALL_METHODS = tuple(n for e in ESTIMATORS.values() for n in e.names)
"""Every registered estimator's example names, the worked example included."""

_KEYS = sorted({m.key for m in MODIFIERS}, key=len, reverse=True)
_PART = re.compile(f"({'|'.join(_KEYS)})" + _NUMBER)


def _modifier(key: str, base: str) -> Modifier:
    rows = [m for m in MODIFIERS if m.key == key]
    return next((m for m in rows if base in m.bases), None) or next(m for m in rows if not m.bases)


def modifier_help() -> str:
    """One line per modifier, from :data:`MODIFIERS`."""
    return "\n".join(f"-{m.key}<{m.cast.__name__}>: {m.help}" + (f" (for {', '.join(m.bases)})" if m.bases else "")
                     for m in MODIFIERS)


def _hint() -> str:
    dials = ", ".join(f"{e.dial}<n>" for e in ESTIMATORS.values() if e.dial)
    plain = ", ".join(e.name for e in ESTIMATORS.values() if not e.dial)
    return f"use one of {plain} or {dials}, optionally with modifiers " + " ".join(
        dict.fromkeys(f"-{m.key}<value>" for m in MODIFIERS))


@dataclass(frozen=True)
class MethodSpec:
    """A parsed method name: the family (``base``), its dial's number ``k``, the
    :class:`~fgpo_core.algorithms.head.HeadConfig` fields it overrides, the two run-level modifiers
    (training questions kept, tool dropped, 1-based) and its registry entry (``family``)."""

    name: str
    base: str
    k: int | None
    overrides: dict
    n_train: int | None = None
    drop_tool: int | None = None
    family: str = ""
    """The key of its :class:`~fgpo_core.core.registry.Estimator` (``fgpo-k`` for ``fgpo-k4``)."""

    @property
    def estimator(self) -> Estimator:
        return ESTIMATORS[self.family or self.base]

    def config(self, base):
        """``base`` (a :class:`~fgpo_core.algorithms.head.HeadConfig`) with this method's name and overrides."""
        return replace(base, method=self.name, **self.overrides)


def _match_base(method: str) -> tuple[Estimator | None, int | None, int]:
    """The estimator a name starts with, its dial's number and where the modifiers start."""
    for e in sorted((e for e in ESTIMATORS.values() if e.dial), key=lambda e: len(e.dial), reverse=True):
        m = re.match(re.escape(e.dial) + r"(\d+)(?=-|$)", method)
        if m:
            return e, int(m.group(1)), m.end()
    for e in sorted((e for e in ESTIMATORS.values() if not e.dial), key=lambda e: len(e.name), reverse=True):
        if method == e.name or method.startswith(e.name + "-"):
            return e, None, len(e.name)
    return None, None, 0


def parse_method(method: str) -> MethodSpec:
    """Parse ``<base>[-<modifier>...]`` (see the module docstring); a bad name raises ValueError."""
    if not isinstance(method, str):
        raise ValueError(f"a method name is a string, got {method!r}")
    est, k, end = _match_base(method)
    if est is None:
        raise ValueError(f"unknown method {method!r}; {_hint()}")
    if k is not None and k < 1:
        raise ValueError(f"{method!r}: the number of subsets per question must be at least 1")
    rest = method[end:]
    overrides, run = {}, {"n_train": None, "drop_tool": None}
    for part in [x for x in rest.split("-") if x]:
        mm = _PART.fullmatch(part)
        if not mm:
            raise ValueError(f"unknown modifier {part!r} in method {method!r}; {_hint()}")
        mod = _modifier(mm.group(1), est.base)
        if mod.cast is int and not mm.group(2).isdigit():
            raise ValueError(f"modifier -{mod.key} takes a whole number, got {part!r} in {method!r}")
        (run if mod.run else overrides)[mod.field] = mod.cast(mm.group(2))
    if run["n_train"] is not None and run["n_train"] < 1:
        raise ValueError(f"-n keeps at least one training question, got {method!r}")
    if run["drop_tool"] is not None and run["drop_tool"] < 1:
        raise ValueError(f"-noT names a tool from 1, got {method!r}")
    return MethodSpec(method, est.base, k, overrides, **run, family=est.name)


def parse_stages(method: str) -> list[MethodSpec]:
    """The stages of a ``+``-joined method (one stage for a plain method). The training data and
    the library (``-n``, ``-noT``) belong to the whole pipeline: only its first stage may set them."""
    if not isinstance(method, str) or not method:
        raise ValueError(f"a method name is a non-empty string, got {method!r}")
    stages = [parse_method(p) for p in method.split("+")]
    for st in stages[1:]:
        if st.n_train is not None or st.drop_tool is not None:
            raise ValueError(f"{method!r}: -n and -noT apply to the whole pipeline; put them on its first stage")
    return stages


def method_kind(method: str) -> tuple[str, int | None]:
    """``(family, k)`` of a method name: ``("fgpo", k)`` for the coverage dial, ``(shortlist, K)``
    for a shortlist, else ``(base, None)``; modifiers are allowed and ignored."""
    spec = parse_method(method)
    return spec.base, spec.k
