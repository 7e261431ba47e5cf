"""New estimators beside the main policy-head study: studies trained with the main study's
settings on one more method each (``fgpo study --methods rloo-kl``), read on the main study's
test questions, so that a newly registered estimator reaches the head-study chapter by naming its
study folder and nothing else.

Everything a chapter shows of such a method comes from the estimator registry
(:data:`fgpo_core.core.registry.ESTIMATORS`): its label and colour, the loss it trains with and
the ``register(...)`` call that adds it. Gaps are read by the book's rule, the two-level paired
bootstrap (:func:`fgpo_core.reports.fair.fair_comparisons`).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import registry
from ..core.method_names import parse_method
from ..core.registry import Estimator
from ..experiments.domains import split_masks
from ..experiments.study import Study, load_study
from ..table import RewardTable
from .fair import fair_comparisons

__all__ = [
    "SAME",
    "estimator_of",
    "extra_gaps",
    "extra_pairs",
    "extra_studies",
    "findings",
    "gap_table",
    "last_epoch",
    "new_estimators",
    "pooled_correct",
    "registration",
    "settings_differ",
    "split_accuracy",
]


def extra_studies(folders: str) -> dict[str, Study]:
    """Method name -> its study, for every method of each finished study among the comma-separated
    ``folders`` (a folder without a ``manifest.json`` is skipped; empty: none). A method met in two
    folders is an error."""
    out: dict[str, Study] = {}
    for folder in filter(None, (f.strip() for f in str(folders or "").split(","))):
        if not (Path(folder) / "manifest.json").exists():
            continue
        study = load_study(folder)
        for m in dict.fromkeys(study.picks.method):
            if m in out:
                raise ValueError(f"method {m} is in two of the extra studies ({folder} and another)")
            out[m] = study
    return out


SAME = (
    "seeds",
    "lrs",
    "epochs",
    "hidden",
    "temperature",
    "lam",
    "G",
    "max_draws",
    "table_dir",
    "features_dir",
    "bench_dir",
    "suites",
    "n_train",
    "n_dev",
    "n_test",
    "keep",
)
"""The study settings a new method's study shares with the main study (its manifest's ``config``)."""


def settings_differ(main: Study, study: Study, keys: Sequence[str] = SAME) -> list[str]:
    """The settings of :data:`SAME` (and the questions trained and tested on) in which ``study``
    differs from ``main``; empty when it was trained as the main study's methods were."""
    a, b = main.manifest["config"], study.manifest["config"]
    out = [k for k in keys if a.get(k) != b.get(k)]
    if main.manifest.get("n_questions") != study.manifest.get("n_questions"):
        out.append("n_questions")
    return out


def estimator_of(method: str) -> Estimator:
    """The registered estimator a method name trains with (its last stage's)."""
    return parse_method(method.split("+")[-1]).estimator


def registration(name: str) -> str:
    """The source of the ``register(Estimator("<name>", ...))`` call that adds the estimator
    ``name`` to the registry, read from the registry module itself."""
    src = inspect.getsource(registry)
    lines = src.splitlines()
    for node in ast.parse(src).body:
        call = node.value if isinstance(node, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and getattr(call.func, "id", None) == "register"
            and call.args
            and isinstance(call.args[0], ast.Call)
            and call.args[0].args
            and isinstance(call.args[0].args[0], ast.Constant)
            and call.args[0].args[0].value == name
        ):
            return "\n".join(lines[node.lineno - 1 : node.end_lineno])
    raise ValueError(f"no register(...) call of the estimator {name!r} in {registry.__name__}")


def new_estimators(methods: Sequence[str]) -> list[Estimator]:
    """The estimators ``methods`` train with, each once, in order."""
    return list({estimator_of(m).name: estimator_of(m) for m in methods}.values())


def pooled_correct(
    main: Study,
    tables: Mapping[str, RewardTable],
    suites: Sequence[str],
    studies: Mapping[str, Study],
    ref: str = "fgpo",
):
    """Seed by seed, whether each method's pick is right on each test question of ``suites``
    pooled: the questions the main study's ``ref`` picked for and the tables hold, in its order.
    ``studies``: method -> the study holding it (the main study's methods and the extra ones).
    Returns ``(ids, correct, suite_of, family_of)``: suite -> question ids; method -> ``[seeds, Q]``
    bool; each pooled question's suite and family."""
    ids = {}
    for s in suites:
        q = np.asarray(main.pick_matrix(s, ref)[0])
        ids[s] = q[tables[s].contains(q)]
    correct = {}
    for m, study in studies.items():
        per_suite = []
        for s, keep in ids.items():
            all_ids, picks = study.pick_matrix(s, m)
            pos = pd.Index(all_ids).get_indexer(keep)
            if (pos < 0).any():
                raise ValueError(f"{m}'s study has no picks for {int((pos < 0).sum())} of the {s} questions")
            c = tables[s].select(keep).correct
            per_suite.append(c[np.arange(len(keep))[None, :], picks[:, pos]])
        correct[m] = np.concatenate(per_suite, axis=1).astype(bool)
    suite_of = np.concatenate([[s] * len(ids[s]) for s in ids])
    family_of = np.concatenate([np.asarray(tables[s].select(ids[s]).family) for s in ids])
    return ids, correct, suite_of, family_of


