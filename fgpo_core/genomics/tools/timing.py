"""Per-tool timing on a short and a long question (used by the benchmark script and the chapter)."""

from __future__ import annotations

import statistics
import time

import numpy as np
import pandas as pd

from .base import ToolInput
from .demo import genome_fragments

__all__ = ["time_tools", "TARGET_SECONDS"]

TARGET_SECONDS = 0.5
"""The whole library on a 4 x 1,000-bp question should take at most this long after warm-up."""


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up: first calls fill caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_tools(library, repeats: int = 7, seed: int = 1, task: str | None = "taxonomy") -> pd.DataFrame:
    """Median seconds per call of every tool and of the whole library, on a 200-bp
    question and a question with four 1,000-bp option sequences (real genome fragments)."""
    rng = np.random.default_rng(seed)
    s200, _ = genome_fragments(1, 200, rng)
    s1000, _ = genome_fragments(1, 1000, rng)
    questions = {
        "200 bp": ToolInput({"": s200[0]}, task=task),
        "4 x 1,000 bp": ToolInput(dict(zip("ABCD", s1000)), task=task),
    }
    rows = []
    for qname, inp in questions.items():
        for tool in library.tools:
            rows.append({"question": qname, "tool": tool.name, "seconds": _median_time(lambda: tool.run(inp), repeats)})
        rows.append(
            {
                "question": qname,
                "tool": "whole library",
                "seconds": _median_time(lambda: [t.run(inp) for t in library.tools], repeats),
            }
        )
    return (
        pd.DataFrame(rows)
        .pivot(index="tool", columns="question", values="seconds")
        .loc[[t.name for t in library.tools] + ["whole library"], list(questions)]
    )
