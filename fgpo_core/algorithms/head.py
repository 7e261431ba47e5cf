"""Training the policy-head selector with every estimator the book compares, from the reward table.

One loop (:func:`fgpo_core.algorithms.loop.run_visits`), one method per run (:data:`METHODS`, each an
estimator of :data:`fgpo_core.core.registry.ESTIMATORS`), everything else shared: the same questions in
the same order (per seed), minibatches of ``batch_size`` questions, Adam with a cosine schedule,
the same number of question visits, and the head kept at its best dev evaluation. What differs
is how a visit turns rewards into a gradient (:mod:`fgpo_core.core.estimators`):

* ``fgpo``: the exact objective over all ``2**n`` subsets (Eq. 2, 5), Eq. 1 rewards;
* ``fgpo-k<k>``: the coverage dial, ``k`` subsets drawn uniformly per visit, q renormalised;
* ``shortlist-top<K>`` and ``shortlist-grow<K>``: exact optimisation inside a compact candidate
  set of ``K`` subsets per question, rebuilt from the current policy at every epoch (the paper's
  future work for large libraries; :func:`shortlist_top`, :func:`shortlist_grow`);
* ``grpo``: ``G`` subsets drawn from q, the paper's differential reward, group-normalised
  advantages as TRL computes them (Eq. 3); ``grpo-eq1``: the same on Eq. 1 rewards;
* ``rloo``: the same draws and reward, leave-one-out baselines (``rloo-kl``: with KL(q || uniform));
* ``grpo-clip`` and ``gspo``: GRPO's draws with PPO's clipped ratio per action, or GSPO's
  sequence-level ratio, ``-u<n>`` optimiser updates per draw (TRL's ``num_iterations``);
* ``dapo``: GRPO with DAPO's dynamic sampling: dead groups are drawn again (up to ``max_draws``
  groups) and those still dead are dropped; every draw is paid for;
* ``sft``: cross-entropy to each question's reward-optimal subset (Eq. 1);
* ``dpo``: the reward-optimal subset preferred over the worst (``dpo_beta``), the initial
  (uniform) policy as reference.

A method name may carry modifiers after its base name, each ``-<key><value>``, so that an
ablation is one more name in ``fgpo study --methods`` (:func:`parse_method`, generated from
:data:`fgpo_core.core.method_names.MODIFIERS`; :func:`train_head` applies them itself):
``-lambda0.05`` (Eq. 1's lambda), ``-ent0.03``, ``-klu0.05``, ``-klr0.05``, ``-noreg`` (any
estimator's regularizer), ``-beta0.01`` (the entropy bonus, as ``-ent``; DPO's beta for ``dpo``), ``-T0.7``
(listwise temperature of q), ``-G16`` (group size), ``-h64`` (hidden units), ``-e8`` (epochs),
``-clip0.1`` and ``-u4`` (a clipped ratio's range, updates per draw), ``-n250`` (only the first
250 training questions), ``-noT3`` (the library without tool 3,
retrained on the table restricted to the other tools) and ``-lr0.1`` (a fixed learning rate,
outside the study's sweep).

Methods joined by ``+`` are stages of post-training (:func:`parse_stages`): ``sft-e4+fgpo-e16``
trains SFT for 4 epochs, freezes that head and trains FGPO for 16 epochs in a fresh head stacked
on it (the analogue of merging an SFT adapter and training a fresh RL adapter).

Telemetry per step: J (Eq. 1 under q), entropy, top-action mass, tools of the argmax, the
closed-form dead-group probability of the current policy at ``G`` (Eq. 7) under Eq. 1 classes
and under the differential reward, the observed dead fraction of the sampled methods, the share
of visits whose evaluated subsets included one of the question's Eq. 1-optimal subsets
(``best_seen``), the reward evaluations used so far and the reasoner calls they cost
(``reward_calls``: distinct (question, subset) pairs, each paid once, as a shared cache of the
reasoner's answers would bill them; for ``dapo`` only its kept groups are counted, a lower bound).
"""

from __future__ import annotations

import copy
import math
from dataclasses import InitVar, dataclass, field

import numpy as np
import pandas as pd
import torch

from ..core.dead_groups import dead_group_probability
from ..core.estimators import entropy
from ..core.method_names import METHODS, MethodSpec, method_kind, parse_method, parse_stages
from ..core.registry import resolve_regularizer
from ..core.schedules import cosine_schedule
from ..core.settings import EstimatorSettings, with_flat_keys
from ..core.shortlists import shortlist_grow, shortlist_top
from ..selectors.head import PolicyHead, StackedHead
from .loop import run_visits, visit_context

