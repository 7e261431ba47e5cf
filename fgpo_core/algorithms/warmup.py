"""The format warm-up: a short SFT of the LM selector's adapter on policy strings of subsets
drawn uniformly at random, until free generation puts its mass on the policy strings.

The untrained 135M selector puts only a few per cent of its generation mass on the ``2**n``
policy strings, so GRPO starts with almost no signal and free generation fails the format on
most questions (the chapter "FGPO versus GRPO" measures both). The warm-up teaches the format
and nothing else: every training question's target subset is drawn uniformly at random
(afresh each epoch, seeded), so no reward information enters. After each epoch p_gen's mass on
the policy strings is measured on the dev questions; the warm-up stops once its mean reaches
``target_mass``. Every method of the LM selector (FGPO, GRPO, SFT, DPO and the prompted
baseline) then starts from this one adapter.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..genomics.benchmarks.schema import Question
from ..io import write_json
from .imitation import ImitationConfig
from .sft import sft_on_subsets

__all__ = ["WarmupConfig", "warmup_targets", "format_mass", "train_warmup"]


@dataclass
class WarmupConfig:
    """The format warm-up of the LM selector (TRL's SFTTrainer on uniformly drawn subsets)."""

    lr: float = 1e-4
    """Peak learning rate of each epoch (cosine decay within the epoch)."""
    max_epochs: int = 4
    """Passes over the training questions at most."""
    target_mass: float = 0.95
    """Stop once the mean p_gen mass on the policy strings over the dev questions reaches this."""
    batch_size: int = 16
    """Questions per optimiser step."""
    lora_r: int = 16
    """LoRA rank (the adapter every method then continues)."""
    lora_alpha: int = 32
    """LoRA alpha."""
    seed: int = 0
    """Seeds the drawn subsets and the order."""


def warmup_targets(n_questions: int, n_actions: int, seed: int, epoch: int) -> np.ndarray:
    """One uniformly drawn subset per question for one epoch: independent of every reward."""
    return np.random.default_rng([seed, epoch]).integers(0, n_actions, n_questions)


def format_mass(selector, questions: Sequence[Question]) -> np.ndarray:
    """Per question, p_gen's total mass on the ``2**n`` policy strings (free generation at
    temperature 1 emits a string that parses with this probability)."""
    return np.array([float(selector.scores_and_p_gen(q)[1].sum()) for q in questions])


RESUME_FILE = "resume.pt"


def train_warmup(selector, train_qs: Sequence[Question], dev_qs: Sequence[Question], cfg: WarmupConfig,
                 out_dir, progress: bool = True) -> dict:
    """Warm ``selector.model`` (LoRA-wrapped) up on the format; returns the log: the dev mass
    before training and after each epoch, and the epochs taken. ``out_dir`` holds TRL's output,
    ``warmup.json`` (the log, rewritten after every epoch) and ``resume.pt`` (the adapter's
    trainable weights after the last finished epoch, with the log).

    Interrupted, the warm-up resumes from the last finished epoch: called again on the same
    ``out_dir`` with the same config, it loads that epoch's weights and goes on; a folder
    holding a warm-up with another config is refused."""
    from tqdm.auto import tqdm

    from .common import load_checkpoint, save_checkpoint, trainable_parameters

    if not 0 < cfg.target_mass <= 1:
        raise ValueError(f"target_mass must lie in (0, 1], got {cfg.target_mass}")
    if cfg.max_epochs < 1:
        raise ValueError(f"max_epochs must be at least 1, got {cfg.max_epochs}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    params = trainable_parameters(selector.model)
    curve, logs = [], []
    if (out / RESUME_FILE).exists():
        state = load_checkpoint(out / RESUME_FILE)
        same = {k: v for k, v in state["config"].items() if k != "max_epochs"} == \
            {k: v for k, v in asdict(cfg).items() if k != "max_epochs"}
        if not same:
            raise ValueError(f"{out} holds a warm-up with another config {state['config']}; "
                             "use another folder or delete it")
        for p, v in zip(params, state["params"]):
            p.data.copy_(v)
        curve, logs = list(state["curve"]), list(state["log"])
    selector.model.eval()
    if not curve:
        curve = [{"epoch": 0, "dev_mass_mean": float(format_mass(selector, dev_qs).mean())}]
    bar = tqdm(total=cfg.max_epochs, initial=min(curve[-1]["epoch"], cfg.max_epochs), desc="format warm-up",
               disable=not progress)
    for epoch in range(curve[-1]["epoch"] + 1, cfg.max_epochs + 1):
        if curve[-1]["dev_mass_mean"] >= cfg.target_mass:
            break
        targets = warmup_targets(len(train_qs), selector.space.n_actions, cfg.seed, epoch)
        selector.model.train()
        logs += sft_on_subsets(selector, train_qs, targets,
                               ImitationConfig(lr=cfg.lr, epochs=1, batch_size=cfg.batch_size, seed=cfg.seed + epoch),
                               out / f"epoch{epoch}")
        selector.model.eval()
        mass = format_mass(selector, dev_qs)
        curve.append({"epoch": epoch, "dev_mass_mean": float(mass.mean()), "dev_mass_min": float(mass.min())})
        save_checkpoint(out / RESUME_FILE, {"config": asdict(cfg), "curve": curve, "log": logs,
                                            "params": [p.detach().clone() for p in params]})
        write_json(out / "warmup.json", {"config": asdict(cfg), "curve": curve}, indent=1)
        bar.update()
    bar.close()
    reached = curve[-1]["dev_mass_mean"] >= cfg.target_mass
    return {"curve": curve, "epochs": curve[-1]["epoch"], "reached_target": bool(reached), "log": logs}
