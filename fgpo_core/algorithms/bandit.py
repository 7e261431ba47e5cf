"""A teaching bandit: exact versus sampled policy gradients with no model at all.

Each question ``s`` of a synthetic reward table gets its own vector of ``2**n``
logits (a tabular policy, ``q = softmax(logits[s])``), so the only thing that
differs between the arms is the gradient estimator:

* ``fgpo``: the exact objective over all ``2**n`` subsets (Eq. 2, 5);
* ``fgpo-k``: the coverage dial, the same objective on ``k`` subsets drawn uniformly per visit,
  ``q`` renormalised over them (``k = 2**n`` is FGPO; its arms are labelled ``k-subset (k=...)``);
* ``grpo``: ``G`` actions sampled from the policy, group-normalised
  advantages (Eq. 3), with Eq. 1 or the paper's differential reward.

Every arm sees the same questions in the same order; what differs is how many
rewards each visit reads (``2**n``, ``k`` or ``G``). The tables are the synthetic
ones of :mod:`fgpo_core.table.synthetic` (shaped like the paper's GenomeQA
statistics; a stand-in, not data) or any real reward table.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from ..core.dead_groups import dead_group_probability
from ..core.estimators import BETA, entropy, fgpo_logit_gradient, grpo_advantages
from ..core.registry import estimator
from ..table.reward_table import RewardTable
from .loop import run_visits, visit_context

__all__ = [
    "BanditConfig",
    "BanditRun",
    "train_bandit",
    "Race",
    "run_race",
    "policy_metrics",
    "temperature_policies",
    "gradient_estimator_study",
]


# ---------------------------------------------------------------------------
# Policy metrics
# ---------------------------------------------------------------------------
def policy_metrics(probs: np.ndarray, table: RewardTable, G: int = 6) -> dict:
    """What a policy ``probs [N, A]`` achieves on a table.

    ``accuracy`` (greedy: the argmax subset's correctness, %), ``expected_accuracy``
    (%), ``J`` (expected Eq. 1 reward), ``entropy`` (nats), ``top_mass``,
    ``tools`` (|a| of the argmax), ``empty_argmax`` (%), and ``dead_G`` (closed-form
    dead-group probability at group size ``G`` under Eq. 1 reward classes, %),
    ``dead_wrong_share`` (% of that dead mass whose shared answer is wrong).
    """
    probs = np.asarray(probs, dtype=float)
    r = table.rewards("eq1")
    greedy = probs.argmax(1)
    rows = np.arange(table.n_questions)
    dead = dead_group_probability(probs, r, G)
    dead_wrong = dead_group_probability(probs, r, G, where=~table.correct)
    ent = entropy(torch.as_tensor(probs)).numpy()
    return {
        "accuracy": 100.0 * table.correct[rows, greedy].mean(),
        "expected_accuracy": 100.0 * (probs * table.correct).sum(1).mean(),
        "J": float((probs * r).sum(1).mean()),
        "entropy": float(ent.mean()),
        "top_mass": float(probs.max(1).mean()),
        "tools": float(table.space.sizes[greedy].mean()),
        "empty_argmax": 100.0 * (greedy == 0).mean(),
        f"dead_G{G}": 100.0 * float(dead.mean()),
        "dead_wrong_share": 100.0 * float(dead_wrong.sum() / max(dead.sum(), 1e-300)),
    }


def temperature_policies(table: RewardTable, temperatures, kind: str = "eq1") -> dict[float, np.ndarray]:
    """Policies ``softmax(r / T)`` that concentrate on the reward-optimal subsets as
    the temperature ``T`` falls (``T = inf`` is uniform)."""
    r = table.rewards(kind)
    out = {}
    for T in temperatures:
        if T == np.inf:
            out[T] = np.full_like(r, 1.0 / r.shape[1])
        else:
            z = r / T
            z = z - z.max(1, keepdims=True)
            e = np.exp(z)
            out[T] = e / e.sum(1, keepdims=True)
    return out


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------
@dataclass
class BanditConfig:
    """One tabular training run (one arm of the teaching experiment)."""

    method: Literal["fgpo", "fgpo-k", "grpo"] = "fgpo"
    """Gradient estimator: exact (fgpo), the coverage dial (fgpo-k: k uniformly drawn subsets), or GRPO."""
    reward: Literal["eq1", "binary", "differential"] = "eq1"
    """Reward the arm optimises (Eq. 1, Eq. 1 with lambda=0, or GRPO's differential reward)."""
    epochs: int = 20
    """Passes over the questions; every arm visits each question once per epoch."""
    batch_size: int = 16
    """Questions per minibatch (the paper: 16 for FGPO)."""
    lr: float = 2.0
    """SGD step size per question visit (each question's logits move only when it is visited)."""
    beta: float = BETA
    """Entropy bonus of FGPO and the coverage dial (GRPO has none, as in the paper)."""
    group_size: int = 6
    """G, rollouts per question for GRPO."""
    k: int = 16
    """Subsets evaluated per visit by the coverage dial (fgpo-k; k = 2**n is FGPO)."""
    grpo_variant: Literal["paper", "trl"] = "paper"
    """Standard deviation of Eq. 3: population ("paper") or Bessel with eps 1e-4 ("trl")."""
    eval_every: int = 25
    """Steps between full-table evaluations."""
    seed: int = 0
    """Seeds question order, sampling and nothing else: runs are deterministic."""

    def validate(self, n_actions: int) -> None:
        if self.method not in ("fgpo", "fgpo-k", "grpo"):
            raise ValueError(f"unknown method {self.method!r}")
        if self.reward not in ("eq1", "binary", "differential"):
            raise ValueError(f"unknown reward {self.reward!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.eval_every < 1:
            raise ValueError("epochs, batch_size and eval_every must be >= 1")
        if self.method == "fgpo-k" and not 1 <= self.k <= n_actions:
            raise ValueError(f"k must lie in 1..{n_actions}, got {self.k}")
        if self.method == "grpo" and self.group_size < 2:
            raise ValueError("GRPO needs group_size >= 2")
        if self.lr <= 0:
            raise ValueError("lr must be > 0")

    @property
    def estimator_family(self) -> str:
        """The arm's estimator in :data:`fgpo_core.core.registry.ESTIMATORS` (the method's own name;
        ``group_size`` is GRPO's ``G``)."""
        return self.method

    @property
    def name(self) -> str:
        if self.method == "fgpo":
            return "FGPO"
        if self.method == "fgpo-k":
            return f"k-subset (k={self.k})"
        return f"GRPO ({'differential' if self.reward == 'differential' else 'Eq. 1'}, G={self.group_size})"


@dataclass
class BanditRun:
    """What a run leaves: its config, the per-step and per-evaluation logs and the final policy."""

    config: BanditConfig
    steps: pd.DataFrame
    evals: pd.DataFrame
    probs: np.ndarray
    reward_evaluations: int = 0
    extra: dict = field(default_factory=dict)


def train_bandit(table: RewardTable, config: BanditConfig, progress: bool = False) -> BanditRun:
    """Train one tabular policy on ``table`` with ``config``; deterministic under ``config.seed``.

    The policy starts uniform. The run is the policy head's loop
    (:func:`~fgpo_core.algorithms.loop.run_visits`) with a table of free logits as the policy and
    plain SGD: the arm's estimator (:attr:`BanditConfig.estimator`) logs its visit telemetry in
    percent (``best_seen``; for GRPO ``dead_observed``, the groups whose ``G`` rewards are all
    equal: TRL's ``frac_reward_zero_std``), then the step's loss, the batch's expected Eq. 1
    reward and entropy. Every ``eval_every`` steps it logs :func:`policy_metrics` over the table.
    """
    N, A = table.n_questions, table.n_actions
    config.validate(A)
    gen = torch.Generator().manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    train_r = torch.as_tensor(table.rewards(config.reward), dtype=torch.float64)
    eq1_r = torch.as_tensor(table.rewards("eq1"), dtype=torch.float64)
    logits = torch.zeros(N, A, dtype=torch.float64, requires_grad=True)
    # plain SGD: the loss is a batch mean, so scale the rate to one step per visited question
    opt = torch.optim.SGD([logits], lr=config.lr * config.batch_size)
    n_batches = -(-N // config.batch_size)
    est = estimator(config.estimator_family)
    ctx = visit_context(est, eq1_r, beta=config.beta, G=config.group_size,
                        k=config.k if config.method == "fgpo-k" else None, grpo_variant=config.grpo_variant)
    evals = []

    def evaluate(step: int, state) -> None:
        with torch.no_grad():
            probs = torch.softmax(logits, 1).numpy()
        evals.append({"step": step, "epoch": step / n_batches, "reward_evaluations": state.n_reward,
                      **policy_metrics(probs, table, config.group_size)})

    def after_step(idx, state) -> dict:
        with torch.no_grad():
            q = torch.softmax(logits[idx], 1)
            return {"J": float((q * eq1_r[idx]).sum(1).mean()), "entropy": float(entropy(q).mean())}

    bar = tqdm(total=config.epochs * n_batches, desc=config.name, disable=not progress, leave=False)
    state = run_visits(est, lambda idx: logits[idx], train_r, ctx, opt, config.epochs, config.batch_size, rng, gen,
                       config.eval_every, evaluate, after_step, on_step=lambda step: bar.update())
    bar.close()
    with torch.no_grad():
        probs = torch.softmax(logits, 1).numpy()
    return BanditRun(config, pd.DataFrame(state.steps), pd.DataFrame(evals), probs, state.n_reward)


@dataclass
class Race:
    """Several arms, each trained ``n_seeds`` times on one table."""

    table: RewardTable
    runs: dict
    order: list[str]

    @property
    def evals(self) -> pd.DataFrame:
        """Every evaluation of every run, with columns ``arm`` and ``run``."""
        return pd.concat([r.evals.assign(arm=a, run=i) for (a, i), r in self.runs.items()], ignore_index=True)

    @property
    def steps(self) -> pd.DataFrame:
        """Every step log of every run, with ``arm``, ``run`` and ``epoch``."""
        out = []
        for (a, i), r in self.runs.items():
            n_batches = -(-self.table.n_questions // r.config.batch_size)
            out.append(r.steps.assign(arm=a, run=i, epoch=r.steps["step"] / n_batches))
        return pd.concat(out, ignore_index=True)

    def summary(self) -> pd.DataFrame:
        """Per arm (rows in race order), means over runs of: greedy accuracy after the
        first epoch and at the end, final J, tools, entropy, top-action mass, closed-form
        dead-group rate at G=6, dead mass on wrong answers, and reward look-ups."""
        ev = self.evals
        final = ev.sort_values("step").groupby(["arm", "run"]).tail(1).groupby("arm")
        first_epoch = ev[ev.epoch >= 1].sort_values("step").groupby(["arm", "run"]).head(1).groupby("arm")
        return pd.DataFrame({
            "accuracy after 1 epoch (%)": first_epoch["accuracy"].mean(),
            "final accuracy (%)": final["accuracy"].mean(),
            "final J (Eq. 1)": final["J"].mean(),
            "tools / question": final["tools"].mean(),
            "entropy (nats)": final["entropy"].mean(),
            "top-action mass": final["top_mass"].mean(),
            "dead at G=6 (%)": final["dead_G6"].mean(),
            "dead mass on wrong answers (%)": final["dead_wrong_share"].mean(),
            "reward look-ups": final["reward_evaluations"].mean(),
        }).loc[self.order]

    def final_policy(self, arm: str, run: int = 0) -> np.ndarray:
        return self.runs[(arm, run)].probs


def run_race(table: RewardTable, arms: list[BanditConfig], n_seeds: int = 1, seed: int = 0,
             progress: bool = False) -> Race:
    """Train every arm ``n_seeds`` times (run ``i`` uses ``seed + i``) on the same table."""
    if n_seeds < 1:
        raise ValueError("n_seeds must be >= 1")
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise ValueError(f"arms must have distinct names, got {names}")
    runs = {}
    for cfg in arms:
        for i in range(n_seeds):
            runs[(cfg.name, i)] = train_bandit(table, replace(cfg, seed=seed + i), progress=progress)
    return Race(table, runs, names)


# ---------------------------------------------------------------------------
# Gradient estimators against the exact gradient
# ---------------------------------------------------------------------------
def gradient_estimator_study(probs: np.ndarray, rewards: np.ndarray, estimators: dict[str, tuple[str, int]],
                             n_draws: int = 200, seed: int = 0) -> pd.DataFrame:
    """Compare single-visit gradient estimates with the exact logit gradient (Eq. 8).

    For every question (row of ``probs``, ``rewards``) and ``n_draws`` visits,
    each estimator ``name -> ("grpo", G)`` or ``("fgpo-k", k)`` (the coverage dial) produces a
    logit gradient; the exact one is ``q (r - J)`` (beta = 0). Returns one row
    per (estimator, question, draw) with the cosine similarity to the exact
    gradient (0 for a zero estimate), whether the estimate is zero, and the
    relative squared error ``||g_hat - g||^2 / ||g||^2`` of the estimate
    rescaled by the least-squares factor (so GRPO's normalisation does not count
    against it). Questions whose exact gradient is zero are skipped.
    """
    rng = np.random.default_rng(seed)
    p = np.asarray(probs, dtype=float)
    r = np.asarray(rewards, dtype=float)
    N, A = p.shape
    logp = np.log(np.clip(p, 1e-300, None))
    exact = fgpo_logit_gradient(torch.as_tensor(logp), torch.as_tensor(r)).numpy()
    live = np.linalg.norm(exact, axis=1) > 1e-12
    frames = []
    for name, (kind, size) in estimators.items():
        est = np.zeros((n_draws, N, A))
        if kind == "grpo":
            cdf = np.cumsum(p, 1)
            cdf[:, -1] = 1.0
            u = rng.random((n_draws, N, size))
            draws = (u[..., None] > cdf[None, :, None, :]).sum(-1)  # [D, N, G]
            gr = np.take_along_axis(np.broadcast_to(r, (n_draws, N, A)), draws, 2)
            adv = grpo_advantages(torch.as_tensor(gr.reshape(-1, size))).numpy().reshape(gr.shape)
            # d/dz of (1/G) sum_i A_i log q(a_i) = (1/G) sum_i A_i (e_{a_i} - q)
            onehot = np.zeros((n_draws, N, size, A))
            np.put_along_axis(onehot, draws[..., None], 1.0, 3)
            est = (adv[..., None] * (onehot - p[None, :, None, :])).mean(2)
        elif kind == "fgpo-k":
            keys = rng.random((n_draws, N, A))
            kth = np.sort(keys, 2)[..., size - 1:size]
            mask = keys <= kth
            zk = np.where(mask, logp[None], -np.inf)
            zk = zk - zk.max(2, keepdims=True)
            qk = np.where(mask, np.exp(zk), 0.0)
            qk /= qk.sum(2, keepdims=True)
            Jk = (qk * r[None]).sum(2, keepdims=True)
            est = qk * (r[None] - Jk)
        else:
            raise ValueError(f"unknown estimator kind {kind!r}")
        g = np.broadcast_to(exact, est.shape)
        dot = (est * g).sum(2)
        ne = np.linalg.norm(est, axis=2)
        ng = np.linalg.norm(g, axis=2)
        zero = ne <= 1e-12
        cos = np.where(zero, 0.0, dot / np.maximum(ne * ng, 1e-300))
        scale = np.where(zero, 0.0, dot / np.maximum(ne ** 2, 1e-300))
        rel = (np.linalg.norm(scale[..., None] * est - g, axis=2) / np.maximum(ng, 1e-300)) ** 2
        d, q_idx = np.meshgrid(np.arange(n_draws), np.arange(N), indexing="ij")
        keep = np.broadcast_to(live[None, :], cos.shape)
        frames.append(pd.DataFrame({"estimator": name, "question": q_idx[keep], "draw": d[keep],
                                    "cosine": cos[keep], "zero": zero[keep], "rel_error": rel[keep]}))
    return pd.concat(frames, ignore_index=True)
