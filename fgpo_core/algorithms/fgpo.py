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

from ..core.estimators import BETA, entropy
from ..core.registry import Estimator, VisitContext, estimator, resolve_regularizer, visit_loss
from ..core.schedules import cosine_schedule
from ..core.settings import EstimatorSettings
from ..genomics.benchmarks.schema import Question
from .common import load_checkpoint, record_config, resume_checkpoint, save_checkpoint, trainable_parameters
from .methods import context, resolve_method

__all__ = ["FGPOConfig", "FGPOResult", "SELECT_KEYS", "dev_key", "eval_steps", "training_reward", "train_fgpo",
           "fgpo_step", "selector_step", "one_at_a_time", "reference_log_policy"]


@dataclass
class FGPOConfig:
    """An FGPO run of the LM selector (or of any estimator of the registry on its candidate scores)."""

    lr: float = 1e-4
    """Peak learning rate (cosine decay to zero); the paper's (7B) is in ``fgpo_core.book.paper.HYPERPARAMETERS``."""
    epochs: int = 4
    """Passes over the training questions (the paper: 4)."""
    batch_size: int = 16
    """Questions per minibatch; all 2**n subsets of each are scored."""
    method: str = "fgpo"
    """The estimator, a method name of the registry (``fgpo``: the exact objective with its entropy bonus;
    ``rloo-klu0.05``, ``grpo-G4``, ``fgpo-k4``...; see ``fgpo study --help``)."""
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    """What the estimator and its regularizer read (``G``, ``k``, ``regularizer``, ``weight``: FGPO's
    entropy bonus, None its default 0.03, ...); a method name's modifiers override them."""
    lora_r: int = 16
    """LoRA rank (the paper: 16)."""
    lora_alpha: int = 32
    """LoRA alpha (the paper: 32)."""
    lora_targets: tuple = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Modules that receive adapters."""
    seed: int = 0
    """Seeds the question order, an estimator's draws and the adapter's initialisation."""
    eval_every: int = 0
    """Optimiser steps between dev evaluations (0: once per epoch)."""
    evals_per_epoch: int = 0
    """Instead of ``eval_every``: dev evaluations at the steps nearest each 1/N of an epoch (0: off)."""
    micro_batch: int = 1
    """Questions per forward/backward pass (1: one question's graph in memory at a time)."""
    format_weight: float = 0.0
    """This book's addition, not the paper's (0: FGPO as the paper writes it): the loss also
    subtracts ``format_weight * log sum_a p_gen(a|s)``, the log of free generation's mass on
    the policy strings, so that raising q's expected reward cannot move p_gen off the strings
    that parse (the role GRPO's 0.05 r_fmt plays in its reward)."""
    select_by: str = "generation"
    """Dev metric that picks the kept adapter: "generation" (greedy free generation, how the
    selector is used) or "scoring" (controlled candidate scoring, Eq. 6), ties to the higher J;
    or "last": the adapter of the last step, whatever dev says (a fixed-budget comparison)."""
    stop_after: int = 0
    """From this many epochs on, stop once the best dev evaluation is a full epoch old (0: train
    every epoch). The cosine schedule still spans ``epochs``."""
    snapshots: bool = False
    """Also keep the trainable weights of every dev evaluation (``step-<N>.pt``, half precision),
    so another run can be compared with this one at its own visit count."""

    def __post_init__(self):
        resolve_method(self.method, self.settings)  # an unknown method or an unread modifier: ValueError
        if self.micro_batch < 1:
            raise ValueError(f"micro_batch must be >= 1, got {self.micro_batch}")

    @classmethod
    def from_record(cls, record: dict) -> "FGPOConfig":
        """The config a run's manifest (or ``config.json``) records, older records included: their
        ``beta`` is the entropy weight, and a missing field has its default."""
        rec = dict(record)
        settings = dict(rec.pop("settings", None) or {})
        beta = rec.pop("beta", None)
        if beta is not None and float(beta) != BETA:
            settings.setdefault("weight", float(beta))
        if "lora_targets" in rec:
            rec["lora_targets"] = tuple(rec["lora_targets"])
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in rec.items() if k in names}, settings=EstimatorSettings(**settings))


SELECT_KEYS = {"generation": "gen_accuracy", "scoring": "accuracy"}
"""The dev-row field each ``select_by`` ranks by."""


def dev_key(row: dict, select_by: str = "generation") -> tuple:
    """How dev evaluations are ranked: the chosen accuracy, then the expected reward J, then the
    earlier step; with ``select_by="last"``, the later step."""
    if select_by == "last":
        return (row["step"], 0.0, 0)
    if select_by not in SELECT_KEYS:
        raise ValueError(f"select_by must be one of {', '.join(SELECT_KEYS)} or last, got {select_by!r}")
    return (row[SELECT_KEYS[select_by]], row["J"], -row["step"])


