"""T7, CpG-island calling: windows that pass Gardiner-Garden and Frommer's criteria (1987),
merged into islands.

A window of ``window`` bp (200) is island-like when its GC content exceeds 50% and its CpG
observed/expected ratio exceeds 0.6 (observed CpG times the length over C count times G
count). Windows slide one base at a time; island-like windows that overlap are merged into an
island, and each island is reported with its own GC content and ratio. A sequence shorter than
the window is judged as a whole. Every number is a count.
"""

from __future__ import annotations

import numpy as np

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, validate_sequence

__all__ = ["CpGIslands", "cpg_islands", "cpg_stats", "WINDOW", "MIN_GC", "MIN_OBS_EXP"]

WINDOW = 200
MIN_GC = 0.5
MIN_OBS_EXP = 0.6


def cpg_stats(seq: str) -> tuple[float, float | None]:
    """GC fraction and CpG observed/expected ratio of a sequence (None without C or G)."""
    c, g = seq.count("C"), seq.count("G")
    n = max(len(seq), 1)
    oe = seq.count("CG") * len(seq) / (c * g) if c and g else None
    return (c + g) / n, oe


def cpg_islands(seq: str, window: int = WINDOW, min_gc: float = MIN_GC, min_obs_exp: float = MIN_OBS_EXP) -> list[dict]:
    """Islands of one validated sequence: 1-based ``begin``/``end``, ``length``, ``gc`` (%) and
    ``obs_exp`` of each merged run of island-like windows."""
    L = len(seq)
    w = min(window, L)
    if w == 0:
        return []
    arr = np.frombuffer(seq.encode(), dtype=np.uint8)
    c, g = (arr == ord("C")).astype(int), (arr == ord("G")).astype(int)
    cg = np.zeros(L, dtype=int)
    cg[:-1] = (arr[:-1] == ord("C")) & (arr[1:] == ord("G"))
    csum, gsum = np.concatenate([[0], np.cumsum(c)]), np.concatenate([[0], np.cumsum(g)])
    cgsum = np.concatenate([[0], np.cumsum(cg)])
    starts = np.arange(L - w + 1)
    nc, ng = csum[starts + w] - csum[starts], gsum[starts + w] - gsum[starts]
    ncg = cgsum[starts + w - 1] - cgsum[starts]  # dinucleotides that lie wholly inside the window
    with np.errstate(divide="ignore", invalid="ignore"):
        oe = np.where((nc > 0) & (ng > 0), ncg * w / (nc * ng), 0.0)
    ok = ((nc + ng) / w > min_gc) & (oe > min_obs_exp)
    islands, i = [], 0
    while i < len(ok):
        if not ok[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(ok) and ok[j + 1]:
            j += 1
        begin, end = i, j + w  # 0-based half-open
        gc, ratio = cpg_stats(seq[begin:end])
        islands.append(
            {
                "begin": begin + 1,
                "end": end,
                "length": end - begin,
                "gc": round(100 * gc, 1),
                "obs_exp": None if ratio is None else round(ratio, 2),
            }
        )
        i = j + 1
    return islands


class CpGIslands:
    """T7: CpG islands by Gardiner-Garden and Frommer's window criteria."""

    name = "cpg_islands"
    title = "CpG islands (Gardiner-Garden and Frommer)"
    version = "1"

    def __init__(self, max_length: int = MAX_LENGTH, window: int = WINDOW):
        self.max_length, self.window = max_length, window

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            islands = cpg_islands(seq, self.window)
            covered = sum(isl["length"] for isl in islands)
            records[label] = {
                "islands": islands,
                "covered_percent": round(100 * covered / max(len(seq), 1), 1),
                "window": min(self.window, len(seq)),
            }
            w = min(self.window, len(seq))
            crit = f"{w}-bp windows with GC > {100 * MIN_GC:.0f}% and CpG o/e > {MIN_OBS_EXP}"
            if not islands:
                gc, oe = cpg_stats(seq)
                lines[label] = [
                    f"No CpG island ({crit}); whole sequence GC {100 * gc:.1f}%, CpG o/e "
                    + ("n/a" if oe is None else f"{oe:.2f}")
                ]
                continue
            ls = [
                f"{len(islands)} island(s) covering {records[label]['covered_percent']:.0f}% of the sequence ({crit})"
            ]
            ls += [
                f"Island at bases {isl['begin']}-{isl['end']} ({isl['length']} bp): GC {isl['gc']:.1f}%, CpG o/e "
                + ("n/a" if isl["obs_exp"] is None else f"{isl['obs_exp']:.2f}")
                for isl in islands[:2]
            ]
            lines[label] = ls
        return Evidence(self.name, self.title, records, lines)
