"""Training the policy-head selector with every estimator the book compares, from the reward table.

One loop, one method per run (:data:`METHODS`), everything else shared: the same questions in
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
* ``rloo``: the same draws and reward, leave-one-out baselines;
* ``dapo``: GRPO with DAPO's dynamic sampling: dead groups are drawn again (up to ``max_draws``
  groups) and those still dead are dropped; every draw is paid for;
* ``sft``: cross-entropy to each question's reward-optimal subset (Eq. 1);
* ``dpo``: the reward-optimal subset preferred over the worst (``dpo_beta``), the initial
  (uniform) policy as reference.

A method name may carry modifiers after its base name, each ``-<key><value>``, so that an
ablation is one more name in ``fgpo study --methods`` (:func:`parse_method`): ``-lambda0.05``
(Eq. 1's lambda), ``-beta0.01`` (FGPO's entropy bonus; DPO's beta for ``dpo``), ``-T0.7``
(listwise temperature of q), ``-G16`` (group size), ``-h64`` (hidden units), ``-e8`` (epochs),
``-n250`` (only the first 250 training questions), ``-noT3`` (the library without tool 3,
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
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ..core.dead_groups import dead_group_probability
from ..core.estimators import (BETA, coverage_mask, dead_group_mask, draw_groups, draw_live_groups, entropy,
                               fgpo_loss, grpo_advantages, policy_gradient_loss, rloo_advantages)
from ..selectors.head import PolicyHead, StackedHead
from .common import cosine_schedule
from .imitation import dpo_pairs

__all__ = ["METHODS", "SHORTLISTS", "HeadConfig", "HeadRun", "MethodSpec", "train_head", "method_kind",
           "parse_method", "parse_stages", "policy_telemetry", "shortlist_top", "shortlist_grow"]

METHODS = ("fgpo", "grpo", "grpo-eq1", "rloo", "dapo", "sft", "dpo", "fgpo-k1", "fgpo-k2", "fgpo-k4", "fgpo-k8",
           "shortlist-top16", "shortlist-grow16")
"""The method names of ``fgpo study`` (``fgpo-k<k>`` takes any k in 1..2**n, and the shortlists any K)."""

SHORTLISTS = ("shortlist-top", "shortlist-grow")
"""The two constructions of a compact candidate set (``<name><K>``)."""


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
    beta: float = BETA
    """Entropy bonus of the exact objective (FGPO and the coverage dial; Eq. 5)."""
    lam: float = 0.10
    """Parsimony weight lambda of Eq. 1 (the rewards FGPO, SFT, DPO and grpo-eq1 use)."""
    G: int = 6
    """Group size of the sampled methods (the paper: 6)."""
    max_draws: int = 4
    """Dynamic sampling: groups drawn per question at most before a dead one is dropped."""
    dpo_beta: float = 0.3
    """DPO's beta (the paper: 0.3)."""
    weight_decay: float = 0.0
    """Adam's decoupled weight decay."""
    eval_every: int = 0
    """Optimiser steps between dev evaluations (0: once per epoch)."""
    telemetry_G: int = 6
    """Group size of the closed-form dead-group telemetry."""
    seed: int = 0
    """Seeds the question order, the draws and the head's initialisation."""


_MODIFIERS = {"lr": ("lr", float), "lambda": ("lam", float), "beta": ("beta", float), "T": ("temperature", float),
              "G": ("G", int), "h": ("hidden", int), "e": ("epochs", int), "n": ("n_train", int),
              "noT": ("drop_tool", int)}
_NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"


@dataclass(frozen=True)
class MethodSpec:
    """A parsed method name: the estimator, its coverage ``k``, the :class:`HeadConfig` fields it
    overrides, and the two run-level modifiers (training questions kept, tool dropped, 1-based)."""

    name: str
    base: str
    k: int | None
    overrides: dict
    n_train: int | None = None
    drop_tool: int | None = None

    def config(self, base: "HeadConfig") -> "HeadConfig":
        """``base`` with this method's name and overrides."""
        from dataclasses import replace

        return replace(base, method=self.name, **self.overrides)


