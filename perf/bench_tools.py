"""Time every tool and the whole library on a 200-bp question and on a 4 x 1,000-bp one.

Run on a quiet machine:  .venv/bin/python perf/bench_tools.py
Prints per-tool median times after warm-up and the ratio of the whole five-tool
library's time on a 4 x 1,000-bp question to the 0.5 s target.
"""

from __future__ import annotations

import time

from fgpo_core.genomics.tools import ToolLibrary
from fgpo_core.genomics.tools.demo import repeat_database, taxonomy_references
from fgpo_core.genomics.tools.timing import TARGET_SECONDS, time_tools


def main() -> None:
    t0 = time.perf_counter()
    lib = ToolLibrary.five({"taxonomy": taxonomy_references()}, repeat_database())
    print(
        f"library construction (motif tables from cache, MaxEntScan, references, repeat index): "
        f"{time.perf_counter() - t0:.2f} s"
    )
    table = time_tools(lib)
    print(table.to_string(float_format=lambda x: f"{x:.4f}"))
    whole = table.loc["whole library", "4 x 1,000 bp"]
    print(
        f"whole library on 4 x 1,000 bp: {whole:.3f} s = {whole / TARGET_SECONDS:.2f} x the {TARGET_SECONDS} s target"
    )


if __name__ == "__main__":
    main()
