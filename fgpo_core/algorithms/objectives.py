"""The language-model selector's training objectives, one table: each objective's config class and
its ``train(selector, data, config, out) -> result``.

``fgpo train --objective X`` reads its flags from ``X``'s config class and
:func:`fgpo_core.experiments.run.train_run` calls ``X``'s ``train``; the result is what the run's
manifest records besides the setup (the step and dev logs, the kept step, the reward evaluations,
or the imitation objectives' log). Adding an objective is one :class:`Objective` in
:data:`OBJECTIVES`. Training modules are imported when an objective runs, not before.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

__all__ = ["TrainData", "Objective", "OBJECTIVES", "objective"]


@dataclass(frozen=True)
class TrainData:
    """The questions an objective trains and selects on, and their reward tables' rows."""

    train_qs: list
    train_table: Any
    dev_qs: list
    dev_table: Any


@dataclass(frozen=True)
class Objective:
    """One training objective of the LM selector."""

    name: str
    config_path: str
    """``module:Class`` of its config dataclass (its ``fgpo train`` flags)."""
    train: Callable[..., dict]
    """``train(selector, data, config, out, progress=True) -> result``: trains ``selector`` in place,
    checkpoints under ``out``, and returns the manifest's record of the run."""

    def config_class(self) -> type:
        mod, name = self.config_path.split(":")
        return getattr(importlib.import_module(mod), name)


def _logs(res) -> dict:
    return {"steps": res.steps.to_dict("records"), "dev": res.dev.to_dict("records"), "best_step": res.best_step}


def _fgpo(selector, data: TrainData, config, out: Path, progress: bool = True) -> dict:
    from ..evaluation.picks import evaluate_dev
    from .fgpo import train_fgpo, training_reward
    from .methods import resolve_method

    est = resolve_method(config.method, config.settings)[0]
    res = train_fgpo(
        selector,
        data.train_qs,
        data.train_table.rewards(training_reward(config)),
        data.dev_qs,
        data.dev_table.rewards("eq1"),
        data.dev_table.correct,
        config,
        out_dir=out,
        progress=progress,
        evaluate=evaluate_dev,
        restore_best=True,
    )  # the kept head: the best dev step's parameters
    # FGPO reads the table's rows, built beforehand (0, as every committed FGPO run records); a sampled
    # estimator's look-ups are its draws
    return {**_logs(res), "reward_evaluations": 0 if est.kind == "exact" else res.reward_evaluations, **res.extra}


def _grpo(selector, data: TrainData, config, out: Path, progress: bool = True) -> dict:
    from ..evaluation.picks import evaluate_dev, evaluate_generation
    from .grpo import train_grpo

    evaluate = evaluate_generation
    if config.dev_scoring:  # FGPO's dev evaluation, with the dev table's rewards for J
        dev_rewards = data.dev_table.rewards("eq1")

        def evaluate(selector, qs, _rewards, correct):
            return evaluate_dev(selector, qs, dev_rewards, correct)

    res = train_grpo(
        selector,
        data.train_qs,
        data.train_table.correct,
        data.dev_qs,
        data.dev_table.correct,
        config,
        out,
        evaluate=evaluate,
        progress=progress,
    )
    return {**_logs(res), "reward_evaluations": res.reward_evaluations}


def _warmup(selector, data: TrainData, config, out: Path, progress: bool = True) -> dict:
    from .warmup import train_warmup

    return train_warmup(selector, data.train_qs, data.dev_qs, config, out, progress=progress)


def _imitation(module: str, fn: str):
    def train(selector, data: TrainData, config, out: Path, progress: bool = True) -> dict:
        f = getattr(importlib.import_module(module, __package__), fn)
        return {"log": f(selector, data.train_qs, data.train_table.rewards("eq1"), config, out)}

    return train


OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("fgpo", "fgpo_core.algorithms.fgpo:FGPOConfig", _fgpo),
        Objective("grpo", "fgpo_core.algorithms.grpo:GRPOConfig", _grpo),
        Objective("sft", "fgpo_core.algorithms.imitation:ImitationConfig", _imitation(".sft", "train_sft")),
        Objective("dpo", "fgpo_core.algorithms.imitation:ImitationConfig", _imitation(".dpo", "train_dpo")),
        Objective("warmup", "fgpo_core.algorithms.warmup:WarmupConfig", _warmup),
    )
}
"""Every objective of ``fgpo train``, by name."""


def objective(name: str) -> Objective:
    """The objective ``name``; an unknown one raises ValueError."""
    if name not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {name!r}")
    return OBJECTIVES[name]
