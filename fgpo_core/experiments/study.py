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
* ``checkpoints.parquet`` (with ``checkpoints`` > 0): the chosen runs' accuracy and tools per
  question on every test suite at evenly spaced checkpoints of training;
* ``sweep.parquet``: every run's dev result; ``manifest.json``: the configuration, the inputs'
  fingerprints, the chosen rates and the time it took.

The configuration and the named method lists are :mod:`~fgpo_core.experiments.study_config`'s.
A method's name may carry modifiers (:func:`~fgpo_core.algorithms.head.parse_method`):
``-n250`` trains on the first 250 training questions, ``-noT3`` on the table restricted to the
library without tool 3 (its picks are written as masks of the full library), the others
override the head's settings (``fgpo-lambda0``, ``grpo-G16``, ``dpo-beta0.1``, ``fgpo-h64``).

Every run is first written to ``parts/`` (atomically); a restarted study skips the runs already
there whose fingerprint matches (the head's settings and every input by content: the questions,
the tables' and the features' contents, :mod:`~fgpo_core.experiments.study_inputs`), so a study can
be stopped at any moment. One live study may write a folder at a time (``.study.lock``), and the
assembly re-checks each part's fingerprint, so two runs never mix.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import time
import zipfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from ..algorithms.head import HeadConfig, MethodSpec, parse_stages, train_head
from ..env import package_versions
from ..evaluation.domains import IN_DOMAIN_DEV, in_domain
from ..io import atomic_path, with_digests, write_json
from .study_config import ABLATIONS, COMPANION, PRESETS, StudyConfig
from .study_inputs import (
    check_sizes,
    check_study_inputs,
    inputs_digest,
    spread_indices,
    study_lock,
    training_code_digest,
)
from .study_results import Q_KEPT_MAX_TOOLS, Study, keep_q, load_study

__all__ = ["StudyConfig", "ABLATIONS", "COMPANION", "PRESETS", "run_study", "load_study", "keep_q", "Study"]


def _csv(s: str) -> list[str]:
    out = [x.strip() for x in s.split(",") if x.strip()]
    twice = next((x for x in out if out.count(x) > 1), None)
    if twice is not None:  # a method, suite or rate named twice would double its rows
        raise ValueError(f"{s!r} names {twice!r} twice")
    return out


def _head_config(cfg: StudyConfig, spec: MethodSpec, lr: float, seed: int) -> HeadConfig:
    return spec.config(
        HeadConfig(
            lr=lr,
            epochs=cfg.epochs,
            hidden=cfg.hidden,
            temperature=cfg.temperature,
            lam=cfg.lam,
            settings=cfg.settings,
            seed=seed,
        )
    )


def _kept_tools(spec: MethodSpec, n_tools: int) -> list[int] | None:
    """The tool slots a ``-noT<i>`` method keeps (None: the whole library)."""
    if spec.drop_tool is None:
        return None
    if spec.drop_tool > n_tools:
        raise ValueError(f"{spec.name}: the library has tools T1..T{n_tools}")
    return [t for t in range(n_tools) if t != spec.drop_tool - 1]


def _full_masks(kept: list[int] | None) -> np.ndarray | None:
    """For a sub-library, its masks written as masks of the full library."""
    if kept is None:
        return None
    return np.array([sum(1 << kept[i] for i in range(len(kept)) if m >> i & 1) for m in range(1 << len(kept))])


def _expand(q: np.ndarray, full: np.ndarray, n_tools: int) -> np.ndarray:
    """A sub-library's policy ``[N, len(full)]`` written over the full library's subsets (zeros elsewhere)."""
    out = np.zeros((len(q), 1 << n_tools), dtype=q.dtype)
    out[:, full] = q
    return out