def split_accuracy(
    correct: Mapping[str, np.ndarray], masks: Mapping[str, np.ndarray], sd: bool = False
) -> pd.DataFrame:
    """Accuracy (%) of each method on each split (``masks``: split -> bool over the pooled
    questions): the mean over seeds, or with ``sd`` the standard deviation of the seeds'
    accuracies (0 for one seed)."""

    def one(c, mask):
        per_seed = 100.0 * c[:, mask].mean(1)
        return float(per_seed.std(ddof=1)) if sd and len(per_seed) > 1 else 0.0 if sd else float(per_seed.mean())

    return pd.DataFrame({k: {m: one(c, mask) for m, c in correct.items()} for k, mask in masks.items()})


def extra_pairs(new: Sequence[str], shown: Sequence[str], ref: str = "fgpo", sampled: str = "grpo") -> dict:
    """The comparisons of each new method: against ``ref`` (the exact objective), ``sampled``
    (the reference sampled estimator) and, for a named composition, the estimator it reuses
    (``rloo-kl`` against ``rloo``), each where ``shown`` holds it. ``{"<new> - <other>": (new, other)}``."""
    pairs = {}
    for m in new:
        base = estimator_of(m).composes
        for other in dict.fromkeys([ref, sampled] + ([base] if base else [])):
            if other in shown and other != m:
                pairs[f"{m} - {other}"] = (m, other)
    return pairs


def extra_gaps(
    correct: Mapping[str, np.ndarray],
    pairs: Mapping[str, tuple],
    tables: Mapping[str, RewardTable],
    ids: Mapping[str, np.ndarray],
    train_families: set[str],
    suite_of,
    family_of,
    resamples: int = 4000,
) -> pd.DataFrame:
    """The gaps of ``pairs`` (:func:`extra_pairs`, points) pooled, in domain and out of domain (the
    chapter's split, :func:`~fgpo_core.experiments.domains.split_masks`), each with its bootstrap
    interval (strata: suite x family) and Holm over them all; long frame as
    :func:`~fgpo_core.reports.fair.fair_comparisons`."""
    in_domain = split_masks(tables, ids, train_families)["in domain"]
    return fair_comparisons(correct, pairs, suite_of, family_of, in_domain, resamples=resamples)


def _signed(x: float) -> str:
    """``+1.2``; a value that rounds to zero reads ``+0.0``, never ``-0.0``."""
    return f"{round(float(x), 1) + 0.0:+.1f}"


def gap_table(gaps: pd.DataFrame, label=str) -> pd.DataFrame:
    """One row per comparison ("<new> − <other>", by ``label``), one column per split: the gap
    with its interval and verdict (``+1.2 [-0.3, +2.6], undecided``)."""
    cell = gaps.assign(
        text=[
            f"{_signed(g)} [{_signed(lo)}, {_signed(hi)}], {v}"
            for g, lo, hi, v in zip(gaps.gap, gaps.low, gaps.high, gaps.verdict)
        ],
        comparison=[f"{label(a)} − {label(b)}" for a, b in zip(gaps.a, gaps.b)],
    )
    out = cell.pivot(index="comparison", columns="split", values="text")
    order = list(dict.fromkeys(cell.comparison))
    return out.reindex(order)[[s for s in ("pooled", "in domain", "out of domain") if s in out.columns]]


def findings(acc: pd.DataFrame, gaps: pd.DataFrame, new: Sequence[str], label=str) -> str:
    """What the numbers say of each new method, one sentence each: its accuracy pooled, in domain
    and out of domain (``acc``, :func:`split_accuracy`) and its pooled gaps (``gaps``,
    :func:`extra_gaps`) with their intervals and verdicts."""
    out = []
    for m in new:
        a = acc.loc[m]
        g = gaps[(gaps.a == m) & (gaps.split == "pooled")]
        vs = "; ".join(
            f"minus {label(b)} {_signed(gap)} points [{_signed(lo)}, {_signed(hi)}], {v}"
            for b, gap, lo, hi, v in zip(g.b, g.gap, g.low, g.high, g.verdict)
        )
        out.append(
            f"{label(m)} scores {a['pooled']:.1f}% over all test questions ({a['in domain']:.1f}% in domain, "
            f"{a['out of domain']:.1f}% out of domain)" + (f"; pooled, {vs}." if vs else ".")
        )
    return " ".join(out)


def last_epoch(studies: Mapping[str, Study], epochs: int, columns=("dead_observed", "entropy")) -> pd.DataFrame:
    """Per method (sampled ones: those whose curves carry ``dead_observed``), the mean of
    ``columns`` over its last epoch of training, all seeds."""
    rows = {}
    for m, study in studies.items():
        c = study.curves[study.curves.method == m]
        if not len(c) or c[list(columns)].isna().all().any():
            continue
        c = c[c.step > c.step.max() * (epochs - 1) / epochs]
        rows[m] = {k: float(c[k].mean()) for k in columns}
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(columns))
