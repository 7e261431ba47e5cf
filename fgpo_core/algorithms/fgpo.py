"""FGPO: training the LM selector on its candidate scores, rewards read from the reward table.

One step: score every subset of each question in a minibatch (the candidate scores of
Eq. 4, ``[B, 2**n]``) and hand them to an estimator of the registry
(:data:`~fgpo_core.core.registry.ESTIMATORS`, by method name, with its regularizer): by default
FGPO, ``-(1/|B|) sum_s [sum_a q r + beta H(q)]`` (Eq. 2, 5) with the rewards looked up in the
reward table; no reasoner is called. Any other estimator (``rloo-klu0.05``, ``grpo-G4``, the
coverage dial ``fgpo-k4``) trains the same selector through the same loop, drawing its subsets from
``q``. The optional format term is the LM selector's own. The learning rate follows a cosine schedule. Every
``eval_every`` steps (default: every epoch) the dev split is evaluated by ``evaluate``
(default :func:`~fgpo_core.evaluation.picks.evaluate_dev`: greedy free generation, the
paper's main evaluation, and controlled candidate scoring, Eq. 6), and the weights that
rank best by ``select_by`` are kept. Checkpoints are written atomically after every step,
and a run restarted with the same configuration resumes from the last one.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from ..core.estimators import entropy
from ..core.registry import resolve_regularizer
from ..core.schedules import cosine_schedule
from ..genomics.benchmarks.schema import Question
from .common import load_checkpoint, record_config, resume_checkpoint, save_checkpoint, trainable_parameters
from .fgpo_step import (
    SELECT_KEYS,
    FGPOConfig,
    dev_key,
    eval_steps,
    fgpo_step,
    one_at_a_time,
    reference_log_policy,
    selector_step,
    training_reward,
)
from .methods import context, resolve_method

__all__ = [
    "FGPOConfig",
    "FGPOResult",
    "SELECT_KEYS",
    "dev_key",
    "eval_steps",
    "training_reward",
    "train_fgpo",
    "fgpo_step",
    "selector_step",
    "one_at_a_time",
    "reference_log_policy",
]


@dataclass
class FGPOResult:
    """What an FGPO run logged: one row per optimiser step, one per dev evaluation, and the
    step whose weights were kept."""

    config: FGPOConfig
    steps: pd.DataFrame
    dev: pd.DataFrame
    best_step: int
    extra: dict = field(default_factory=dict)
    reward_evaluations: int = 0
    """Reward look-ups the estimator's visits read (every subset of every visit for FGPO)."""


