"""Bring your own: policy-head selectors trained and scored on one's own questions and tools.

Given reward tables built with ``fgpo table build --questions FILE`` (one per split) and the
prompt features of the same questions (``fgpo features --questions NAME=FILE``), train any
methods of :mod:`fgpo_core.algorithms.head` over seeds and score their picks on the test
splits. The scores come back in the format of :func:`fgpo_core.reports.study.study_scores`
(``method, seed, suite, accuracy, tools, correct_vector``), so
:func:`~fgpo_core.reports.study.study_summary` and
:func:`~fgpo_core.reports.study.paired_tests` read them as they read a study.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Mapping, Sequence

import pandas as pd

from ..algorithms.head import HeadConfig, parse_method, train_head
from ..evaluation.picks import correct_of, summarise_picks

__all__ = ["head_scores"]


def head_scores(
    features,
    tables: Mapping,
    methods: Sequence[str] = ("fgpo", "grpo"),
    seeds: Sequence[int] = (0, 1, 2),
    train: str = "train",
    dev: str = "dev",
    tests: Sequence[str] = ("test",),
    progress: bool = False,
    **config,
) -> pd.DataFrame:
    """Train each method of ``methods`` (names as ``fgpo study`` takes them) with each seed on
    ``tables[train]`` (checkpoint chosen on ``tables[dev]``) and score the kept head's argmax
    on every suite of ``tests``. ``features`` is a :class:`~fgpo_core.selectors.features.FeatureSet`
    holding every split under the same names; ``config`` sets :class:`HeadConfig` fields
    (``epochs``, ``lr``, ...) for every method. One row per (method, seed, test suite), with
    the picks."""
    from tqdm.auto import tqdm

    known = ({f.name for f in fields(HeadConfig)} | {"beta", "G", "max_draws", "dpo_beta"}) - {"method", "seed"}
    bad = sorted(set(config) - known)
    if bad:
        raise ValueError(f"unknown HeadConfig field(s) {', '.join(bad)}; fields are {', '.join(sorted(known))}")
    splits = [train, dev, *tests]
    missing = [s for s in splits if s not in tables]
    if missing:
        raise ValueError(f"no table for split(s) {', '.join(missing)}; tables given: {', '.join(tables)}")
    n_tools = {tables[s].n_tools for s in splits}
    if len(n_tools) != 1:
        raise ValueError(f"the tables' libraries differ in size ({sorted(n_tools)} tools)")
    x = {s: features.rows(s, list(tables[s].question_ids)) for s in splits}
    specs = [parse_method(m) for m in methods]
    for spec in specs:
        if spec.n_train is not None or spec.drop_tool is not None:
            raise ValueError(f"{spec.name}: the run-level modifiers -n and -noT need `fgpo study`")
    rows = []
    bar = tqdm(total=len(specs) * len(seeds), desc="train heads", disable=not progress)
    for spec in specs:
        for seed in seeds:
            cfg = HeadConfig(method=spec.name, seed=int(seed), **config)  # train_head applies the name's modifiers
            run = train_head(x[train], tables[train], x[dev], tables[dev], cfg)
            for s in tests:
                t = tables[s]
                picks = run.q(x[s]).argmax(-1)
                rows.append(
                    {
                        "method": spec.name,
                        "seed": int(seed),
                        "suite": s,
                        "n": t.n_questions,
                        **summarise_picks(picks, t.correct, t.n_tools, t.tokens),
                        "correct_vector": correct_of(picks, t.correct),
                        "picks": picks,
                    }
                )
            bar.update()
    bar.close()
    return pd.DataFrame(rows)