def parse_method(method: str) -> MethodSpec:
    """Parse ``<base>[-<modifier>...]`` (see the module docstring); a bad name raises ValueError."""
    if not isinstance(method, str):
        raise ValueError(f"a method name is a string, got {method!r}")
    hint = f"use one of {', '.join(METHODS)} (fgpo-k<k>, shortlist-top<K>, shortlist-grow<K> for any k, K), " \
        "optionally with modifiers " + \
        " ".join(f"-{k}<value>" for k in _MODIFIERS)
    bases = sorted(METHODS, key=len, reverse=True)
    m = re.match(r"(fgpo-k|shortlist-top|shortlist-grow)(\d+)(?=-|$)", method)
    base = ("fgpo" if m.group(1) == "fgpo-k" else m.group(1)) if m else \
        next((b for b in bases if method == b or method.startswith(b + "-")), None)
    if base is None:
        raise ValueError(f"unknown method {method!r}; {hint}")
    k = int(m.group(2)) if m else None
    if m and k < 1:
        raise ValueError(f"{method!r}: the number of subsets per question must be at least 1")
    rest = method[m.end() if m else len(base):]
    overrides, run = {}, {"n_train": None, "drop_tool": None}
    for part in [x for x in rest.split("-") if x] if rest else []:
        mm = re.fullmatch(r"(lambda|beta|noT|lr|T|G|h|e|n)" + _NUMBER, part)
        if not mm:
            raise ValueError(f"unknown modifier {part!r} in method {method!r}; {hint}")
        field_name, cast = _MODIFIERS[mm.group(1)]
        if cast is int and not mm.group(2).isdigit():
            raise ValueError(f"modifier -{mm.group(1)} takes a whole number, got {part!r} in {method!r}")
        value = cast(mm.group(2))
        if field_name == "beta" and base == "dpo":
            field_name = "dpo_beta"
        if field_name in run:
            run[field_name] = value
        else:
            overrides[field_name] = value
    if rest and not rest.startswith("-"):
        raise ValueError(f"unknown method {method!r}; {hint}")
    if run["n_train"] is not None and run["n_train"] < 1:
        raise ValueError(f"-n keeps at least one training question, got {method!r}")
    if run["drop_tool"] is not None and run["drop_tool"] < 1:
        raise ValueError(f"-noT names a tool from 1, got {method!r}")
    return MethodSpec(method, base, k, overrides, **run)


def parse_stages(method: str) -> list[MethodSpec]:
    """The stages of a ``+``-joined method (one stage for a plain method). The training data and
    the library (``-n``, ``-noT``) belong to the whole pipeline: only its first stage may set them."""
    if not isinstance(method, str) or not method:
        raise ValueError(f"a method name is a non-empty string, got {method!r}")
    stages = [parse_method(p) for p in method.split("+")]
    for st in stages[1:]:
        if st.n_train is not None or st.drop_tool is not None:
            raise ValueError(f"{method!r}: -n and -noT apply to the whole pipeline; put them on its first stage")
    return stages


def method_kind(method: str) -> tuple[str, int | None]:
    """``(family, k)`` of a method name: ``("fgpo", k)`` for the coverage dial, ``(shortlist, K)``
    for a shortlist, else ``(base, None)``; modifiers are allowed and ignored."""
    spec = parse_method(method)
    return spec.base, spec.k