def training_reward(config: FGPOConfig) -> str:
    """The reward table rows ``config``'s estimator trains on: ``settings.reward``, else the
    estimator's own (Eq. 1 for FGPO, the differential reward for GRPO and RLOO)."""
    est, settings, _ = resolve_method(config.method, config.settings)
    return settings.reward or est.reward


def eval_steps(steps_per_epoch: int, epochs: int, per_epoch: int) -> list[int]:
    """The optimiser steps nearest each 1/``per_epoch`` of an epoch (the last step included)."""
    return sorted({max(1, round(e * steps_per_epoch + k * steps_per_epoch / per_epoch))
                   for e in range(epochs) for k in range(1, per_epoch + 1)})


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


def one_at_a_time(selector, questions: Sequence[Question]) -> tuple[torch.Tensor, torch.Tensor]:
    """The candidate scores ``[b, 2**n]`` and log p_gen masses ``[b]`` of ``questions``, one pass each
    (:meth:`~fgpo_core.selectors.lm.LMSelector.scores_and_log_mass`)."""
    pairs = [selector.scores_and_log_mass(q) for q in questions]
    return torch.stack([a for a, _ in pairs]), torch.stack([m for _, m in pairs])


def _full(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def selector_step(selector, questions: Sequence[Question], rewards: np.ndarray, est: Estimator, ctx: VisitContext,
                  gen: torch.Generator | None = None, format_weight: float = 0.0, micro_batch: int = 1,
                  score: Callable = one_at_a_time, autocast: Callable = contextlib.nullcontext,
                  draws: list | None = None) -> dict:
    """One optimiser step's gradients (no optimiser step) of estimator ``est`` on a minibatch.

    ``micro_batch`` questions at a time are scored (``score(selector, questions) -> (scores [b, A],
    log_mass [b])``, under ``autocast()``), handed to the registry (a draw, then the estimator's loss
    and regularizer, :func:`~fgpo_core.core.registry.visit_loss`, on CPU) and back-propagated at
    their share of the batch, so only their graph is held in memory. ``ctx``: the visit's context for
    these questions (``idx``, ``optimal`` of the minibatch). With ``format_weight`` each question
    also subtracts ``format_weight * log sum_a p_gen(a|s)``. ``draws``: the draws of an earlier update
    on this minibatch (None: draw now). Returns the detached ``scores``, ``log_masses``, the
    estimator's ``loss``, the ``draws``, their ``telemetry`` (mean over parts) and ``n_reward``."""
    B = len(questions)
    rows, masses, loss_sum, new_draws, tele, n_reward = [], [], 0.0, [], {}, 0
    for i, s in enumerate(range(0, B, micro_batch)):
        part = slice(s, s + micro_batch)
        n = len(questions[part])
        with autocast():
            scores, log_mass = score(selector, questions[part])
        scores, log_mass = _full(scores).cpu(), _full(log_mass).cpu()  # the estimators run on CPU, in float32 or more
        r = torch.as_tensor(rewards[part], dtype=scores.dtype)
        pctx = replace(ctx, idx=ctx.idx[part], optimal=ctx.optimal[part],
                       candidates=None if ctx.candidates is None else ctx.candidates[part],
                       reference=None if ctx.reference is None else ctx.reference[part])
        d = draws[i] if draws is not None else est.draw(scores, r, gen, pctx)
        loss = visit_loss(est, scores, r, d, pctx)
        total = loss - format_weight * log_mass.mean() if format_weight else loss
        (total * n / B).backward()
        rows.append(scores.detach())
        masses.append(log_mass.detach().reshape(-1))
        loss_sum += float(loss.detach()) * n / B
        new_draws.append(d)
        n_reward += d.n_reward
        for k, v in d.telemetry.items():
            tele[k] = tele.get(k, 0.0) + v * n / B
    return {"scores": torch.cat(rows), "log_masses": torch.cat(masses), "loss": loss_sum, "draws": new_draws,
            "telemetry": tele, "n_reward": n_reward}


def reference_log_policy(selector, questions: Sequence[Question], micro_batch: int = 1,
                         score: Callable = one_at_a_time, autocast: Callable = contextlib.nullcontext) -> torch.Tensor:
    """The selector's ``log q`` ``[N, 2**n]`` of ``questions`` now, in eval mode and without gradients: the
    reference policy of the ``klr`` regularizer (the policy at the start of training)."""
    was_training = selector.model.training
    selector.model.eval()
    with torch.no_grad(), autocast():
        parts = [_full(score(selector, questions[i:i + micro_batch])[0]).cpu()
                 for i in range(0, len(questions), micro_batch)]
    selector.model.train(was_training)
    return torch.log_softmax(torch.cat(parts), -1)


def fgpo_step(selector, questions: Sequence[Question], rewards: np.ndarray, beta: float = BETA,
              format_weight: float = 0.0, log_masses: list | None = None) -> torch.Tensor:
    """The FGPO loss of a minibatch, back-propagated one question at a time (no optimiser step):
    :func:`selector_step` with FGPO at entropy weight ``beta``. ``log_masses``, if given, receives each
    question's detached log mass. Returns the detached candidate scores ``[B, 2**n]``."""
    r = torch.as_tensor(np.asarray(rewards, dtype=float))
    ctx = VisitContext(idx=torch.arange(len(questions)), optimal=r == r.max(1, keepdim=True).values,
                       settings=EstimatorSettings(weight=beta))
    out = selector_step(selector, questions, rewards, estimator("fgpo"), ctx, format_weight=format_weight)
    if log_masses is not None:
        log_masses.extend(float(m) for m in out["log_masses"])
    return out["scores"]


def train_fgpo(selector, train_qs: Sequence[Question], train_rewards: np.ndarray, dev_qs: Sequence[Question],
               dev_rewards: np.ndarray, dev_correct: np.ndarray, config: FGPOConfig, out_dir=None,
               progress: bool = True, evaluate: Callable | None = None, score: Callable = one_at_a_time,
               autocast: Callable = contextlib.nullcontext, time_limit: float = 0, log: Callable | None = None,
               restore_best: bool = False) -> FGPOResult:
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
        dev_rows.append({"step": step, "epoch": step / per_epoch, "visits": visits, **row,
                         "seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu})
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
            shortlist = torch.as_tensor(est.candidates(None if shortlist is None else shortlist.numpy(), q_all,
                                                       np.asarray(train_rewards, dtype=float),
                                                       selector.space.n_tools, settings.k,
                                                       np.random.default_rng([config.seed, epoch])))
        model.train()
        for b in range(n_batches):
            first = (epoch * n_batches + b) * updates + 1
            if first <= start_step:
                continue
            idx = orders[epoch][b * config.batch_size:(b + 1) * config.batch_size]
            visits = epoch * len(train_qs) + min((b + 1) * config.batch_size, len(train_qs))
            bctx = replace(ctx, idx=torch.as_tensor(idx), optimal=ctx.optimal[idx],
                           reference=None if ctx.reference is None else ctx.reference[idx],
                           candidates=None if shortlist is None else shortlist[idx])
            draws = None
            for u in range(updates):
                step = first + u
                wall, cpu = time.perf_counter(), time.process_time()
                opt.zero_grad(set_to_none=True)
                res = fgpo_visit(selector, [train_qs[i] for i in idx], train_rewards[idx], est, bctx, gen,
                                 config.format_weight, config.micro_batch, score, autocast, draws)
                draws = res["draws"]
                opt.step()
                sched.step()
                with torch.no_grad():
                    scores = res["scores"]
                    r = torch.as_tensor(train_rewards[idx], dtype=scores.dtype)
                    q = torch.softmax(scores, -1)
                    steps.append({"epoch": epoch + 1, "step": step, "visits": visits,
                                  **({"update": u + 1} if updates > 1 else {}), **(res["telemetry"] if u == 0 else {}),
                                  "loss": res["loss"], "J": float((q * r).sum(-1).mean()),
                                  "entropy": float(entropy(q).mean()), "top_mass": float(q.max(-1).values.mean()),
                                  "tools": float(selector.space.sizes[q.argmax(-1).numpy()].mean()),
                                  "p_gen_mass": float(res["log_masses"].exp().mean()),
                                  "reward_evaluations": res["n_reward"] if u == 0 else 0,
                                  "lr": sched.get_last_lr()[0], "seconds": time.perf_counter() - wall,
                                  "cpu_seconds": time.process_time() - cpu})
                bar.update()
            step = first + updates - 1
            timed_out = bool(time_limit) and time.time() - t0 > time_limit and step < total
            if due(step) or (timed_out and dev_rows[-1]["step"] != step):
                evaluate_at(step, visits)
            if out:
                save_checkpoint(out / "last.pt", {"params": [p.detach().clone() for p in params],
                                                  "opt": opt.state_dict(), "sched": sched.state_dict(),
                                                  "gen": gen.get_state(), "steps": steps, "dev": dev_rows,
                                                  **({} if ctx.reference is None else {"reference": ctx.reference}),
                                                  **({} if shortlist is None else {"shortlist": shortlist}),
                                                  "epoch": epoch, "step": step})
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
    extra = {"stopped_early": True, "visits_done": steps[-1]["visits"]} if timed_out else \
        ({"stopped_early_at": stopped} if stopped else {})
    if timed_out and log is not None:
        log(f"{config.method} stopped by its time guard ({time_limit:.0f} s) after step {stopped} of {total}")
    return FGPOResult(config, pd.DataFrame(steps), pd.DataFrame(dev_rows), int(best["step"]), extra,
                      int(sum(r.get("reward_evaluations", 0) for r in steps)))


fgpo_visit = selector_step
"""What :func:`train_fgpo` calls for each update (a name tests may wrap)."""
