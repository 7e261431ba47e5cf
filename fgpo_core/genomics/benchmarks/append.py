"""Adding the suites drawn after all others (today the in-domain dev ``indev``) to a built folder.

:func:`~fgpo_core.genomics.benchmarks.build.build_all` draws the ``after`` suites last, so adding
them to a folder built before they existed changes no other file: the same draws, checked against
the same training side and suites, give the same questions a full rebuild gives.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...io import write_text
from .build import after_suites, suite_entry
from .schema import write_questions
from .suites import AFTER_SUITES, FIRST_SUITES, SUITES, load_benchmark, load_references

__all__ = ["append_suites"]


def append_suites(bench_dir, names=AFTER_SUITES, progress: bool = True) -> dict:
    """Add the ``after`` suites ``names`` to a built benchmark folder that holds every other suite,
    drawn exactly as :func:`build_all` draws them (same profile and seed, from the manifest);
    the other files are left as they are. Returns the updated manifest."""
    bench_dir = Path(bench_dir)
    manifest, suites = load_benchmark(bench_dir)
    names = list(names)
    bad = [n for n in names if n not in SUITES or not SUITES[n].after]
    if bad:
        raise ValueError(
            f"only suites drawn after the others can be appended ({', '.join(AFTER_SUITES)}), not {bad[0]!r}"
        )
    missing = [n for n in ("train",) + FIRST_SUITES if n not in suites]
    if missing:
        raise ValueError(f"{bench_dir} lacks suite {missing[0]!r}; an appended suite is checked against every suite")
    profile, seed = manifest["profile"], int(manifest["seed"])
    refs = load_references(bench_dir / manifest["references"]["file"])
    done = [n for n in AFTER_SUITES if n in suites and n not in names]
    others = {n: suites[n] for n in FIRST_SUITES}
    drawn = after_suites(
        seed,
        profile,
        refs,
        suites["train"],
        {**others, **{n: suites[n] for n in done}},
        [n for n in AFTER_SUITES if n in names],
        progress,
    )
    for name, (qs, redrawn) in drawn.items():
        path = bench_dir / f"{name}.jsonl"
        write_questions(qs, path)
        manifest["suites"][name] = suite_entry(name, qs, redrawn, path)
    write_text(bench_dir / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
    return manifest
