"""How long ``make test`` would take over N workers, from one serial run's ``--durations`` report.

    .venv/bin/python -m pytest --durations=60 -q > serial.txt     # once, on a quiet machine
    .venv/bin/python perf/xdist_estimate.py serial.txt --workers 2

The listed tests keep their measured times; the rest of the run's total is spread evenly over the
tests not listed. The schedule simulated is tests/conftest.py's under xdist: the slowest first, each
worker taking the next test whenever it is free; beside it the bound no schedule beats (the total
over the workers, or the longest test). Start-up (each worker imports the library) is not counted.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)")
TOTAL = re.compile(r"(\d+) passed.* in ([\d.]+)s")


def read(path: str) -> tuple[dict[str, float], int, float]:
    listed: dict[str, float] = defaultdict(float)
    n = total = 0
    for line in Path(path).read_text().splitlines():
        m = LINE.match(line)
        if m:
            listed[m.group(3)] += float(m.group(1))
        t = TOTAL.search(line)
        if t:
            n = int(t.group(1)) + sum(int(x) for x in re.findall(r"(\d+) (?:failed|skipped|errors?)", line))
            total = float(t.group(2))
    return dict(listed), n, total


def makespan(times: list[float], workers: int) -> float:
    free = [0.0] * workers
    for t in times:
        i = free.index(min(free))
        free[i] += t
    return max(free)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    listed, n, total = read(args.report)
    rest = max(n - len(listed), 1)
    small = max(total - sum(listed.values()), 0.0) / rest
    times = sorted([*listed.values(), *[small] * rest], reverse=True)
    print(f"{n} tests, {total:.0f} s in one process ({len(listed)} listed: {sum(listed.values()):.0f} s)")
    print(
        f"{args.workers} workers, slowest first: {makespan(times, args.workers):.0f} s "
        f"(no schedule under {max(total / args.workers, times[0]):.0f} s)"
    )


if __name__ == "__main__":
    main()
