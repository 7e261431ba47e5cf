"""The method-name grammar of ``fgpo study``, generated from the estimator and regularizer
registries and one table of modifiers.

A name is ``<base>[-<modifier>...]``: a base of :data:`~fgpo_core.core.registry.ESTIMATORS` (a
dial's prefix takes a number: ``fgpo-k4``, ``shortlist-top16``), then modifiers ``-<key><value>``
of :data:`MODIFIERS` (``fgpo-lambda0.05``, ``grpo-G16``, ``dpo-beta0.1``, ``fgpo-noT3``). Stages of
post-training are joined by ``+`` (``sft-e4+fgpo-e16``).

Regularization is its own axis: ``-ent<w>`` (entropy bonus), ``-klu<w>`` (KL to uniform),
``-klr<w>`` (KL to the reference policy, the policy at the start of training) or ``-noreg`` give
any estimator a regularizer of :data:`~fgpo_core.core.regularizers.REGULARIZERS` (``grpo-ent0.03``,
``rloo-klu0.05``, ``fgpo-noreg``); ``-beta<w>`` is ``-ent<w>`` (the paper's beta) for every
estimator but ``dpo``, where it is DPO's beta. Without one, an estimator trains with its own
default (exact FGPO, the coverage dial and the shortlists: ``ent`` 0.03; the others: none;
``rloo-kl`` is ``rloo-klu0.05``). A name ending in a modifier its base does not read but a
registered ``<base>-<key>`` does is that estimator (``grpo-clip0.1`` is ``grpo-clip`` at clip 0.1).

Each modifier declares the field it sets and who reads it; a modifier no part of the method reads
(``fgpo-G16``: exact FGPO draws no group; ``grpo-lambda0``: GRPO trains on the differential reward)
is refused with a one-line ValueError, as is a second regularizer. The parser and
:func:`grammar_help` (``fgpo study --help``) read the same tables, so a new modifier is one row and
a new estimator or regularizer appears in both with no edit here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

from .registry import ESTIMATORS, Estimator
from .regularizers import REGULARIZERS
from .settings import EstimatorSettings

__all__ = [
    "Modifier",
    "MODIFIERS",
    "METHODS",
    "ALL_METHODS",
    "MethodSpec",
    "parse_method",
    "parse_stages",
    "method_kind",
    "modifier_help",
    "grammar_help",
]

_NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"
_SETTINGS = {f.name for f in fields(EstimatorSettings)}


@dataclass(frozen=True)
class Modifier:
    """One ``-<key><value>`` of a method name: the field it sets and who reads it."""

    key: str
    field: str
    """The field it sets: of :class:`~fgpo_core.algorithms.head.HeadConfig`, of
    :class:`~fgpo_core.core.settings.EstimatorSettings`, a run-level one (``run``), or, for a
    regularizer modifier, its key in ``MethodSpec.overrides`` (``beta``: the entropy weight)."""
    cast: type | None
    """The value's type (None: the modifier takes no value, ``-noreg``)."""
    help: str
    bases: tuple = ()
    """The base names it applies to with this meaning (empty: every base without a row of its own)."""
    run: bool = False
    """A run-level modifier (the training data or the library), the caller's to apply."""
    read_by: str = "every"
    """Who reads it: ``every`` estimator (the head, the loop), the estimators that train on ``eq1``
    rewards (``differential``: on the differential reward), the estimators whose ``reads`` name its
    ``field`` (``reads``), or a ``regularizer``."""
    regularizer: str | None = None
    """For a regularizer modifier: the regularizer it selects."""
    const: object = True
    """The value a modifier without a value sets (``-eq1``: the reward ``eq1``)."""

    def readers(self) -> list[str]:
        """The base names that read it."""
        if self.read_by == "reads":
            return [n for n, e in ESTIMATORS.items() if self.field in e.reads]
        if self.read_by in ("eq1", "differential"):
            return [n for n, e in ESTIMATORS.items() if e.reward == self.read_by]
        return [n for n, e in ESTIMATORS.items() if n not in self.excluded()]

    def excluded(self) -> tuple:
        """Bases with a row of their own for this key (DPO's ``-beta``)."""
        return tuple(b for m in MODIFIERS if m.key == self.key and m is not self for b in m.bases)

    def reads(self, est: Estimator) -> bool:
        return est.name in self.readers() if self.read_by != "regularizer" else True


