"""``fgpo study``: train and evaluate any set of methods and seeds of the policy-head selector on
any reward tables; resumable, with progress bars.

For each method, each learning rate of the sweep and each seed, one head is trained
(:func:`~fgpo_core.algorithms.head.train_head`) on the training questions and kept at its best
dev evaluation. Each method's learning rate is chosen on dev (its mean best dev accuracy over
seeds, then J, then the smaller rate), and that rate's heads pick a subset for every question of
every test suite. Results, in ``out_dir``:

* ``picks.parquet``: one row per (method, seed, suite, question), columns ``method, seed, suite,
  question_id, mask`` (the chosen subset, bit i = tool i; -1 would be a format failure, which
  this selector cannot make);
* ``q.parquet``: the chosen heads' policies on the main suite (``q_<mask>`` columns), for
  Tables 15 and 16;
* ``curves.parquet`` and ``dev.parquet``: the chosen runs' per-step telemetry and dev curves;
* ``sweep.parquet``: every run's dev result; ``manifest.json``: the configuration, the inputs'
  fingerprints, the chosen rates and the time it took.

Every run is first written to ``parts/`` (atomically); a restarted study skips the runs already
there whose configuration matches, so a study can be stopped at any moment.
"""
from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..algorithms.head import HeadConfig, method_kind, train_head
from ..io import atomic_path, write_json

__all__ = ["StudyConfig", "run_study", "load_study", "Study"]


@dataclass
class StudyConfig:
    """A study of the policy-head selector (``fgpo study``)."""

    methods: str = "fgpo,grpo,grpo-eq1,rloo,dapo,sft,dpo,fgpo-k1,fgpo-k2,fgpo-k4,fgpo-k8"
    """Comma-separated method names (fgpo_core.algorithms.head.METHODS; fgpo-k<k> for any k)."""
    seeds: int = 5
    """Seeds per method (0 .. seeds-1)."""
    lrs: str = "3e-3,1e-2,3e-2,1e-1"
    """Comma-separated learning rates tried per method; the best on dev is kept."""
    epochs: int = 20
    """Passes over the training questions, the same for every method."""
    hidden: int = 0
    """Hidden units of the head (0: linear)."""
    temperature: float = 1.0
    """Listwise temperature of q."""
    beta: float = 0.03
    """Entropy bonus of the exact objective."""
    lam: float = 0.10
    """Eq. 1's parsimony weight."""
    G: int = 6
    """Group size of the sampled methods."""
    max_draws: int = 4
    """Dynamic sampling's cap on groups drawn per question."""
    dpo_beta: float = 0.3
    """DPO's beta."""
    table_dir: str = "data/tables/cpu/reader"
    """Merged reward tables, one subfolder per suite (train, dev and the test suites)."""
    features_dir: str = "data/features/cpu/minilm"
    """Cached prompt features (``fgpo features``) of the same suites."""
    bench_dir: str = "data/benchmarks/cpu"
    """The benchmark the tables and features were made from."""
    suites: str = "core,microbe,mosaic"
    """Comma-separated test suites to pick on."""
    n_train: int = 0
    """Use only the first N training questions (0: all)."""
    n_dev: int = 0
    """Use only the first N dev questions (0: all)."""
    n_test: int = 0
    """Use only the first N questions of each test suite (0: all)."""
    out_dir: str = "runs/cpu/study"
    """Where the study's files go."""
    threads: int = 1
    """torch CPU threads."""


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _head_config(cfg: StudyConfig, method: str, lr: float, seed: int) -> HeadConfig:
    return HeadConfig(method=method, lr=lr, epochs=cfg.epochs, hidden=cfg.hidden, temperature=cfg.temperature,
                      beta=cfg.beta, lam=cfg.lam, G=cfg.G, max_draws=cfg.max_draws, dpo_beta=cfg.dpo_beta, seed=seed)


def _inputs(cfg: StudyConfig):
    from ..genomics.benchmarks import load_benchmark
    from ..selectors.features import load_features
    from ..table import load_table

    _, suites = load_benchmark(cfg.bench_dir)
    sizes = {"train": cfg.n_train, "dev": cfg.n_dev, **{s: cfg.n_test for s in _csv(cfg.suites)}}
    qs = {s: (suites[s][:n] if n else suites[s]) for s, n in sizes.items()}
    feats = load_features(cfg.features_dir)
    data = {}
    for s, q in qs.items():
        ids = [x.id for x in q]
        data[s] = (ids, feats.rows(s, ids), load_table(Path(cfg.table_dir) / s).select(ids))
    return data, feats.manifest


def _fingerprint(head_cfg: HeadConfig, inputs_key: str) -> str:
    return hashlib.sha256((json.dumps(asdict(head_cfg), sort_keys=True) + inputs_key).encode()).hexdigest()[:16]


