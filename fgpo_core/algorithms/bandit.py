"""A teaching bandit: exact versus sampled policy gradients with no model at all.

Each question ``s`` of a synthetic reward table gets its own vector of ``2**n``
logits (a tabular policy, ``q = softmax(logits[s])``), so the only thing that
differs between the arms is the gradient estimator, any of the registry's
(:data:`fgpo_core.core.registry.ESTIMATORS`, by method name), for instance:

* ``fgpo``: the exact objective over all ``2**n`` subsets (Eq. 2, 5);
* ``fgpo-k4``: the coverage dial, the same objective on ``k`` subsets drawn uniformly per visit,
  ``q`` renormalised over them (``k = 2**n`` is FGPO; its arms are labelled ``k-subset (k=...)``);
* ``grpo``: ``G`` actions sampled from the policy, group-normalised
  advantages (Eq. 3), with Eq. 1 or the paper's differential reward.

Training and the single-visit gradient study both run the registry's own losses (the study
differentiates them by autograd), so a newly registered estimator races here unchanged.

Every arm sees the same questions in the same order; what differs is how many
rewards each visit reads (``2**n``, ``k`` or ``G``). The tables are the synthetic
ones of :mod:`fgpo_core.table.synthetic` (shaped like the paper's GenomeQA
statistics; a stand-in, not data) or any real reward table.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from ..core.dead_groups import dead_group_probability
from ..core.estimators import entropy, fgpo_logit_gradient
from ..core.registry import Estimator
from ..core.settings import EstimatorSettings
from ..table.reward_table import RewardTable
from .loop import run_visits
from .methods import context, method_of, resolve_method, visit_gradient

__all__ = [
    "BANDIT_SETTINGS",
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
BANDIT_SETTINGS = EstimatorSettings(grpo_variant="paper")
"""The bandit's estimator settings: the library's, but Eq. 3's population standard deviation (the paper's)."""

_REWARDS = ("eq1", "binary", "differential")
_REWARD_LABELS = {"eq1": "Eq. 1", "binary": "Eq. 1", "differential": "differential"}


@dataclass
class BanditConfig:
    """One tabular training run (one arm of the teaching experiment)."""

    method: str = "fgpo"
    """Any method name of the estimator registry (:func:`~fgpo_core.core.method_names.parse_method`): ``fgpo``,
    the coverage dial ``fgpo-k4`` (k uniformly drawn subsets; k = 2**n is FGPO), ``grpo``, ``grpo-eq1``, ``rloo``,
    ``dapo``, ... with modifiers (``grpo-G16``)."""
    settings: EstimatorSettings = field(default_factory=lambda: BANDIT_SETTINGS)
    """What the estimator reads: ``G``, ``k``, ``reward`` (``eq1``, ``binary``: Eq. 1 with lambda = 0, or
    ``differential``; None: the estimator's own), its regularizer (None: FGPO's entropy bonus, none for the
    sampled ones, as in the paper), ``grpo_variant`` (the standard deviation of Eq. 3)."""
    epochs: int = 20
    """Passes over the questions; every arm visits each question once per epoch."""
    batch_size: int = 16
    """Questions per minibatch (the paper: 16 for FGPO)."""
    lr: float = 2.0
    """SGD step size per question visit (each question's logits move only when it is visited)."""
    eval_every: int = 25
    """Steps between full-table evaluations."""
    seed: int = 0
    """Seeds question order, sampling and nothing else: runs are deterministic."""

    @property
    def G(self) -> int:
        """The group size the arm trains with (its method name's ``-G``, else ``settings.G``)."""
        return self.resolved()[1].G

    @property
    def k(self) -> int | None:
        """The subsets per visit of a budgeted arm (``fgpo-k4``: 4), else ``settings.k``."""
        return self.resolved()[1].k

    def resolved(self) -> tuple[Estimator, EstimatorSettings, dict]:
        """The arm's estimator, its settings with the method name's modifiers applied, and the
        config fields a modifier sets (``lr``, ``epochs``). A modifier the bandit has no use for
        (a head's hidden units, a tool dropped) raises ValueError."""
        return resolve_method(self.method, self.settings, run_fields=("lr", "epochs"))

    def validate(self, n_actions: int) -> None:
        est, s, _ = self.resolved()
        reward = s.reward or est.reward
        if reward not in _REWARDS:
            raise ValueError(f"unknown reward {reward!r}; use one of {', '.join(_REWARDS)}")
        if self.epochs < 1 or self.batch_size < 1 or self.eval_every < 1:
            raise ValueError("epochs, batch_size and eval_every must be >= 1")
        if est.kind == "budgeted" and not 1 <= (s.k or 0) <= n_actions:
            raise ValueError(f"k must lie in 1..{n_actions}, got {s.k}")
        if est.kind == "sampled" and s.G < 2:
            raise ValueError(f"{est.name} needs G >= 2, got {s.G}")
        if self.lr <= 0:
            raise ValueError("lr must be > 0")

    @property
    def estimator_family(self) -> str:
        """The arm's estimator in :data:`fgpo_core.core.registry.ESTIMATORS`."""
        return self.resolved()[0].name

    @property
    def name(self) -> str:
        est, s, _ = self.resolved()
        reward = s.reward or est.reward
        if est.name == "fgpo" and self.method == "fgpo":
            return "FGPO"
        if est.name == "fgpo-k":
            return f"k-subset (k={s.k})"
        if est.name in ("grpo", "grpo-eq1"):
            return f"GRPO ({_REWARD_LABELS[reward]}, G={s.G})"
        if est.kind == "sampled":  # RLOO (differential, G=6); GRPO (clipped ratio; differential, G=6)
            detail = f"{_REWARD_LABELS.get(reward, reward)}, G={s.G}"
            return f"{est.label[:-1]}; {detail})" if est.label.endswith(")") else f"{est.label} ({detail})"
        return est.label.format(s.k) if est.dial else (est.label if self.method == est.name else self.method)


_dataclass_init = BanditConfig.__init__


def _init_with_older_spelling(
    self, *args, k=None, reward=None, group_size=None, beta=None, grpo_variant=None, **kwargs
):
    """``BanditConfig(method="fgpo-k", k=4)``, ``BanditConfig(method="grpo", reward="eq1", group_size=6)``: the
    chapter's earlier spelling, its values put into ``settings`` (``beta``: the entropy weight)."""
    _dataclass_init(self, *args, **kwargs)
    older = {"k": k, "reward": reward, "G": group_size, "weight": beta, "grpo_variant": grpo_variant}
    older = {f: v for f, v in older.items() if v is not None}
    if older:
        self.settings = replace(self.settings, **older)


BanditConfig.__init__ = _init_with_older_spelling


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
    plain SGD: the arm's estimator (:meth:`BanditConfig.resolved`) logs its visit telemetry in
    percent (``best_seen``; for GRPO ``dead_observed``, the groups whose ``G`` rewards are all
    equal: TRL's ``frac_reward_zero_std``), then the step's loss, the batch's expected Eq. 1
    reward and entropy. Every ``eval_every`` steps it logs :func:`policy_metrics` over the table.
    """
    N, A = table.n_questions, table.n_actions
    config.validate(A)
    est, settings, run = config.resolved()
    lr, epochs = run.get("lr", config.lr), run.get("epochs", config.epochs)
    gen = torch.Generator().manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    train_r = torch.as_tensor(table.rewards(settings.reward or est.reward), dtype=torch.float64)
    eq1_r = torch.as_tensor(table.rewards("eq1"), dtype=torch.float64)
    logits = torch.zeros(N, A, dtype=torch.float64, requires_grad=True)
    # plain SGD: the loss is a batch mean, so scale the rate to one step per visited question
    opt = torch.optim.SGD([logits], lr=lr * config.batch_size)
    per_epoch = -(-N // config.batch_size) * settings.updates  # optimiser steps per epoch
    ctx = context(est, settings, eq1_r)
    evals = []

    def evaluate(step: int, state) -> None:
        with torch.no_grad():
            probs = torch.softmax(logits, 1).numpy()
        evals.append(
            {
                "step": step,
                "epoch": step / per_epoch,
                "reward_evaluations": state.n_reward,
                **policy_metrics(probs, table, settings.G),
            }
        )

    def after_step(idx, state) -> dict:
        with torch.no_grad():
            q = torch.softmax(logits[idx], 1)
            return {"J": float((q * eq1_r[idx]).sum(1).mean()), "entropy": float(entropy(q).mean())}

    bar = tqdm(total=epochs * per_epoch, desc=config.name, disable=not progress, leave=False)
    state = run_visits(
        est,
        lambda idx: logits[idx],
        train_r,
        ctx,
        opt,
        epochs,
        config.batch_size,
        rng,
        gen,
        config.eval_every,
        evaluate,
        after_step,
        n_tools=table.space.n_tools,
        on_step=lambda step: bar.update(),
    )
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
            per_epoch = -(-self.table.n_questions // r.config.batch_size) * r.config.resolved()[1].updates
            out.append(r.steps.assign(arm=a, run=i, epoch=r.steps["step"] / per_epoch))
        return pd.concat(out, ignore_index=True)

    def summary(self) -> pd.DataFrame:
        """Per arm (rows in race order), means over runs of: greedy accuracy after the
        first epoch and at the end, final J, tools, entropy, top-action mass, closed-form
        dead-group rate at G=6, dead mass on wrong answers, and reward look-ups."""
        ev = self.evals
        final = ev.sort_values("step").groupby(["arm", "run"]).tail(1).groupby("arm")
        first_epoch = ev[ev.epoch >= 1].sort_values("step").groupby(["arm", "run"]).head(1).groupby("arm")
        return pd.DataFrame(
            {
                "accuracy after 1 epoch (%)": first_epoch["accuracy"].mean(),
                "final accuracy (%)": final["accuracy"].mean(),
                "final J (Eq. 1)": final["J"].mean(),
                "tools / question": final["tools"].mean(),
                "entropy (nats)": final["entropy"].mean(),
                "top-action mass": final["top_mass"].mean(),
                "dead at G=6 (%)": final["dead_G6"].mean(),
                "dead mass on wrong answers (%)": final["dead_wrong_share"].mean(),
                "reward look-ups": final["reward_evaluations"].mean(),
            }
        ).loc[self.order]

    def final_policy(self, arm: str, run: int = 0) -> np.ndarray:
        return self.runs[(arm, run)].probs


def run_race(
    table: RewardTable, arms: list[BanditConfig], n_seeds: int = 1, seed: int = 0, progress: bool = False
) -> Race:
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
def gradient_estimator_study(
    probs: np.ndarray,
    rewards: np.ndarray,
    estimators: dict,
    n_draws: int = 200,
    seed: int = 0,
    settings: EstimatorSettings = BANDIT_SETTINGS,
) -> pd.DataFrame:
    """Compare single-visit gradient estimates with the exact logit gradient (Eq. 8).

    For every question (row of ``probs``, ``rewards``) and ``n_draws`` visits, each estimator
    ``name -> method`` (any method name of the registry: ``grpo-G6``, ``fgpo-k4``, ``rloo``; or the
    older ``("grpo", G)``, ``("fgpo-k", k)``) visits the question once, with the scores
    ``log probs`` and the given rewards, and its logit gradient is the registry's loss differentiated
    by autograd (:func:`~fgpo_core.algorithms.methods.visit_gradient`) under ``settings`` with no
    regularizer; the exact one is ``q (r - J)`` (beta = 0). Returns one row per (estimator, question,
    draw) with the cosine similarity to the exact gradient (0 for a zero estimate), whether the
    estimate is zero, and the relative squared error ``||g_hat - g||^2 / ||g||^2`` of the estimate
    rescaled by the least-squares factor (so GRPO's normalisation does not count against it).
    Questions whose exact gradient is zero are skipped.
    """
    gen = torch.Generator().manual_seed(seed)
    p = np.asarray(probs, dtype=float)
    r = torch.as_tensor(np.asarray(rewards, dtype=float))
    N, A = p.shape
    logp = torch.as_tensor(np.log(np.clip(p, 1e-300, None)))
    exact = fgpo_logit_gradient(logp, r).numpy()
    live = np.linalg.norm(exact, axis=1) > 1e-12
    frames = []
    for name, method in estimators.items():
        est, s, _ = resolve_method(
            method_of(*method) if isinstance(method, tuple) else method, replace(settings, regularizer="none")
        )
        ctx = context(est, s, r)
        rows = torch.arange(N).repeat(n_draws)  # every draw of every question in one visit
        if est.candidates is not None:  # a shortlist: its candidates from the policy
            ctx.candidates = torch.as_tensor(
                est.candidates(None, p, r.numpy(), int(np.log2(A)), s.k, np.random.default_rng(seed))
            )[rows]
        bctx = replace(ctx, idx=rows, optimal=ctx.optimal[rows])
        g_hat, _ = visit_gradient(est, logp[rows], r[rows], gen, bctx)
        est_g = g_hat.numpy().reshape(n_draws, N, A)
        g = np.broadcast_to(exact, est_g.shape)
        dot = (est_g * g).sum(2)
        ne = np.linalg.norm(est_g, axis=2)
        ng = np.linalg.norm(g, axis=2)
        zero = ne <= 1e-12
        cos = np.where(zero, 0.0, dot / np.maximum(ne * ng, 1e-300))
        scale = np.where(zero, 0.0, dot / np.maximum(ne**2, 1e-300))
        rel = (np.linalg.norm(scale[..., None] * est_g - g, axis=2) / np.maximum(ng, 1e-300)) ** 2
        d, q_idx = np.meshgrid(np.arange(n_draws), np.arange(N), indexing="ij")
        keep = np.broadcast_to(live[None, :], cos.shape)
        frames.append(
            pd.DataFrame(
                {
                    "estimator": name,
                    "question": q_idx[keep],
                    "draw": d[keep],
                    "cosine": cos[keep],
                    "zero": zero[keep],
                    "rel_error": rel[keep],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