def _snapshot_steps(n_train: int, epochs: int, checkpoints: int, batch_size: int = 16, updates: int = 1) -> list[int]:
    total = -(-n_train // batch_size) * epochs * updates
    return sorted({max(1, round(total * (i + 1) / checkpoints)) for i in range(checkpoints)}) if checkpoints else []


def _inputs(cfg: StudyConfig):
    from ..genomics.benchmarks import load_benchmark
    from ..selectors.features import check_features_questions, load_features
    from ..table import load_table

    _, suites = load_benchmark(cfg.bench_dir)
    sizes = {"train": cfg.n_train, "dev": cfg.n_dev, **{s: cfg.n_test for s in _csv(cfg.suites)}}
    source = {s: (cfg.dev_suite if s == "dev" else s) for s in sizes}  # every selection reads dev_suite
    unknown = [source[s] for s in sizes if source[s] not in suites]
    if unknown:
        raise ValueError(f"{cfg.bench_dir} has no suite {unknown[0]!r}; it has {', '.join(sorted(suites))}")
    qs = {s: (suites[source[s]][:n] if n else suites[source[s]]) for s, n in sizes.items()}
    if cfg.train_spread:  # spread_indices of 0 questions is all of them
        qs["train"] = [suites["train"][i] for i in spread_indices(len(suites["train"]), cfg.n_train)]
    if cfg.dev_suite == IN_DOMAIN_DEV:  # a study on part of the pool chooses on its own domain only
        qs["dev"] = in_domain(qs["dev"], qs["train"])
        if not qs["dev"]:
            raise ValueError("none of the in-domain dev questions is in the domain of the training questions")
    feats = load_features(cfg.features_dir)
    check_features_questions(feats, {source[s]: suites[source[s]] for s in qs}, cfg.features_dir)
    data = {}
    for s, q in qs.items():
        ids = [x.id for x in q]
        data[s] = (ids, feats.rows(source[s], ids), load_table(Path(cfg.table_dir) / source[s]).select(ids))
    return data, feats.manifest


def _checkpoint_rows(run, view: dict, tests: list[str], n_train: int) -> pd.DataFrame:
    """Accuracy (%), tools per question and ``n`` of each snapshot of ``run`` on every test suite
    (``family`` "all") and on each of its families."""
    import torch

    rows = []
    per_epoch = -(-n_train // run.config.batch_size) * run.config.settings.updates
    for step, head in sorted(run.extra.get("snapshots", {}).items()):
        for t in tests:
            x, tab = view[t]
            with torch.no_grad():
                pick = head.q(torch.as_tensor(x, dtype=torch.float32)).numpy().argmax(1)
            right, tools = tab.correct[np.arange(len(pick)), pick], tab.space.sizes[pick]
            fams = np.asarray(tab.family)
            for fam in ["all"] + sorted(set(fams.tolist())):
                sel = slice(None) if fam == "all" else fams == fam
                rows.append(
                    {
                        "step": step,
                        "epoch": step / per_epoch,
                        "suite": t,
                        "family": fam,
                        "n": int(np.asarray(right[sel]).size),
                        "accuracy": 100.0 * float(right[sel].mean()),
                        "tools": float(tools[sel].mean()),
                    }
                )
    return pd.DataFrame(rows, columns=["step", "epoch", "suite", "family", "n", "accuracy", "tools"])


def _fingerprint(head_cfg: HeadConfig, inputs_key: str) -> str:
    return hashlib.sha256((json.dumps(asdict(head_cfg), sort_keys=True) + inputs_key).encode()).hexdigest()[:16]


def run_study(cfg: StudyConfig, progress: bool = True) -> Path | None:
    """Run (or resume) the study; returns its folder (None: a shard whose study waits for other
    shards). One live study may write a folder at a time
    (:func:`~fgpo_core.experiments.study_inputs.study_lock`)."""
    check_sizes(cfg.n_train, cfg.n_dev, cfg.n_test, _csv(cfg.suites))
    if cfg.epochs < 1 or cfg.seeds < 1:
        raise ValueError(f"--epochs and --seeds must be positive, got {cfg.epochs} and {cfg.seeds}")
    shard_of(cfg.shard)
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with study_lock(out, cfg.shard):
        return _run_study(cfg, progress)


def shard_of(shard: str) -> tuple[int, int] | None:
    """``(i, N)`` of ``--shard i/N`` (None for ""): the study's jobs ``i, i+N, i+2N, ...``."""
    if not shard:
        return None
    try:
        i, n = (int(x) for x in shard.split("/"))
    except ValueError:
        i, n = -1, 0
    if not 0 <= i < n:
        raise ValueError(f"--shard takes i/N with 0 <= i < N, got {shard!r}")
    return i, n


def _run_study(cfg: StudyConfig, progress: bool) -> Path:
    import torch
    from tqdm.auto import tqdm

    methods, lrs = _csv(PRESETS.get(cfg.methods, cfg.methods)), [float(x) for x in _csv(cfg.lrs)]
    stages = {m: parse_stages(m) for m in methods}  # refuse an unknown method before any work
    if not methods or not lrs or cfg.seeds < 1:
        raise ValueError("give at least one method, one learning rate and one seed")
    if isinstance(cfg.curve_every, bool) or not isinstance(cfg.curve_every, int) or cfg.curve_every < 1:
        raise ValueError(f"--curve-every must be a positive whole number, got {cfg.curve_every!r}")
    if cfg.checkpoints < 0:
        raise ValueError(f"checkpoints must be >= 0, got {cfg.checkpoints}")
    if cfg.keep not in ("best", "last"):
        raise ValueError(f"keep must be 'best' or 'last', got {cfg.keep!r}")
    torch.set_num_threads(cfg.threads)
    t0 = time.time()
    out = Path(cfg.out_dir)
    data, feat_manifest = _inputs(cfg)
    n_tools = check_study_inputs(data, feat_manifest)
    inputs = inputs_digest(data, feat_manifest)
    for st in stages.values():
        _kept_tools(st[0], n_tools)
        if st[0].n_train is not None and st[0].n_train > len(data["train"][0]):
            raise ValueError(f"{st[0].name}: the study has only {len(data['train'][0])} training questions")
    parts = out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    tests = _csv(cfg.suites)
    key = json.dumps(
        {s: [data[s][2].manifest.get("questions_sha256"), len(data[s][0])] for s in data}
        | {
            "features": feat_manifest.get("fingerprint"),
            "encoder": feat_manifest.get("encoder"),
            "checkpoints": cfg.checkpoints,
            "inputs": inputs,
            "code": training_code_digest(),
        }
        | ({"keep": cfg.keep} if cfg.keep != "best" else {}),
        sort_keys=True,
    )
    # a method whose every stage fixes its learning rate (-lr) is trained once, not once per rate
    fixed = {m: [st[0].overrides["lr"]] for m, st in stages.items() if all("lr" in sp.overrides for sp in st)}
    jobs = [(m, lr, s) for m in methods for lr in fixed.get(m, lrs) for s in range(cfg.seeds)]
    sweep, fps, waiting = [], {}, 0
    shard = shard_of(cfg.shard)
    for j, (m, lr, s) in enumerate(tqdm(jobs, desc="study", disable=not progress)):
        st = stages[m]
        hcs = [_head_config(cfg, spec, lr, s) for spec in st]
        fp = _fingerprint(
            hcs[0],
            key
            + json.dumps([st[0].n_train, st[0].drop_tool])
            + "".join(json.dumps(asdict(h), sort_keys=True) for h in hcs[1:]),
        )
        path = parts / f"{m}__lr{lr:g}__s{s}.npz"
        fps[path.name] = fp
        if path.exists():
            try:
                with np.load(path, allow_pickle=False) as z:
                    summary = json.loads(str(z["summary"])) if str(z["fingerprint"]) == fp else None
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
                summary = None  # a torn or foreign part: trained again
            if summary is not None:
                sweep.append(summary)
                continue
        if shard is not None and j % shard[1] != shard[0]:
            waiting += 1  # another shard's job
            continue
        t1 = time.time()
        kept = _kept_tools(st[0], n_tools)
        view = {t: (x, tab if kept is None else tab.restrict_tools(kept)) for t, (_, x, tab) in data.items()}
        n_keep = st[0].n_train or len(data["train"][0])
        tr_x, tr_t = view["train"][0][:n_keep], view["train"][1].subset(np.arange(n_keep))
        full = _full_masks(kept)
        run, base, offset, evals, calls = None, None, 0.0, 0, 0
        frames = {"steps": [], "dev": [], "checkpoints": []}
        for i, hc in enumerate(hcs):  # each stage trains a fresh head stacked on the frozen one before it
            last = i == len(hcs) - 1
            snaps = _snapshot_steps(n_keep, hc.epochs, cfg.checkpoints, hc.batch_size, hc.settings.updates)
            run = train_head(
                tr_x, tr_t, *view["dev"], hc, snapshot_steps=snaps, base=base, keep=cfg.keep if last else "last"
            )
            base, evals = run.head, evals + run.reward_evaluations
            # stages share one cache of answers: the larger stage's pairs (all, when SFT or DPO reads the table)
            calls = max(calls, run.extra["reward_calls"])
            for name, f in (
                ("steps", run.steps),
                ("dev", run.dev),
                ("checkpoints", _checkpoint_rows(run, view, tests, n_keep)),
            ):
                f = f.copy()
                if len(hcs) > 1:
                    f["stage"] = i
                    if "epoch" in f:
                        f["epoch"] = f["epoch"] + offset
                frames[name].append(f)
            offset += hc.epochs
        best = run.dev.set_index("step").loc[run.best_step]
        summary = {
            "method": m,
            "lr": lr,
            "seed": s,
            "best_step": run.best_step,
            "dev_accuracy": best["accuracy"],
            "dev_J": best["J"],
            "dev_tools": best["tools"],
            "reward_evaluations": evals,
            "reward_calls": calls,
            "seconds": round(time.time() - t1, 2),
        }
        if n_tools <= Q_KEPT_MAX_TOOLS:
            arrays = {f"q_{t}": run.q(data[t][1]).astype(np.float32) for t in tests}
        else:  # 4,096 subsets: the policy is too large to keep for every question; its picks are kept
            arrays = {f"pick_{t}": run.q(data[t][1]).argmax(1).astype(np.int32) for t in tests}
        if full is not None:
            arrays["full_masks"] = full
        joined = {k: pd.concat(v, ignore_index=True).to_json(orient="split") for k, v in frames.items()}
        with atomic_path(path, suffix=".npz") as tmp:
            np.savez_compressed(tmp, fingerprint=fp, summary=json.dumps(summary), **joined, **arrays)
        sweep.append(summary)
    if waiting:
        print(
            f"study shard {cfg.shard} done; {waiting} parts are other shards' (the last shard to finish, or a run "
            "without --shard, writes the study's results)",
            file=sys.stderr,
        )
        return None
    sweep = pd.DataFrame(sweep)
    chosen = {}
    for m, g in sweep.groupby("method", sort=False):
        score = g.groupby("lr").agg(acc=("dev_accuracy", "mean"), J=("dev_J", "mean")).reset_index()
        score = score.sort_values(["acc", "J", "lr"], ascending=[False, False, True])
        chosen[m] = float(score.iloc[0]["lr"])
    picks, qrows, curves, devs, ckpts = [], [], [], [], []
    for m in methods:
        for s in range(cfg.seeds):
            with np.load(parts / f"{m}__lr{chosen[m]:g}__s{s}.npz", allow_pickle=False) as z:
                name = f"{m}__lr{chosen[m]:g}__s{s}.npz"
                if str(z["fingerprint"]) != fps[name]:  # a part rewritten since it was trained or checked
                    raise ValueError(
                        f"{parts / name} no longer holds this study's run (its fingerprint changed "
                        "while the study ran); run the study again"
                    )
                full = z["full_masks"] if "full_masks" in z.files else None
                for t in tests:
                    if f"pick_{t}" in z.files:
                        picks.append(
                            pd.DataFrame(
                                {
                                    "method": m,
                                    "seed": s,
                                    "suite": t,
                                    "question_id": data[t][0],
                                    "mask": z[f"pick_{t}"].astype(int),
                                }
                            )
                        )
                        continue
                    q = z[f"q_{t}"]
                    pick = q.argmax(1).astype(int)
                    picks.append(
                        pd.DataFrame(
                            {
                                "method": m,
                                "seed": s,
                                "suite": t,
                                "question_id": data[t][0],
                                "mask": pick if full is None else full[pick],
                            }
                        )
                    )
                    if t == tests[0] and cfg.keep_q:
                        if full is not None:  # a sub-library's policy, on the full library's subsets
                            q = _expand(q, full, n_tools)
                        qf = pd.DataFrame(q, columns=[f"q_{a}" for a in range(q.shape[1])])
                        qrows.append(
                            pd.concat([pd.DataFrame({"method": m, "seed": s, "question_id": data[t][0]}), qf], axis=1)
                        )
                steps = pd.read_json(io.StringIO(str(z["steps"])), orient="split")
                if cfg.curve_every > 1:  # every n-th step row and the last
                    steps = steps[(steps["step"] % cfg.curve_every == 0) | (steps["step"] == steps["step"].max())]
                curves.append(steps.assign(method=m, seed=s))
                devs.append(pd.read_json(io.StringIO(str(z["dev"])), orient="split").assign(method=m, seed=s))
                if cfg.checkpoints:
                    ckpts.append(
                        pd.read_json(io.StringIO(str(z["checkpoints"])), orient="split").assign(method=m, seed=s)
                    )
    frames = (
        [("picks", pd.concat(picks))]
        + ([("q", pd.concat(qrows))] if qrows else [])
        + [("curves", pd.concat(curves)), ("dev", pd.concat(devs)), ("sweep", sweep)]
        + ([("checkpoints", pd.concat(ckpts))] if ckpts else [])
    )
    (out / "manifest.json").unlink(missing_ok=True)  # the commit point goes first: a torn write is no study
    if not qrows:
        (out / "q.parquet").unlink(missing_ok=True)
    for name, frame in frames:
        with atomic_path(out / f"{name}.parquet") as tmp:
            frame.reset_index(drop=True).to_parquet(tmp, index=False)
    write_json(
        out / "manifest.json",
        with_digests(
            {
                "config": cfg.manifest_config() | {"methods": ",".join(methods)},
                "chosen_lr": chosen,
                "features": feat_manifest,
                "tables": {
                    s: {k: data[s][2].manifest.get(k) for k in ("reasoner", "questions_sha256", "n_questions")}
                    for s in data
                },
                "n_questions": {s: len(v[0]) for s, v in data.items()},
                "inputs": inputs,
                "torch": torch.__version__,
                "versions": package_versions(),
                "train_seconds": float(sweep["seconds"].sum()),
                "seconds": round(time.time() - t0, 1),
            },
            out,
            [f"{name}.parquet" for name, _ in frames],
        ),
        default=float,
    )
    return out
