"""The cells of the fair test that the first page quotes, named for a second study with more seeds.

The fair test (``fgpo study --methods fair``) chooses every cell on the in-domain dev over its seeds.
The comparisons the first page and "The fair test on real tables" quote (exact FGPO
against the best sampled estimator at each regularizer and at each one's best; FGPO and GRPO each at
its best regularizer against none) are then trained again with more seeds at the settings chosen
there: each method name with its chosen rate fixed (``<name>-lr<rate>``), so that the second study
trains it at that rate only and chooses nothing. Its first seeds repeat the fair test's runs exactly.

    python -m fgpo_core.experiments.fair_seeds runs/cpu/fair          # the first page's cells, comma-separated
    python -m fgpo_core.experiments.fair_seeds runs/cpu/fair --grid   # the grid's four methods

The grid of reasoners by suites (``make grid``, the chapter "Five reasoners, three suites") trains,
on every reasoner's table, exact FGPO, GRPO and the best sampled estimator, each at the regularizer,
weight and rate the fair test chose for it (:data:`GRID`).
"""

from __future__ import annotations

import sys

__all__ = ["GRID", "HEADLINE", "grid_methods", "headline_methods", "main"]

HEADLINE = (
    "FGPO vs best sampled, none",
    "FGPO vs best sampled, ent",
    "FGPO vs best sampled, each at its best",
    "fgpo: best regularizer vs none",
    "grpo: best regularizer vs none",
)
"""The comparisons (names of :func:`fgpo_core.reports.fair.fair_pairs`) whose methods get more seeds."""


GRID = ("FGPO vs best sampled, each at its best", "grpo: best regularizer vs none")
"""The grid's methods: exact FGPO and the best sampled estimator, each at its best regularizer; GRPO
at its best regularizer, and GRPO with none (the paper's GRPO)."""


def headline_methods(
    study_dir, table_dir: str = "data/tables/cpu/reader", bench_dir: str = "data/benchmarks/cpu", keys=HEADLINE
):
    """The method names, each with its chosen rate fixed, of the comparisons ``keys`` (default
    :data:`HEADLINE`)."""
    from ..reports.fair import load_fair

    ft = load_fair(study_dir, table_dir, bench_dir)
    lr = ft.study.manifest["chosen_lr"]
    names = dict.fromkeys(m for k in keys if k in ft.pairs for m in ft.pairs[k])
    if not names:
        raise ValueError(f"{study_dir} holds none of the comparisons {', '.join(keys)}")
    return [f"{m}-lr{lr[m]:g}" for m in names]


def grid_methods(study_dir, table_dir: str = "data/tables/cpu/reader", bench_dir: str = "data/benchmarks/cpu"):
    """The grid's four method names, rates fixed: FGPO, the best sampled estimator, GRPO at its best
    regularizer, GRPO with none (:data:`GRID`)."""
    names = headline_methods(study_dir, table_dir, bench_dir, keys=GRID)
    if len(names) != 4 or not names[0].startswith("fgpo") or not all(n.startswith("grpo") for n in names[2:]):
        raise ValueError(f"{study_dir}: the grid needs FGPO, a sampled estimator, GRPO twice; got {', '.join(names)}")
    return names


def main(argv=None) -> int:
    from ..cli_errors import run_command

    args = sys.argv[1:] if argv is None else argv

    def run():
        grid = "--grid" in args
        rest = [a for a in args if a != "--grid"]
        if len(rest) != 1:
            raise ValueError(
                "give the fair test's study folder, e.g. runs/cpu/fair (and --grid for the grid's methods)"
            )
        print(",".join(grid_methods(rest[0]) if grid else headline_methods(rest[0])))
        return 0

    return run_command("fair-seeds", run)


if __name__ == "__main__":
    sys.exit(main())