MODIFIERS = (
    Modifier("lr", "lr", float, "a fixed learning rate, outside the study's sweep"),
    Modifier(
        "lambda", "lam", float, "Eq. 1's parsimony weight lambda (the estimators on Eq. 1 rewards)", read_by="eq1"
    ),
    Modifier("beta", "dpo_beta", float, "DPO's beta", bases=("dpo",), read_by="reads"),
    Modifier(
        "beta",
        "beta",
        float,
        "the entropy bonus's weight, as -ent (the paper's beta)",
        read_by="regularizer",
        regularizer="ent",
    ),
    Modifier(
        "ent", "beta", float, "regularizer: entropy bonus of this weight", read_by="regularizer", regularizer="ent"
    ),
    Modifier(
        "klu", "klu", float, "regularizer: KL(q || uniform) of this weight", read_by="regularizer", regularizer="klu"
    ),
    Modifier(
        "klr",
        "klr",
        float,
        "regularizer: KL(q || reference policy) of this weight (the policy at the start of training)",
        read_by="regularizer",
        regularizer="klr",
    ),
    Modifier("noreg", "noreg", None, "regularizer: none", read_by="regularizer", regularizer="none"),
    Modifier(
        "eq1",
        "reward",
        None,
        "train on Eq. 1's reward instead of the differential one",
        read_by="differential",
        const="eq1",
    ),
    Modifier("T", "temperature", float, "the listwise temperature of q"),
    Modifier("G", "G", int, "the group size of the sampled methods", read_by="reads"),
    Modifier("clip", "clip", float, "the clip range epsilon of a clipped ratio", read_by="reads"),
    Modifier("u", "updates", int, "optimiser updates per draw (TRL's num_iterations)"),
    Modifier("h", "hidden", int, "hidden units of the head"),
    Modifier("e", "epochs", int, "epochs"),
    Modifier("n", "n_train", int, "only the first n training questions", run=True),
    Modifier(
        "noT", "drop_tool", int, "the library without tool i (from 1), retrained on the restricted table", run=True
    ),
)
"""Every modifier; a key may have one row per set of bases (DPO's ``-beta`` is its own row)."""

_REGULARIZER_KEYS = {m.field: m.regularizer for m in MODIFIERS if m.regularizer}
"""``MethodSpec.overrides`` keys of the regularizer modifiers and the regularizer each selects."""

METHODS = tuple(n for e in ESTIMATORS.values() if e.in_study for n in e.names)
"""The method names of ``fgpo study``'s main comparison (a dial takes any number: ``fgpo-k<k>``)."""

ALL_METHODS = tuple(n for e in ESTIMATORS.values() for n in e.names)
"""Every registered estimator's example names, the worked examples included."""

_KEYS = sorted({m.key for m in MODIFIERS}, key=len, reverse=True)
_PART = re.compile(f"({'|'.join(_KEYS)})" + _NUMBER + "?")


def _modifier(key: str, base: str) -> Modifier:
    rows = [m for m in MODIFIERS if m.key == key]
    return next((m for m in rows if base in m.bases), None) or next(m for m in rows if not m.bases)


def modifier_help() -> str:
    """One line per modifier, from :data:`MODIFIERS`, with the estimators that read it."""
    lines = []
    for m in MODIFIERS:
        arg = f"<{m.cast.__name__}>" if m.cast else ""
        who = (
            "any estimator"
            if m.read_by == "regularizer"
            else "every estimator"
            if m.read_by == "every" and not m.excluded()
            else ", ".join(m.readers())
        )
        lines.append(f"  -{m.key}{arg}: {m.help} (read by {who})")
    return "\n".join(lines)


def grammar_help() -> str:
    """The method-name grammar for ``fgpo study --help``: every estimator, regularizer and modifier."""
    from .registry import resolve_regularizer

    est = []
    for e in ESTIMATORS.values():
        reg, w = resolve_regularizer(e, EstimatorSettings())
        name = f"{e.dial}<n>" if e.dial else e.name
        reads = f"; reads {', '.join(e.reads)}" if e.reads else ""
        est.append(
            f"  {name}: {e.label.format('n')} ({e.kind}, {e.reward} reward, regularizer {reg.name}"
            + (f" {w:g}" if reg.penalty else "")
            + f"{reads})"
        )
    regs = [
        f"  {r.name}: {r.label}" + (f" (default weight {r.weight:g})" if r.penalty else "")
        for r in REGULARIZERS.values()
    ]
    return "\n".join(
        [
            "method names: <estimator>[-<modifier>...], stages of post-training joined by '+'",
            "estimators:",
            *est,
            "regularizers (any estimator composes with any, by a modifier):",
            *regs,
            "modifiers:",
            modifier_help(),
        ]
    )


def _hint() -> str:
    dials = ", ".join(f"{e.dial}<n>" for e in ESTIMATORS.values() if e.dial)
    plain = ", ".join(e.name for e in ESTIMATORS.values() if not e.dial)
    return f"use one of {plain} or {dials}, optionally with modifiers " + " ".join(
        dict.fromkeys(f"-{m.key}" + ("<value>" if m.cast else "") for m in MODIFIERS)
    )