def train_fgpo(
    selector,
    train_qs: Sequence[Question],
    train_rewards: np.ndarray,
    dev_qs: Sequence[Question],
    dev_rewards: np.ndarray,
    dev_correct: np.ndarray,
    config: FGPOConfig,
    out_dir=None,
    progress: bool = True,
    evaluate: Callable | None = None,
    score: Callable = one_at_a_time,
    autocast: Callable = contextlib.nullcontext,
    time_limit: float = 0,
    log: Callable | None = None,
    restore_best: bool = False,
) -> FGPOResult:
    """Train ``selector.model`` (already LoRA-wrapped) with ``config.method``'s estimator; returns the logs.

    ``train_rewards``: the rows the estimator trains on (Eq. 1's for FGPO). ``evaluate(selector,
    dev_qs, dev_rewards, dev_correct) -> dict`` scores the dev split (default
    :func:`~fgpo_core.evaluation.picks.evaluate_dev`; its row must hold the ``select_by`` field and
    ``J``). With ``out_dir`` a checkpoint (trainable weights, optimiser, schedule, the draws'
    generator, logs) is written after every minibatch (and its dev evaluation, where one falls) and
    the weights of the best dev evaluation are saved as ``best.pt``; a restarted run resumes at the
    step after the last one written, with the same batches, so an interruption costs at most one step.
    ``score`` and ``autocast``: how a micro-batch is scored (:func:`selector_step`; the GPU run
    batches and autocasts). ``time_limit`` (seconds, 0: none): past it, training stops after the
    minibatch in progress, which is evaluated (``extra``: ``stopped_early``, ``visits_done``).
    ``restore_best``: load the kept weights into the model at the end."""
    from tqdm import tqdm

    if evaluate is None:
        from ..evaluation.picks import evaluate_dev as evaluate
    if len(train_qs) != len(train_rewards) or len(dev_qs) != len(dev_rewards):
        raise ValueError("questions and reward rows must align")
    dev_key({"gen_accuracy": 0, "accuracy": 0, "J": 0, "step": 0}, config.select_by)  # refuse a bad select_by early
    if config.micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {config.micro_batch}")
    est, settings, _ = resolve_method(config.method, config.settings)
    updates = settings.updates
    train_r = torch.as_tensor(np.asarray(train_rewards, dtype=float))
    ctx = context(est, settings, train_r)
    model = selector.model
    params = trainable_parameters(model)
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    n_batches = math.ceil(len(train_qs) / config.batch_size)
    total = n_batches * config.epochs * updates
    per_epoch = n_batches * updates
    at = set(eval_steps(per_epoch, config.epochs, config.evals_per_epoch)) if config.evals_per_epoch else None
    every = config.eval_every or per_epoch
    sched = cosine_schedule(opt, total)
    rng = np.random.default_rng(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    orders = [rng.permutation(len(train_qs)) for _ in range(config.epochs)]
    steps, dev_rows, start_step, kept, state = [], [], 0, {}, None
    out = Path(out_dir) if out_dir else None
    if out:
        record_config(out, config)
        state = resume_checkpoint(out / "last.pt")  # None: none yet, or torn (moved aside)
        if state is not None:
            for p, v in zip(params, state["params"]):
                p.data.copy_(v)
            opt.load_state_dict(state["opt"])
            sched.load_state_dict(state["sched"])
            if "gen" in state:
                gen.set_state(state["gen"])
            steps, dev_rows = state["steps"], state["dev"]
            # checkpoints written once per epoch (before per-step ones) hold no step: their epoch's end
            start_step = int(state.get("step", (state["epoch"] + 1) * n_batches))

    if resolve_regularizer(est, settings)[0].name == "klr":  # KL to the policy at the start: its log q, kept
        ctx.reference = (state or {}).get("reference")
        if ctx.reference is None:
            ctx.reference = reference_log_policy(selector, train_qs, config.micro_batch, score, autocast)

    def evaluate_at(step: int, visits: int) -> None:
        model.eval()
        wall, cpu = time.perf_counter(), time.process_time()
        with autocast():
            row = evaluate(selector, dev_qs, dev_rewards, dev_correct)
        dev_rows.append(
            {
                "step": step,
                "epoch": step / per_epoch,
                "visits": visits,
                **row,
                "seconds": time.perf_counter() - wall,
                "cpu_seconds": time.process_time() - cpu,
            }
        )
        best = max(dev_rows, key=lambda d: dev_key(d, config.select_by))
        if best["step"] == step:
            kept.update(step=step, params=[p.detach().clone() for p in params])
            if out:
                save_checkpoint(out / "best.pt", {"params": kept["params"], "step": step})
        if out and config.snapshots:
            save_checkpoint(out / f"step-{step}.pt", {"params": [p.detach().half() for p in params], "step": step})
        if log is not None:
            shown = ", ".join(f"{k} {row[k]:.4g}" for k in ("gen_accuracy", "accuracy", "J") if k in row)
            log(f"{config.method} dev step {step}: {shown}")
        model.train()

    def due(step: int) -> bool:
        return step in at if at is not None else (step % every == 0 or step == total)

    def stale(step: int) -> bool:
        """The early-stop rule: past ``stop_after`` epochs and no better dev evaluation for an epoch."""
        if not config.stop_after or step < config.stop_after * per_epoch or not dev_rows:
            return False
        best = max(dev_rows, key=lambda d: dev_key(d, config.select_by))
        return best["step"] <= step - per_epoch and dev_rows[-1]["step"] == step

    if not dev_rows:
        evaluate_at(0, 0)  # the untrained adapter
    bar = tqdm(total=total, initial=start_step, desc=config.method.upper(), disable=not progress)
    stopped = start_step if stale(start_step) else 0
    timed_out, t0 = False, time.time()
    shortlist = (state or {}).get("shortlist")
    for epoch in range(start_step // per_epoch, config.epochs if not stopped else 0):
        if est.candidates is not None and (shortlist is None or start_step < epoch * per_epoch + 1):
            # a shortlist: rebuilt from the current policy at each epoch's start (a resumed epoch keeps its own)
            q_all = reference_log_policy(selector, train_qs, config.micro_batch, score, autocast).exp().numpy()
            shortlist = torch.as_tensor(
                est.candidates(
                    None if shortlist is None else shortlist.numpy(),
                    q_all,
                    np.asarray(train_rewards, dtype=float),
                    selector.space.n_tools,
                    settings.k,
                    np.random.default_rng([config.seed, epoch]),
                )
            )
        model.train()
        for b in range(n_batches):
            first = (epoch * n_batches + b) * updates + 1
            if first <= start_step:
                continue
            idx = orders[epoch][b * config.batch_size : (b + 1) * config.batch_size]
            visits = epoch * len(train_qs) + min((b + 1) * config.batch_size, len(train_qs))
            bctx = replace(
                ctx,
                idx=torch.as_tensor(idx),
                optimal=ctx.optimal[idx],
                reference=None if ctx.reference is None else ctx.reference[idx],
                candidates=None if shortlist is None else shortlist[idx],
            )
            draws = None
            for u in range(updates):
                step = first + u
                wall, cpu = time.perf_counter(), time.process_time()
                opt.zero_grad(set_to_none=True)
                res = fgpo_visit(
                    selector,
                    [train_qs[i] for i in idx],
                    train_rewards[idx],
                    est,
                    bctx,
                    gen,
                    config.format_weight,
                    config.micro_batch,
                    score,
                    autocast,
                    draws,
                )
                draws = res["draws"]
                opt.step()
                sched.step()
                with torch.no_grad():
                    scores = res["scores"]
                    r = torch.as_tensor(train_rewards[idx], dtype=scores.dtype)
                    q = torch.softmax(scores, -1)
                    steps.append(
                        {
                            "epoch": epoch + 1,
                            "step": step,
                            "visits": visits,
                            **({"update": u + 1} if updates > 1 else {}),
                            **(res["telemetry"] if u == 0 else {}),
                            "loss": res["loss"],
                            "J": float((q * r).sum(-1).mean()),
                            "entropy": float(entropy(q).mean()),
                            "top_mass": float(q.max(-1).values.mean()),
                            "tools": float(selector.space.sizes[q.argmax(-1).numpy()].mean()),
                            "p_gen_mass": float(res["log_masses"].exp().mean()),
                            "reward_evaluations": res["n_reward"] if u == 0 else 0,
                            "lr": sched.get_last_lr()[0],
                            "seconds": time.perf_counter() - wall,
                            "cpu_seconds": time.process_time() - cpu,
                        }
                    )
                bar.update()
            step = first + updates - 1
            timed_out = bool(time_limit) and time.time() - t0 > time_limit and step < total
            if due(step) or (timed_out and dev_rows[-1]["step"] != step):
                evaluate_at(step, visits)
            if out:
                save_checkpoint(
                    out / "last.pt",
                    {
                        "params": [p.detach().clone() for p in params],
                        "opt": opt.state_dict(),
                        "sched": sched.state_dict(),
                        "gen": gen.get_state(),
                        "steps": steps,
                        "dev": dev_rows,
                        **({} if ctx.reference is None else {"reference": ctx.reference}),
                        **({} if shortlist is None else {"shortlist": shortlist}),
                        "epoch": epoch,
                        "step": step,
                    },
                )
            if stale(step) or timed_out:
                stopped = step
                break
        if stopped:
            break
    bar.close()
    best = max(dev_rows, key=lambda d: dev_key(d, config.select_by))
    if restore_best:
        saved = kept if kept.get("step") == best["step"] else load_checkpoint(out / "best.pt")
        with torch.no_grad():
            for p, v in zip(params, saved["params"]):
                p.copy_(v.to(p.device))
    extra = (
        {"stopped_early": True, "visits_done": steps[-1]["visits"]}
        if timed_out
        else ({"stopped_early_at": stopped} if stopped else {})
    )
    if timed_out and log is not None:
        log(f"{config.method} stopped by its time guard ({time_limit:.0f} s) after step {stopped} of {total}")
    return FGPOResult(
        config,
        pd.DataFrame(steps),
        pd.DataFrame(dev_rows),
        int(best["step"]),
        extra,
        int(sum(r.get("reward_evaluations", 0) for r in steps)),
    )


fgpo_visit = selector_step
"""What :func:`train_fgpo` calls for each update (a name tests may wrap)."""
