"""Reasoner speed on this machine: table-build calls per second, prefix KV reuse, FLOP-bound ratio.

Run on a quiet machine:  .venv/bin/python perf/bench_reasoner.py [--questions 4]
For SmolLM2-135M it times the 16 prompts of a few `core` questions with and without
reusing the question prefix's key-value cache, and compares the time per prompt with
the FLOP-bound limit 2 x parameters x prompt tokens / measured matmul throughput.
The MiniLM readers' calls per second are printed too; for the trained evidence reader
also with and without its block cache (which reads each tool block once per option
instead of once per prompt, the reader's counterpart of prefix reuse) and its ratio to
the FLOP bound 2 x encoder parameters x pair tokens / matmul throughput.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
from fgpo_core.reasoners import get_reasoner

BENCH = Path(__file__).resolve().parent.parent / "data" / "benchmarks" / "cpu"


def matmul_gflops(n: int = 1024, repeats: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * n**3 * repeats / (time.perf_counter() - t0) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=4)
    args = ap.parse_args()
    _, suites = load_benchmark(BENCH)
    lib = tool_library_for(BENCH)
    qs = suites["core"][: args.questions]
    batches = []
    for q in qs:
        evs = lib.run(q.tool_input(), key=q.id)
        batches.append([(q, lib.render(evs, m)) for m in range(16)])
    gflops = matmul_gflops()
    print(f"matmul throughput: {gflops:.0f} GFLOP/s ({torch.get_num_threads()} threads)")

    minilm = get_reasoner("minilm")
    minilm.answer(batches[0][:2])
    t0 = time.perf_counter()
    for b in batches:
        minilm.answer(b)
    n = sum(len(b) for b in batches)
    print(f"MiniLM reader: {n / (time.perf_counter() - t0):.1f} calls/s")

    reader = get_reasoner("reader")
    reader.answer(batches[0][:2])
    # matmul parameters only: an embedding look-up costs no multiply-adds
    enc_params = sum(p.numel() for name, p in reader.model.encoder.named_parameters() if "embeddings" not in name)
    for cached in (True, False):
        reader.clear_cache()
        t0 = time.perf_counter()
        for b in batches:
            if cached:
                reader.answer(b)
            else:
                for item in b:
                    reader.clear_cache()
                    reader.answer([item])
        dt = time.perf_counter() - t0
        print(
            f"evidence reader {'with' if cached else 'without'} its block cache: {n / dt:.1f} calls/s "
            f"({dt / len(batches):.2f} s per question of 16 prompts)"
        )
    from fgpo_core.reasoners.reader import pair_texts

    pairs = {p for b in batches for q, ev in b for ps in pair_texts(q, ev) for p in ps}
    tok = reader.model.tokenizer
    pair_tokens = sum(min(len(tok(a, b_)["input_ids"]), reader.model.max_length) for a, b_ in pairs)
    reader.clear_cache()
    t0 = time.perf_counter()
    for b in batches:
        reader.answer(b)
    dt = time.perf_counter() - t0
    bound = 2 * enc_params * pair_tokens / (gflops * 1e9)
    print(
        f"evidence reader: {pair_tokens / len(batches):.0f} pair tokens per question; FLOP bound "
        f"{bound / len(batches):.3f} s per question -> {bound / dt:.2f} of the bound "
        "(attention's own multiply-adds are left out of the bound)"
    )

    lm = get_reasoner("smollm2")
    n_params = sum(p.numel() for p in lm.model.parameters())
    lm.answer(batches[0][:1])
    for reuse in (False, True):
        lm.reuse_prefix = reuse
        tokens, t0 = 0, time.perf_counter()
        for b in batches:
            outs = lm.answer(b)
            tokens += sum(o.prompt_tokens for o in outs)
        dt = time.perf_counter() - t0
        bound = 2 * n_params * tokens / (gflops * 1e9)
        print(
            f"SmolLM2 {'with' if reuse else 'without'} prefix reuse: {n / dt:.2f} calls/s, "
            f"{dt / n:.3f} s per call at {tokens / n:.0f} prompt tokens; FLOP bound {bound / n:.3f} s per call "
            f"(without reuse) -> {bound / dt:.2f} of the bound"
        )


if __name__ == "__main__":
    main()
