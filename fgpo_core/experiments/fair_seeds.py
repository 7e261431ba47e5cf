"""The cells of the fair test that the first page quotes, named for a second study with more seeds.

The fair test (``fgpo study --methods fair``) chooses every cell on the in-domain dev over its seeds.
The comparisons the first page and "The fair test on real tables" quote (exact FGPO
against the best sampled estimator at each regularizer and at each one's best; FGPO and GRPO each at
its best regularizer against none) are then trained again with more seeds at the settings chosen
there: each method name with its chosen rate fixed (``<name>-lr<rate>``), so that the second study
trains it at that rate only and chooses nothing. Its first seeds repeat the fair test's runs exactly.

    python -m fgpo_core.experiments.fair_seeds runs/cpu/fair   # prints the method names, comma-separated
"""

from __future__ import annotations

import sys

__all__ = ["HEADLINE", "headline_methods", "main"]

HEADLINE = (
    "FGPO vs best sampled, none",
    "FGPO vs best sampled, ent",
    "FGPO vs best sampled, each at its best",
    "fgpo: best regularizer vs none",
    "grpo: best regularizer vs none",
)
"""The comparisons (names of :func:`fgpo_core.reports.fair.fair_pairs`) whose methods get more seeds."""


def headline_methods(study_dir, table_dir: str = "data/tables/cpu/reader", bench_dir: str = "data/benchmarks/cpu"):
    """The method names, each with its chosen rate fixed, of the :data:`HEADLINE` comparisons."""
    from ..reports.fair import load_fair

    ft = load_fair(study_dir, table_dir, bench_dir)
    lr = ft.study.manifest["chosen_lr"]
    names = dict.fromkeys(m for k in HEADLINE if k in ft.pairs for m in ft.pairs[k])
    if not names:
        raise ValueError(f"{study_dir} holds none of the first page's comparisons")
    return [f"{m}-lr{lr[m]:g}" for m in names]


def main(argv=None) -> int:
    from ..cli_errors import run_command

    args = sys.argv[1:] if argv is None else argv

    def run():
        if len(args) != 1:
            raise ValueError("give the fair test's study folder, e.g. runs/cpu/fair")
        print(",".join(headline_methods(args[0])))
        return 0

    return run_command("fair-seeds", run)


if __name__ == "__main__":
    sys.exit(main())