__all__ = [
    "METHODS",
    "HeadConfig",
    "HeadRun",
    "MethodSpec",
    "train_head",
    "method_kind",
    "parse_method",
    "parse_stages",
    "policy_telemetry",
    "shortlist_top",
    "shortlist_grow",
]


@dataclass
class HeadConfig:
    """One training run of the policy-head selector."""

    method: str = "fgpo"
    """An estimator of :data:`METHODS` (``fgpo-k<k>``: the coverage dial at k)."""
    lr: float = 1e-2
    """Peak learning rate of Adam (cosine decay to zero)."""
    epochs: int = 20
    """Passes over the training questions (the same question visits for every method)."""
    batch_size: int = 16
    """Questions per minibatch (the paper: 16)."""
    hidden: int = 0
    """Hidden units of the head (0: a linear head)."""
    temperature: float = 1.0
    """Listwise temperature of q."""
    lam: float = 0.10
    """Parsimony weight lambda of Eq. 1 (the rewards FGPO, SFT, DPO and grpo-eq1 use)."""
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    """What the estimator and its regularizer read (G, clip, updates, DPO's beta, the regularizer);
    the method name's modifiers override it."""
    weight_decay: float = 0.0
    """Adam's decoupled weight decay."""
    eval_every: int = 0
    """Optimiser steps between dev evaluations (0: once per epoch)."""
    telemetry_G: int = 6
    """Group size of the closed-form dead-group telemetry."""
    seed: int = 0
    """Seeds the question order, the draws and the head's initialisation."""
    beta: InitVar[float | None] = None
    G: InitVar[int | None] = None
    max_draws: InitVar[int | None] = None
    dpo_beta: InitVar[float | None] = None

    def __post_init__(self, beta, G, max_draws, dpo_beta):
        """The flat keywords of older configs (``beta``, ``G``, ``max_draws``, ``dpo_beta``) go into ``settings``."""
        self.settings = with_flat_keys(self.settings, beta, G, max_draws, dpo_beta)


@dataclass
class HeadRun:
    """A finished run: its config, the kept head, the step and dev logs, reward evaluations."""

    config: HeadConfig
    head: PolicyHead
    steps: pd.DataFrame
    dev: pd.DataFrame
    best_step: int
    reward_evaluations: int
    extra: dict = field(default_factory=dict)

    def q(self, features: np.ndarray) -> np.ndarray:
        """The kept policy on ``features`` ``[N, d]``: ``[N, 2**n]``."""
        with torch.no_grad():
            return torch.softmax(self.head(torch.as_tensor(features, dtype=torch.float32)), -1).double().numpy()


def policy_telemetry(
    q: np.ndarray, correct: np.ndarray, r_eq1: np.ndarray, r_diff: np.ndarray, sizes: np.ndarray, G: int = 6
) -> dict:
    """What a policy ``q [B, A]`` looks like on its questions: J, entropy, top mass, tools and the
    closed-form dead-group probability (%) at ``G`` under Eq. 1 and differential classes."""
    qt = torch.as_tensor(q)
    top = q.argmax(1)
    return {
        "J": float((q * r_eq1).sum(1).mean()),
        "entropy": float(entropy(qt).mean()),
        "top_mass": float(q.max(1).mean()),
        "tools": float(sizes[top].mean()),
        "accuracy": 100.0 * float(correct[np.arange(len(q)), top].mean()),
        "dead_eq1": 100.0 * float(dead_group_probability(q, r_eq1, G).mean()),
        "dead_differential": 100.0 * float(dead_group_probability(q, r_diff, G).mean()),
    }


def _rewards(table, lam: float) -> tuple[np.ndarray, np.ndarray]:
    return np.array(table.rewards("eq1", lam=lam)), np.array(table.rewards("differential"))


