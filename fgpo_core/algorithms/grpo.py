"""The GRPO baseline as the paper ran it: TRL's GRPOTrainer, rewards read from the table.

The selector's prompt (anonymous slots, Appendix G.1) is the dataset's
conversational ``prompt``; TRL samples ``G`` completions per prompt from p_gen at
temperature 1, and :class:`TableReward` turns each into the differential reward
``0.95 r_diff + 0.05 r_fmt`` by parsing it and looking the subset up in the
reward table (no reasoner is called). TRL normalises rewards within each group
(Eq. 3, Bessel standard deviation, eps 1e-4) and logs ``frac_reward_zero_std``,
the fraction of dead groups. :class:`TableReward` also keeps every group it
scored, so the dead-group fraction is recounted independently and logged beside
TRL's as ``dead_fraction_recount``, in TRL's own log history (so a run resumed
from a checkpoint keeps the count of the steps before it). The two can differ:
TRL's test of a zero standard deviation misses groups whose float32 mean rounds
(:func:`trl_constant_groups`).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core.settings import EstimatorSettings
from ..genomics.benchmarks.schema import Question
from ..io import write_json
from .grpo_reward import TableReward, trl_constant_groups

__all__ = [
    "GRPOConfig",
    "GRPOResult",
    "TableReward",
    "grpo_dataset",
    "make_grpo_trainer",
    "train_grpo",
    "trl_constant_groups",
    "trl_kl_beta",
]


@dataclass
class GRPOConfig:
    """A GRPO run of the LM selector (TRL's GRPOTrainer, configured by this from its own
    ``trl.GRPOConfig``)."""

    lr: float = 1e-4
    """Peak learning rate (cosine decay); the same as FGPO's at this scale."""
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    """The estimator settings TRL honours: ``G`` completions per prompt (the paper: 6), ``updates``
    (TRL's ``num_iterations``), ``clip`` (its ``epsilon``) and a ``klr`` regularizer's weight (its KL
    ``beta``; none by default, as the paper)."""
    prompts_per_step: int = 16
    """Prompts per optimiser step (the paper: 64; FGPO's minibatch here: 16)."""
    max_steps: int = 0
    """Optimiser steps; 0 matches FGPO's question visits: epochs x questions / prompts_per_step."""
    epochs: int = 4
    """FGPO epochs whose question visits are matched when max_steps is 0."""
    temperature: float = 1.0
    """Sampling temperature of p_gen (the paper: 1.0)."""
    max_completion_length: int = 16
    """Tokens per completion; '<answer>0,1,2,3</answer>' needs about 12."""
    loss_type: str = "grpo"
    """TRL's loss aggregation; 'grpo' is Eq. 3's per-sequence mean."""
    lora_r: int = 16
    """LoRA rank (the paper: 16)."""
    lora_alpha: int = 32
    """LoRA alpha (the paper: 32)."""
    eval_every: int = 0
    """Evaluate on dev every this many steps (0: 8 evaluations per run, as the paper's 25 of 200)."""
    seed: int = 0
    """Seeds sampling, order and the adapter's initialisation."""
    select_by: str = "generation"
    """Which adapter the run keeps: "generation", the dev evaluation with the highest free-generation
    accuracy (ties: the earlier step; step 0 is the starting adapter), as FGPO's; "last", the final one."""
    dev_scoring: bool = False
    """Evaluate dev as FGPO does (free generation and controlled scoring from one pass, with J from
    the dev table) instead of by free generation alone; the kept adapter is still chosen by free
    generation."""
    snapshots: bool = False
    """Also keep the trainable weights of every dev evaluation (``step-<N>.pt``, half precision), as
    FGPO's ``snapshots``, so the two runs can be compared at equal visits and at equal time."""
    evals_per_epoch: int = 0
    """Instead of ``eval_every``: dev evaluations at the steps nearest each 1/N of an epoch (0: off)."""
    micro_batch: int = 1
    """Prompts per forward/backward pass (must divide ``prompts_per_step``; 1: one group at a time)."""

    def __post_init__(self):
        trl_kl_beta(self.settings)  # a regularizer TRL has no term for: ValueError
        if self.micro_batch < 1 or self.prompts_per_step % self.micro_batch:
            raise ValueError(f"micro_batch ({self.micro_batch}) must divide prompts_per_step ({self.prompts_per_step})")

    @property
    def G(self) -> int:
        """Completions sampled per prompt (``settings.G``)."""
        return self.settings.G

    @classmethod
    def from_record(cls, record: dict) -> "GRPOConfig":
        """The config a run's manifest (or ``config.json``) records, older records (a top-level ``G``)
        included; a missing field has its default."""
        rec = dict(record)
        settings = dict(rec.pop("settings", None) or {})
        if "G" in rec:
            settings.setdefault("G", int(rec.pop("G")))
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in rec.items() if k in names}, settings=EstimatorSettings(**settings))