def run_study(cfg: StudyConfig, progress: bool = True) -> Path:
    """Run (or resume) the study; returns its folder."""
    import torch
    from tqdm.auto import tqdm

    methods, lrs = _csv(cfg.methods), [float(x) for x in _csv(cfg.lrs)]
    for m in methods:
        method_kind(m)  # refuse an unknown method before any work
    if not methods or not lrs or cfg.seeds < 1:
        raise ValueError("give at least one method, one learning rate and one seed")
    torch.set_num_threads(cfg.threads)
    t0 = time.time()
    out = Path(cfg.out_dir)
    parts = out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    data, feat_manifest = _inputs(cfg)
    tests = _csv(cfg.suites)
    key = json.dumps({s: [data[s][2].manifest.get("questions_sha256"), len(data[s][0])] for s in data}
                     | {"features": feat_manifest.get("fingerprint"), "encoder": feat_manifest.get("encoder")},
                     sort_keys=True)
    (_, tr_x, tr_t), (_, dv_x, dv_t) = data["train"], data["dev"]
    jobs = [(m, lr, s) for m in methods for lr in lrs for s in range(cfg.seeds)]
    sweep = []
    for m, lr, s in tqdm(jobs, desc="study", disable=not progress):
        hc = _head_config(cfg, m, lr, s)
        fp = _fingerprint(hc, key)
        path = parts / f"{m}__lr{lr:g}__s{s}.npz"
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                if str(z["fingerprint"]) == fp:
                    sweep.append(json.loads(str(z["summary"])))
                    continue
        t1 = time.time()
        run = train_head(tr_x, tr_t, dv_x, dv_t, hc)
        best = run.dev.set_index("step").loc[run.best_step]
        summary = {"method": m, "lr": lr, "seed": s, "best_step": run.best_step, "dev_accuracy": best["accuracy"],
                   "dev_J": best["J"], "dev_tools": best["tools"], "reward_evaluations": run.reward_evaluations,
                   "seconds": round(time.time() - t1, 2)}
        arrays = {f"q_{t}": run.q(data[t][1]).astype(np.float32) for t in tests}
        with atomic_path(path, suffix=".npz") as tmp:
            np.savez_compressed(tmp, fingerprint=fp, summary=json.dumps(summary),
                                steps=run.steps.to_json(orient="split"), dev=run.dev.to_json(orient="split"),
                                **arrays)
        sweep.append(summary)
    sweep = pd.DataFrame(sweep)
    chosen = {}
    for m, g in sweep.groupby("method", sort=False):
        score = g.groupby("lr").agg(acc=("dev_accuracy", "mean"), J=("dev_J", "mean")).reset_index()
        score = score.sort_values(["acc", "J", "lr"], ascending=[False, False, True])
        chosen[m] = float(score.iloc[0]["lr"])
    picks, qrows, curves, devs = [], [], [], []
    for m in methods:
        for s in range(cfg.seeds):
            with np.load(parts / f"{m}__lr{chosen[m]:g}__s{s}.npz", allow_pickle=False) as z:
                for t in tests:
                    q = z[f"q_{t}"]
                    picks.append(pd.DataFrame({"method": m, "seed": s, "suite": t, "question_id": data[t][0],
                                               "mask": q.argmax(1).astype(int)}))
                    if t == tests[0]:
                        qf = pd.DataFrame(q, columns=[f"q_{a}" for a in range(q.shape[1])])
                        qrows.append(pd.concat([pd.DataFrame({"method": m, "seed": s, "question_id": data[t][0]}),
                                                qf], axis=1))
                curves.append(pd.read_json(io.StringIO(str(z["steps"])), orient="split").assign(method=m, seed=s))
                devs.append(pd.read_json(io.StringIO(str(z["dev"])), orient="split").assign(method=m, seed=s))
    for name, frame in (("picks", pd.concat(picks)), ("q", pd.concat(qrows)), ("curves", pd.concat(curves)),
                        ("dev", pd.concat(devs)), ("sweep", sweep)):
        with atomic_path(out / f"{name}.parquet") as tmp:
            frame.reset_index(drop=True).to_parquet(tmp, index=False)
    write_json(out / "manifest.json", {
        "config": asdict(cfg), "chosen_lr": chosen, "features": feat_manifest,
        "tables": {s: {k: data[s][2].manifest.get(k) for k in ("reasoner", "questions_sha256", "n_questions")}
                   for s in data},
        "n_questions": {s: len(v[0]) for s, v in data.items()}, "torch": torch.__version__,
        "train_seconds": float(sweep["seconds"].sum()), "seconds": round(time.time() - t0, 1)}, default=float)
    return out


@dataclass
class Study:
    """A finished study read back: its manifest and frames."""

    manifest: dict
    picks: pd.DataFrame
    q: pd.DataFrame
    curves: pd.DataFrame
    dev: pd.DataFrame
    sweep: pd.DataFrame

    def q_matrix(self, method: str, seed: int) -> np.ndarray:
        """The policy ``[N, 2**n]`` of one chosen head on the main suite, in question order."""
        f = self.q[(self.q.method == method) & (self.q.seed == seed)]
        return f[[c for c in f if c.startswith("q_")]].to_numpy(dtype=float)

    def pick_matrix(self, suite: str, method: str) -> tuple[list[str], np.ndarray]:
        """The question ids of ``suite`` and the picks ``[seeds, N]`` of ``method``."""
        f = self.picks[(self.picks.suite == suite) & (self.picks.method == method)]
        seeds = sorted(f.seed.unique())
        ids = f[f.seed == seeds[0]].question_id.tolist()
        return ids, np.stack([f[f.seed == s].set_index("question_id").loc[ids, "mask"].to_numpy() for s in seeds])


def load_study(out_dir) -> Study:
    """A study written by :func:`run_study`."""
    out = Path(out_dir)
    if not (out / "manifest.json").exists():
        raise FileNotFoundError(f"{out} holds no finished study: run `fgpo study --out-dir {out}`")
    frames = {n: pd.read_parquet(out / f"{n}.parquet") for n in ("picks", "q", "curves", "dev", "sweep")}
    return Study(json.loads((out / "manifest.json").read_text()), **frames)