def train_head(
    train_x: np.ndarray,
    train_table,
    dev_x: np.ndarray,
    dev_table,
    config: HeadConfig,
    progress: bool = False,
    snapshot_steps=(),
    base: torch.nn.Module | None = None,
    keep: str = "best",
    policy: torch.nn.Module | None = None,
) -> HeadRun:
    """Train one policy head; deterministic under ``config.seed``. ``*_x`` are the questions'
    prompt features ``[N, d]`` in the order of the tables' rows. The method name's modifiers are
    applied here (``fgpo-lambda0-G2`` trains as its name says, ``HeadRun.config`` holds the result);
    the run-level ones (``-n``, ``-noT``) are the caller's to apply (:func:`fgpo_core.experiments.study`).

    ``snapshot_steps``: optimiser steps after which a frozen copy of the head is kept, in
    ``HeadRun.extra["snapshots"]`` (``{step: head}``), for checkpoint curves.
    ``base``: a trained head to build on (a later stage of post-training): it is frozen and a
    fresh head of ``config.hidden`` units is stacked on it (:class:`~fgpo_core.selectors.head.StackedHead`).
    ``keep``: ``"best"`` keeps the head at its best dev evaluation (highest dev accuracy, then J,
    then the earlier step), ``"last"`` the final one.
    ``policy``: the trainable module mapping features to candidate scores ``[N, 2**n]`` (default: a
    :class:`~fgpo_core.selectors.head.PolicyHead` of ``config.hidden`` units and temperature); it is
    trained in double precision in place and returned in single precision."""
    from tqdm.auto import tqdm

    spec = parse_method(config.method)
    config = spec.config(config)
    est, k, settings = spec.estimator, spec.k, config.settings
    if settings.k != k:
        raise ValueError(
            f"{config.method}: a budget per visit is a dial's number in the method name "
            f"(fgpo-k{settings.k}), not a setting"
        )
    snapshot_steps, snapshots = set(int(x) for x in snapshot_steps), {}
    if keep not in ("best", "last"):
        raise ValueError(f"keep must be 'best' or 'last', got {keep!r}")
    N, A = train_table.correct.shape
    if len(train_x) != N or len(dev_x) != dev_table.n_questions:
        raise ValueError("features and table rows must align")
    if k is not None and not 1 <= k <= A:
        raise ValueError(f"{'coverage k' if spec.base == 'fgpo' else 'shortlist K'} must lie in 1..{A}, got {k}")
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    trained = (
        policy if policy is not None else PolicyHead(train_x.shape[1], A, config.hidden, config.temperature)
    ).double()
    opt = torch.optim.AdamW(trained.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    head = trained if base is None else StackedHead(copy.deepcopy(base).double(), trained)
    n_batches = math.ceil(N / config.batch_size) * settings.updates  # optimiser steps per epoch
    total = n_batches * config.epochs
    sched = cosine_schedule(opt, total)
    X = torch.as_tensor(train_x, dtype=torch.float64)
    DX = torch.as_tensor(dev_x, dtype=torch.float64)
    r_eq1, r_diff = (torch.as_tensor(r) for r in _rewards(train_table, config.lam))
    dev_r1, dev_rd = _rewards(dev_table, config.lam)
    sizes = train_table.space.sizes
    reference = None
    if resolve_regularizer(est, settings)[0].needs_reference:  # the policy at the start of training
        with torch.no_grad():
            reference = torch.log_softmax(head(X), -1)
    ctx = visit_context(est, r_eq1, settings=settings, reference=reference)
    dev_rows, best = [], {"key": None, "state": None}

    def evaluate(step: int, state) -> None:
        with torch.no_grad():
            q = torch.softmax(head(DX), -1).numpy()
        row = {
            "step": step,
            "epoch": step / n_batches,
            "reward_evaluations": state.n_reward,
            "reward_calls": int(state.paid.sum()),
            **policy_telemetry(q, dev_table.correct, dev_r1, dev_rd, sizes, config.telemetry_G),
        }
        dev_rows.append(row)
        key = (row["accuracy"], row["J"], -step) if keep == "best" else (step, 0.0, -step)
        if best["key"] is None or key > best["key"]:
            best["key"], best["state"] = key, {n: p.detach().clone() for n, p in trained.state_dict().items()}

    def after_step(idx, state) -> dict:
        with torch.no_grad():
            q = torch.softmax(head(X[idx]), -1).numpy()
        return {
            "reward_evaluations": state.n_reward,
            "reward_calls": int(state.paid.sum()),
            **policy_telemetry(
                q, train_table.correct[idx.numpy()], r_eq1[idx].numpy(), r_diff[idx].numpy(), sizes, config.telemetry_G
            ),
        }

    bar = tqdm(total=total, desc=config.method, disable=not progress, leave=False)

    def on_step(step: int) -> None:
        if step in snapshot_steps:
            snapshots[step] = copy.deepcopy(head).float().eval()
        bar.update()

    reward = settings.reward or est.reward
    state = run_visits(
        est,
        lambda idx: head(X[idx]),
        r_eq1 if reward == "eq1" else r_diff,
        ctx,
        opt,
        config.epochs,
        config.batch_size,
        rng,
        gen,
        config.eval_every,
        evaluate,
        after_step,
        row_start=lambda epoch, b: {"visits": epoch * N + min((b + 1) * config.batch_size, N)},
        sched=sched,
        n_tools=train_table.n_tools,
        on_step=on_step,
    )
    bar.close()
    trained.load_state_dict(best["state"])
    return HeadRun(
        config,
        head.float(),
        pd.DataFrame(state.steps),
        pd.DataFrame(dev_rows),
        -best["key"][2],
        state.n_reward,
        {"snapshots": snapshots, "reward_calls": int(state.paid.sum())},
    )
