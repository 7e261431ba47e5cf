"""Time every tool and the whole library on a 200-bp question and on a 4 x 1,000-bp one.

Run on a quiet machine:  .venv/bin/python benchmarks/bench_tools.py
Prints per-tool times (median of repeats, after warm-up) and the ratio of the whole
five-tool library's time on a 4 x 1,000-bp question to the 0.5 s target.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from fgpo_core.tools import ToolInput, ToolLibrary
from fgpo_core.tools.demo import genome_fragments, repeat_database, taxonomy_references

TARGET_S = 0.5


def timeit(fn, repeats: int = 7) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    t0 = time.perf_counter()
    lib = ToolLibrary.five({"taxonomy": taxonomy_references()}, repeat_database())
    print(f"library construction (cached motif tables, MaxEntScan, references, repeat index): "
          f"{time.perf_counter() - t0:.2f} s")
    rng = np.random.default_rng(1)
    s200, _ = genome_fragments(1, 200, rng)
    s1000, _ = genome_fragments(1, 1000, rng)
    questions = {"200 bp": ToolInput({"": s200[0]}, task="taxonomy"),
                 "4 x 1,000 bp": ToolInput(dict(zip("ABCD", s1000)), task="taxonomy")}
    rows = []
    for qname, inp in questions.items():
        for tool in lib.tools:
            rows.append((qname, tool.name, timeit(lambda: tool.run(inp))))
        rows.append((qname, "whole library", timeit(lambda: [t.run(inp) for t in lib.tools])))
    print(f"{'question':<14}{'tool':<16}{'seconds':>10}")
    for q, name, s in rows:
        print(f"{q:<14}{name:<16}{s:>10.4f}")
    whole = next(s for q, n, s in rows if q == "4 x 1,000 bp" and n == "whole library")
    print(f"whole library on 4 x 1,000 bp: {whole:.3f} s = {whole / TARGET_S:.2f} x the {TARGET_S} s target")


if __name__ == "__main__":
    main()