def shortlist_top(q: np.ndarray, K: int, rng: np.random.Generator) -> np.ndarray:
    """The policy's top candidates plus a few uniform draws: per question the ``K - u`` subsets
    of highest q and ``u = K // 4`` (at least one when ``K > 1``) drawn uniformly from the
    rest, so the set keeps exploring; boolean ``[N, A]``."""
    N, A = q.shape
    if not 1 <= K <= A:
        raise ValueError(f"K must lie in 1..{A}, got {K}")
    u = max(1, K // 4) if 1 < K < A else 0
    out = np.zeros((N, A), dtype=bool)
    top = np.argsort(-q, axis=1, kind="stable")[:, :K - u]
    out[np.arange(N)[:, None], top] = True
    for i in range(N):
        if u:
            out[i, rng.choice(np.flatnonzero(~out[i]), u, replace=False)] = True
    return out


def shortlist_grow(prev: np.ndarray | None, q: np.ndarray, rewards: np.ndarray, n_tools: int, K: int,
                   keep: int = 2, rng: np.random.Generator | None = None) -> np.ndarray:
    """Greedy growth through the subset lattice: per question, the ``keep`` best subsets of the
    previous shortlist by their (already paid) reward, ties broken by q, and every subset one
    tool away from them (one tool added or removed), the most likely under q first, up to ``K``.
    The first shortlist (``prev=None``) is the empty subset and the single tools, by q.
    Remaining ties (as under a uniform policy) are broken at random with ``rng``; without it,
    by the lower mask.
    Boolean ``[N, A]``; only rewards inside ``prev`` are read."""
    N, A = q.shape
    if not 1 <= K <= A:
        raise ValueError(f"K must lie in 1..{A}, got {K}")
    flips = 1 << np.arange(n_tools)
    out = np.zeros((N, A), dtype=bool)
    for i in range(N):
        jitter = rng.random(A) if rng is not None else np.zeros(A)
        if prev is None:
            cands = np.concatenate([[0], flips])
            best = np.array([], dtype=int)
        else:
            inside = np.flatnonzero(prev[i])
            order = np.lexsort((jitter[inside], -q[i, inside], -rewards[i, inside]))  # reward, then q
            best = inside[order[:keep]]
            cands = np.unique(np.concatenate([best, (best[:, None] ^ flips[None, :]).ravel()]))
        rest = np.setdiff1d(cands, best)
        rest = rest[np.lexsort((jitter[rest], -q[i, rest]))]
        chosen = np.concatenate([best, rest])[:K]
        if len(chosen) < K:  # a small neighbourhood: fill with the policy's next most likely subsets
            taken = set(chosen.tolist())
            extra = [a for a in np.lexsort((jitter, -q[i])) if a not in taken]
            chosen = np.concatenate([chosen, extra[:K - len(chosen)]])
        out[i, chosen.astype(int)] = True
    return out


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
            return self.head.q(torch.as_tensor(features, dtype=torch.float32)).double().numpy()


def policy_telemetry(q: np.ndarray, correct: np.ndarray, r_eq1: np.ndarray, r_diff: np.ndarray, sizes: np.ndarray,
                     G: int = 6) -> dict:
    """What a policy ``q [B, A]`` looks like on its questions: J, entropy, top mass, tools and the
    closed-form dead-group probability (%) at ``G`` under Eq. 1 and differential classes."""
    qt = torch.as_tensor(q)
    top = q.argmax(1)
    return {"J": float((q * r_eq1).sum(1).mean()), "entropy": float(entropy(qt).mean()),
            "top_mass": float(q.max(1).mean()), "tools": float(sizes[top].mean()),
            "accuracy": 100.0 * float(correct[np.arange(len(q)), top].mean()),
            "dead_eq1": 100.0 * float(dead_group_probability(q, r_eq1, G).mean()),
            "dead_differential": 100.0 * float(dead_group_probability(q, r_diff, G).mean())}


def _rewards(table, lam: float) -> tuple[np.ndarray, np.ndarray]:
    return np.array(table.rewards("eq1", lam=lam)), np.array(table.rewards("differential"))


def train_head(train_x: np.ndarray, train_table, dev_x: np.ndarray, dev_table, config: HeadConfig,
               progress: bool = False, snapshot_steps=(), base: torch.nn.Module | None = None,
               keep: str = "best") -> HeadRun:
    """Train one policy head; deterministic under ``config.seed``. ``*_x`` are the questions'
    prompt features ``[N, d]`` in the order of the tables' rows. The run-level modifiers of the
    method name (``-n``, ``-noT``) are the caller's to apply (:func:`fgpo_core.experiments.study`).

    ``snapshot_steps``: optimiser steps after which a frozen copy of the head is kept, in
    ``HeadRun.extra["snapshots"]`` (``{step: head}``), for checkpoint curves.
    ``base``: a trained head to build on (a later stage of post-training): it is frozen and a
    fresh head of ``config.hidden`` units is stacked on it (:class:`~fgpo_core.selectors.head.StackedHead`).
    ``keep``: ``"best"`` keeps the head at its best dev evaluation, ``"last"`` the final one."""
    from tqdm.auto import tqdm

    kind, k = method_kind(config.method)
    snapshot_steps, snapshots = set(int(x) for x in snapshot_steps), {}
    if keep not in ("best", "last"):
        raise ValueError(f"keep must be 'best' or 'last', got {keep!r}")
    N, A = train_table.correct.shape
    if len(train_x) != N or len(dev_x) != dev_table.n_questions:
        raise ValueError("features and table rows must align")
    if k is not None and not 1 <= k <= A:
        raise ValueError(f"{'coverage k' if kind == 'fgpo' else 'shortlist K'} must lie in 1..{A}, got {k}")
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    head = PolicyHead(train_x.shape[1], A, config.hidden, config.temperature).double()
    opt = torch.optim.AdamW(head.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    trained = head
    if base is not None:
        head = StackedHead(copy.deepcopy(base).double(), trained)
    n_batches = math.ceil(N / config.batch_size)
    total = n_batches * config.epochs
    sched = cosine_schedule(opt, total)
    X = torch.as_tensor(train_x, dtype=torch.float64)
    DX = torch.as_tensor(dev_x, dtype=torch.float64)
    r_eq1, r_diff = (torch.as_tensor(r) for r in _rewards(train_table, config.lam))
    dev_r1, dev_rd = _rewards(dev_table, config.lam)
    sizes = train_table.space.sizes
    targets = torch.as_tensor(train_table.rewards("eq1", lam=config.lam).argmax(1))
    optimal = r_eq1 == r_eq1.max(1, keepdim=True).values  # each question's Eq. 1-optimal subsets (ties kept)
    pairs = {i: (c, r) for i, c, r in dpo_pairs(train_table.rewards("eq1", lam=config.lam))}
    train_r = r_eq1 if kind in ("fgpo", "grpo-eq1") + SHORTLISTS else r_diff
    every = config.eval_every or n_batches
    steps, dev_rows, n_reward = [], [], 0
    paid = np.zeros((N, A), dtype=bool)  # the (question, subset) pairs whose reward was read: reasoner calls
    if kind in ("sft", "dpo"):
        paid[:] = True  # their targets are the table's optimal (and worst) subsets: the whole table
    shortlist = None
    r_np = train_r.numpy()
    best_state, best_key = None, None

    def evaluate(step: int) -> None:
        nonlocal best_state, best_key
        with torch.no_grad():
            q = head.q(DX).numpy()
        row = {"step": step, "epoch": step / n_batches, "reward_evaluations": n_reward,
               "reward_calls": int(paid.sum()),
               **policy_telemetry(q, dev_table.correct, dev_r1, dev_rd, sizes, config.telemetry_G)}
        dev_rows.append(row)
        key = (row["accuracy"], row["J"], -step) if keep == "best" else (step, 0.0, -step)
        if best_key is None or key > best_key:
            best_key, best_state = key, {n: p.detach().clone() for n, p in trained.state_dict().items()}

    evaluate(0)
    step = 0
    bar = tqdm(total=total, desc=config.method, disable=not progress, leave=False)
    for _epoch in range(config.epochs):
        order = rng.permutation(N)
        if kind in SHORTLISTS:  # rebuilt from the current policy once per epoch
            with torch.no_grad():
                q_all = head.q(X).numpy()
            shortlist = (shortlist_top(q_all, k, rng) if kind == "shortlist-top" else
                         shortlist_grow(shortlist, q_all, r_np, train_table.n_tools, k, rng=rng))
        for b in range(n_batches):
            idx = torch.as_tensor(order[b * config.batch_size:(b + 1) * config.batch_size])
            scores = head(X[idx])
            r = train_r[idx]
            row = {"step": step + 1, "visits": _epoch * N + min((b + 1) * config.batch_size, N)}
            if kind == "fgpo" or kind in SHORTLISTS:
                if kind in SHORTLISTS:
                    mask = torch.as_tensor(shortlist[idx.numpy()])
                else:
                    mask = None if k is None or k == A else coverage_mask(len(idx), A, k, gen)
                loss = fgpo_loss(scores, r, config.beta, mask)
                row["best_seen"] = (100.0 if mask is None else
                                    100.0 * float((mask & optimal[idx]).any(1).double().mean()))
                n_reward += len(idx) * (A if mask is None else k)
                if mask is None:
                    paid[idx.numpy()] = True
                else:
                    paid[idx.numpy()] |= mask.numpy()
            elif kind in ("grpo", "grpo-eq1", "rloo", "dapo"):
                with torch.no_grad():
                    probs = torch.softmax(scores, -1)
                if kind == "dapo":
                    draws, live, n_draws = draw_live_groups(probs, r, config.G, config.max_draws, gen)
                    n_reward += int(n_draws.sum()) * config.G
                else:
                    draws = draw_groups(probs, config.G, gen)
                    live = torch.ones(len(idx), dtype=torch.bool)
                    n_reward += draws.numel()
                group_r = r.gather(1, draws)
                paid[np.repeat(idx.numpy(), draws.shape[1]), draws.reshape(-1).numpy()] = True
                row["best_seen"] = 100.0 * float(optimal[idx].gather(1, draws).any(1).double().mean())
                row["dead_observed"] = 100.0 * float(dead_group_mask(group_r).double().mean())
                adv = (rloo_advantages(group_r) if kind == "rloo" else grpo_advantages(group_r, "trl"))
                if kind == "dapo":
                    row["dropped"] = 100.0 * float((~live).double().mean())
                    loss = (policy_gradient_loss(scores[live], draws[live], adv[live]) if live.any()
                            else scores.sum() * 0.0)
                else:
                    loss = policy_gradient_loss(scores, draws, adv)
            elif kind == "sft":
                loss = torch.nn.functional.cross_entropy(scores, targets[idx])
            elif kind == "dpo":
                keep = [j for j, i in enumerate(idx.tolist()) if i in pairs]
                if keep:
                    c = torch.as_tensor([pairs[int(idx[j])][0] for j in keep])
                    rj = torch.as_tensor([pairs[int(idx[j])][1] for j in keep])
                    logq = torch.log_softmax(scores[keep], -1)
                    # the reference is the initial head: uniform, so its log-ratio terms cancel
                    margin = logq.gather(1, c[:, None]) - logq.gather(1, rj[:, None])
                    loss = -torch.nn.functional.logsigmoid(config.dpo_beta * margin).mean()
                else:
                    loss = scores.sum() * 0.0
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            with torch.no_grad():
                q = torch.softmax(head(X[idx]), -1).numpy()
            row.update({"loss": float(loss.detach()), "reward_evaluations": n_reward, "reward_calls": int(paid.sum()),
                        **policy_telemetry(q, train_table.correct[idx.numpy()], r_eq1[idx].numpy(),
                                           r_diff[idx].numpy(), sizes, config.telemetry_G)})
            steps.append(row)
            if step % every == 0 or step == total:
                evaluate(step)
            if step in snapshot_steps:
                snapshots[step] = copy.deepcopy(head).float().eval()
            bar.update()
    bar.close()
    trained.load_state_dict(best_state)
    return HeadRun(config, head.float(), pd.DataFrame(steps), pd.DataFrame(dev_rows), -best_key[2], n_reward,
                   {"snapshots": snapshots, "reward_calls": int(paid.sum())})
