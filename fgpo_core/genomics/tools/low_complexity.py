"""T8, low complexity: the DUST score of each window and exact tandem repeats of short units.

DUST (Morgulis et al., 2006) scores a window of ``l + 2`` bases by its ``l`` overlapping
triplets: ``sum_t c_t (c_t - 1) / 2 / (l - 1)`` where ``c_t`` counts triplet ``t``. A random
sequence scores about 0.5; a poly-A window scores ``l / 2``. A window is low-complexity when
its score exceeds :data:`DUST_LEVEL` (dustmasker's level 20, in its tenths).

A tandem repeat of period ``p`` (1-6) is a run of at least three exact copies of a ``p``-base
unit: a stretch where every base equals the base ``p`` positions on, of at least 12 bp. The
longest repeats are reported with their unit and copy number.
"""

from __future__ import annotations

import numpy as np

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, validate_sequence

__all__ = ["LowComplexity", "dust_scores", "tandem_repeats", "DUST_WINDOW", "DUST_LEVEL", "MAX_PERIOD", "MIN_TANDEM"]

DUST_WINDOW = 64
DUST_LEVEL = 2.0
MAX_PERIOD = 6
MIN_TANDEM = 12


def dust_scores(seq: str, window: int = DUST_WINDOW) -> np.ndarray:
    """The DUST score of every window of ``window`` bases (one window if the sequence is shorter)."""
    codes = {"A": 0, "C": 1, "G": 2, "T": 3}
    s = [codes.get(b, -1) for b in seq]
    trip = np.array(
        [s[i] * 16 + s[i + 1] * 4 + s[i + 2] if min(s[i : i + 3]) >= 0 else -1 for i in range(len(s) - 2)], dtype=int
    )
    n = min(window, len(seq)) - 2
    if n < 2:
        return np.zeros(1)
    out = []
    for start in range(len(trip) - n + 1):
        t = trip[start : start + n]
        c = np.bincount(t[t >= 0], minlength=64)
        out.append(float((c * (c - 1) / 2).sum() / (n - 1)))
    return np.array(out)


def tandem_repeats(seq: str, max_period: int = MAX_PERIOD, min_length: int = MIN_TANDEM) -> list[dict]:
    """Exact tandem repeats of period 1..``max_period`` at least ``min_length`` bp long and of
    at least three copies, longest first; a repeat explained by a shorter period is kept only
    under that period. 1-based ``begin``/``end``, ``period``, ``unit``, ``copies``."""
    arr = np.frombuffer(seq.encode(), dtype=np.uint8)
    found = []
    for p in range(1, max_period + 1):
        if len(arr) <= p:
            break
        same = (arr[:-p] == arr[p:]) & (arr[:-p] != ord("N"))
        i = 0
        while i < len(same):
            if not same[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(same) and same[j + 1]:
                j += 1
            begin, end = i, j + 1 + p  # 0-based half-open
            if end - begin >= max(min_length, 3 * p):
                unit = seq[begin : begin + p]
                if not any(p % d == 0 and unit == unit[:d] * (p // d) for d in range(1, p)):  # primitive units only
                    found.append(
                        {
                            "begin": begin + 1,
                            "end": end,
                            "period": p,
                            "unit": unit,
                            "copies": round((end - begin) / p, 1),
                        }
                    )
            i = j + 1
    return sorted(found, key=lambda r: (-(r["end"] - r["begin"]), r["begin"], r["period"]))


class LowComplexity:
    """T8: DUST low-complexity windows and exact tandem repeats."""

    name = "low_complexity"
    title = "Low complexity (DUST) and tandem repeats"
    version = "1"

    def __init__(self, max_length: int = MAX_LENGTH):
        self.max_length = max_length

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            scores = dust_scores(seq)
            low = scores > DUST_LEVEL
            reps = tandem_repeats(seq)
            records[label] = {
                "dust_max": round(float(scores.max()), 2),
                "dust_mean": round(float(scores.mean()), 2),
                "low_windows_percent": round(100 * float(low.mean()), 1),
                "tandem": reps[:5],
            }
            r = records[label]
            ls = [
                f"DUST score {r['dust_mean']:.2f} on average, {r['dust_max']:.2f} at most over {DUST_WINDOW}-bp "
                f"windows; {r['low_windows_percent']:.0f}% of windows low-complexity (score > {DUST_LEVEL:g})"
            ]
            if reps:
                ls += [
                    f"Tandem repeat ({t['unit']})x{t['copies']:g} at bases {t['begin']}-{t['end']}" for t in reps[:2]
                ]
            else:
                ls.append(f"No exact tandem repeat of a 1-{MAX_PERIOD} bp unit over {MIN_TANDEM} bp")
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines)