@dataclass(frozen=True)
class MethodSpec:
    """A parsed method name: the family (``base``), its dial's number ``k``, the fields it
    overrides (``overrides``: HeadConfig and EstimatorSettings fields by name, a regularizer by
    its key, ``beta`` for the entropy bonus), the two run-level modifiers (training questions
    kept, tool dropped, 1-based) and its registry entry (``family``)."""

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

    def settings(self, base: EstimatorSettings | None = None) -> EstimatorSettings:
        """``base`` settings with this name's: its dial's ``k``, its settings modifiers, its regularizer."""
        base = base or EstimatorSettings()
        over = {k: v for k, v in self.overrides.items() if k in _SETTINGS}
        for key, reg in _REGULARIZER_KEYS.items():
            if key in self.overrides:
                over |= {"regularizer": reg, "weight": None if reg == "none" else self.overrides[key]}
        if self.k is not None:
            over["k"] = self.k
        return replace(base, **over)

    def config(self, base):
        """``base`` (a :class:`~fgpo_core.algorithms.head.HeadConfig`) with this method's name,
        head overrides and settings."""
        head = {k: v for k, v in self.overrides.items() if k not in _SETTINGS and k not in _REGULARIZER_KEYS}
        return replace(base, method=self.name, settings=self.settings(base.settings), **head)


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


def _refuse_unread(method: str, est: Estimator, mod: Modifier, seen: dict) -> None:
    """Refuse a modifier no part of ``method`` reads, a second regularizer, a key given twice."""
    if mod.key in seen:
        raise ValueError(f"{method!r} gives -{mod.key} twice")
    if not mod.reads(est):
        who = ", ".join(mod.readers()) or "no estimator"
        raise ValueError(f"{method!r}: -{mod.key} ({mod.help}) is not read by {est.name}; it is read by {who}")
    if mod.regularizer is not None:
        other = next((m for m in seen.values() if m.regularizer is not None), None)
        if other is not None:
            raise ValueError(f"{method!r} gives two regularizers (-{other.key}, -{mod.key}); give one")
        if est.composes and mod.regularizer != est.regularizer:
            raise ValueError(
                f"{method!r}: {est.name} is {est.composes} with the regularizer {est.regularizer}; "
                f"for another regularizer name {est.composes}-{mod.key}" + ("<w>" if mod.cast else "")
            )


def _value(method: str, mod: Modifier, part: str, value: str | None):
    if mod.cast is None:
        if value is not None:
            raise ValueError(f"modifier -{mod.key} takes no value, got {part!r} in {method!r}")
        return mod.const
    if value is None:
        raise ValueError(f"modifier -{mod.key} takes a value, got {part!r} in {method!r}")
    if mod.cast is int and not value.isdigit():
        raise ValueError(f"modifier -{mod.key} takes a whole number, got {part!r} in {method!r}")
    v = mod.cast(value)
    if (
        (mod.field in ("updates", "epochs") and v < 1)
        or (mod.field == "G" and v < 2)
        or (mod.field in ("clip", "temperature") and not v > 0)
    ):
        raise ValueError(f"{method!r}: -{mod.key} must be {'at least 2' if mod.field == 'G' else 'positive'}")
    return v


def parse_method(method: str) -> MethodSpec:
    """Parse ``<base>[-<modifier>...]`` (see the module docstring); a bad name, or a modifier no
    part of the method reads, raises a one-line ValueError."""
    if not isinstance(method, str):
        raise ValueError(f"a method name is a string, got {method!r}")
    est, k, end = _match_base(method)
    if est is None:
        raise ValueError(f"unknown method {method!r}; {_hint()}")
    if k is not None and k < 1:
        raise ValueError(f"{method!r}: the number of subsets per question must be at least 1")
    overrides, run, seen = {}, {"n_train": None, "drop_tool": None}, {}
    for part in [x for x in method[end:].split("-") if x]:
        mm = _PART.fullmatch(part)
        if not mm:
            raise ValueError(f"unknown modifier {part!r} in method {method!r}; {_hint()}")
        mod = _modifier(mm.group(1), est.base)
        if not mod.reads(est) and not seen and f"{est.name}-{mod.key}" in ESTIMATORS:
            est = ESTIMATORS[f"{est.name}-{mod.key}"]  # grpo-clip0.1: the estimator grpo-clip at clip 0.1
            mod = _modifier(mm.group(1), est.base)
        _refuse_unread(method, est, mod, seen)
        seen[mod.key] = mod
        (run if mod.run else overrides)[mod.field] = _value(method, mod, part, mm.group(2))
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