def trl_kl_beta(settings: EstimatorSettings) -> float:
    """TRL's KL ``beta`` of ``settings``: a ``klr`` regularizer's weight (KL to the reference policy,
    the adapter's base), 0 for none; any other regularizer is refused (TRL has no such term)."""
    reg = settings.regularizer
    if reg in (None, "none"):
        return 0.0
    if reg == "klr":
        return float(settings.weight if settings.weight is not None else 0.04)
    raise ValueError(f"GRPO through TRL takes the regularizers none and klr, got {reg!r}")


def grpo_dataset(selector, questions: Sequence[Question]):
    """The selector's prompts (chat template applied, prefill included) with each question's index ``qi``."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": selector.prompt_text(q), "qi": i} for i, q in enumerate(questions)])


def make_grpo_trainer(
    model,
    tokenizer,
    dataset,
    reward: TableReward,
    cfg: GRPOConfig,
    out_dir,
    max_steps: int,
    callbacks=(),
    progress: bool = False,
    device: str = "cpu",
    bf16: bool = False,
    checkpoints: bool = True,
):
    """A TRL GRPOTrainer with the paper's sampling settings (KL beta 0, group scaling), the one place
    its ``trl.GRPOConfig`` is built: on ``device`` (``cuda`` with ``bf16`` for the GPU run), with a
    checkpoint every step (``checkpoints``: a step costs minutes on CPU, a LoRA checkpoint a few MB)."""
    import trl
    from transformers.trainer_callback import PrinterCallback

    if cfg.micro_batch < 1 or cfg.prompts_per_step % cfg.micro_batch:
        raise ValueError(f"micro_batch ({cfg.micro_batch}) must divide prompts_per_step ({cfg.prompts_per_step})")
    save = (
        {"save_strategy": "steps", "save_steps": 1, "save_total_limit": 2} if checkpoints else {"save_strategy": "no"}
    )
    args = trl.GRPOConfig(
        output_dir=str(out_dir),
        learning_rate=cfg.lr,
        lr_scheduler_type="cosine",
        warmup_steps=0,
        # micro_batch groups per forward/backward, accumulated over the step's prompts: the
        # same update as one batch of G x prompts_per_step, in a fraction of the memory
        per_device_train_batch_size=cfg.G * cfg.micro_batch,
        gradient_accumulation_steps=cfg.prompts_per_step // cfg.micro_batch,
        num_generations=cfg.G,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        top_p=1.0,
        beta=trl_kl_beta(cfg.settings),
        num_iterations=cfg.settings.updates,
        epsilon=cfg.settings.clip,
        loss_type=cfg.loss_type,
        scale_rewards="group",
        max_steps=max_steps,
        logging_steps=1,
        **save,
        report_to=[],
        use_cpu=device == "cpu",
        bf16=bf16,
        seed=cfg.seed,
        data_seed=cfg.seed,
        disable_tqdm=not progress,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        log_completions=False,
        gradient_checkpointing=False,
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=list(callbacks),
    )
    trainer.remove_callback(PrinterCallback)  # TRL's per-step dicts; the run's ``steps`` keeps them
    return trainer


@dataclass
class GRPOResult:
    """What a GRPO run logged: TRL's per-step log (with ``frac_reward_zero_std``), the dev
    evaluations, the reward evaluations it used, and its :class:`TableReward`."""

    config: GRPOConfig
    steps: pd.DataFrame
    dev: pd.DataFrame
    reward_evaluations: int
    extra: dict = field(default_factory=dict)
    best_step: int | None = None
    """The step whose adapter the model holds after training (None: the last, ``select_by="last"``
    or no dev evaluation)."""


def train_grpo(
    selector,
    train_qs: Sequence[Question],
    train_correct: np.ndarray,
    dev_qs: Sequence[Question],
    dev_correct: np.ndarray,
    cfg: GRPOConfig,
    out_dir,
    evaluate=None,
    progress: bool = True,
    reward: TableReward | None = None,
    dead_group_probe: int = 16,
    device: str = "cpu",
    bf16: bool = False,
    checkpoints: bool = True,
    time_limit: float = 0,
    log=None,
) -> GRPOResult:
    """Train ``selector.model`` (LoRA-wrapped) with TRL's GRPOTrainer; resumes from the last
    checkpoint in ``out_dir``. ``evaluate(selector, dev_qs, None, dev_correct) -> dict`` (the
    signature FGPO's dev evaluation shares; GRPO has no reward rows to give it) is called on dev
    every ``eval_every`` steps and before training. ``reward`` replaces the default
    :class:`TableReward` of ``train_correct``. With ``cfg.select_by="generation"`` the adapter of the
    best dev evaluation (free-generation ``accuracy``; ties to the earlier step) is kept in
    ``out_dir/best.pt`` as it appears and loaded into the model after training.
    ``dead_group_probe``: the first this many training questions are the probe of a
    :class:`~fgpo_core.algorithms.callbacks.DeadGroupCallback`, which logs Eq. 7's closed form for
    the current p_gen beside TRL's ``frac_reward_zero_std`` at every evaluation step (0: none).
    ``device``, ``bf16``, ``checkpoints``: :func:`make_grpo_trainer`'s. ``time_limit`` (seconds, 0:
    none): past it, training stops after the step in progress, which is evaluated (``extra``:
    ``stopped_early``, ``visits_done``)."""
    import torch
    from transformers import TrainerCallback

    from .callbacks import Recount
    from .common import load_checkpoint, save_checkpoint, trainer_resume
    from .fgpo import eval_steps

    if cfg.select_by not in ("generation", "last"):
        raise ValueError(f"select_by must be 'generation' or 'last', got {cfg.select_by!r}")
    out = Path(out_dir)
    resume = trainer_resume(out, cfg)  # refuses a folder of another configuration before reading its logs
    steps = cfg.max_steps or max(1, math.ceil(cfg.epochs * len(train_qs) / cfg.prompts_per_step))
    per_epoch = math.ceil(len(train_qs) / cfg.prompts_per_step)
    every = cfg.eval_every or max(1, steps // 8)
    at = set(eval_steps(per_epoch, cfg.epochs, cfg.evals_per_epoch)) if cfg.evals_per_epoch else None
    if reward is None:
        reward = TableReward(train_correct, selector.space.n_tools, cfg.G, prefill=selector.prefill)
    dev_rows: list[dict] = []
    dev_file = out / "dev.json"
    if dev_file.exists():
        dev_rows = json.loads(dev_file.read_text())

    trainable = [p for p in selector.model.parameters() if p.requires_grad]
    keep_best = evaluate is not None and cfg.select_by == "generation"

    def best_row() -> dict:  # free generation: "gen_accuracy" when the evaluation also scores (FGPO's)
        return max(dev_rows, key=lambda d: (d.get("gen_accuracy", d["accuracy"]), -d["step"]))

    def record(row: dict) -> None:
        """Log a dev evaluation; the best one's adapter is written before the log names it."""
        dev_rows.append(row)
        if keep_best and best_row()["step"] == row["step"]:
            save_checkpoint(out / "best.pt", {"params": [p.detach().clone() for p in trainable], "step": row["step"]})
        if cfg.snapshots:
            save_checkpoint(
                out / f"step-{row['step']}.pt", {"params": [p.detach().half() for p in trainable], "step": row["step"]}
            )
        write_json(dev_file, dev_rows, indent=None)

    def timed_evaluation(step: int) -> dict:
        wall, cpu = time.perf_counter(), time.process_time()
        row = evaluate(selector, dev_qs, None, dev_correct)
        if log is not None:
            log(f"grpo dev step {step}: generation {row.get('gen_accuracy', row.get('accuracy', 0)):.1f}%")
        return {
            "step": step,
            "epoch": step / per_epoch,
            "visits": step * cfg.prompts_per_step,
            **row,
            "seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu,
        }

    def due(step: int) -> bool:
        return step in at if at is not None else (step % every == 0 or step == steps)

    class DevEval(TrainerCallback):
        def __init__(self):
            self.t0, self.stopped = time.time(), False

        def on_step_end(self, args, state, control, **kw):
            step = state.global_step
            if time_limit and time.time() - self.t0 > time_limit and step < steps:
                self.stopped = control.should_training_stop = True
                if log is not None:
                    log(f"grpo stopped by its time guard ({time_limit:.0f} s) after step {step} of {steps}")
            if evaluate is not None and (due(step) or self.stopped) and all(d["step"] != step for d in dev_rows):
                selector.model.eval()
                record(timed_evaluation(step))
                selector.model.train()
            return control

    class StepTime(TrainerCallback):
        """Each optimiser step's wall and CPU seconds (sampling, scoring and the update; not the dev
        evaluation after it), written into the step's log entry, which every checkpoint keeps."""

        def on_step_begin(self, args, state, control, **kw):
            self.wall, self.cpu = time.perf_counter(), time.process_time()

        def on_step_end(self, args, state, control, **kw):
            self.took = {"seconds": time.perf_counter() - self.wall, "cpu_seconds": time.process_time() - self.cpu}

        def on_log(self, args, state, control, logs=None, **kw):
            if logs is None or "train_runtime" in logs or not hasattr(self, "took"):
                return control
            logs.update(self.took)
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(self.took)
            return control

    if evaluate is not None and not dev_rows:
        out.mkdir(parents=True, exist_ok=True)
        record(timed_evaluation(0))

    ds = grpo_dataset(selector, train_qs)
    dev_eval = DevEval()
    callbacks = [StepTime(), dev_eval, Recount(reward)]
    if dead_group_probe:
        from .callbacks import DeadGroupCallback, lm_selector_p_gen

        probe = list(range(min(dead_group_probe, len(train_qs))))
        r_act, r_fail = reward.action_rewards(probe)
        dead_cb = DeadGroupCallback(
            lm_selector_p_gen(selector, [train_qs[i] for i in probe]), r_act, r_fail, G=cfg.G, every=every
        )
        callbacks.append(dead_cb)
    trainer = make_grpo_trainer(
        selector.model, selector.tokenizer, ds, reward, cfg, out, steps, callbacks, progress, device, bf16, checkpoints
    )
    trainer.train(resume_from_checkpoint=resume)
    logs = pd.DataFrame([h for h in trainer.state.log_history if "frac_reward_zero_std" in h])
    best_step = None
    if keep_best:
        best = load_checkpoint(out / "best.pt")
        if best["step"] != best_row()["step"]:
            raise RuntimeError(
                f"{out / 'best.pt'} holds step {best['step']}, the dev log's best is "
                f"{best_row()['step']}: the folder was written by another run"
            )
        with torch.no_grad():
            for p, v in zip(trainable, best["params"]):
                p.copy_(v)
        best_step = int(best["step"])
    done = trainer.state.global_step
    extra = {"table_reward": reward, "dead_groups": dead_cb.history if dead_group_probe else []}
    if dev_eval.stopped:
        extra.update(stopped_early=True, visits_done=min(done * cfg.prompts_per_step, len(train_qs) * cfg.epochs))
    return GRPOResult(cfg, logs, pd.DataFrame(dev_rows), done * cfg.prompts_per_step * cfg.G, extra, best_step)
