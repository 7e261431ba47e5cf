"""What every training run of the LM selector shares, whatever its objective (:class:`RunSetup`:
the benchmark, the tables, the run folder, the prompt), and the questions and table rows of a
split it reads (:func:`split_data`). :mod:`fgpo_core.experiments.run` re-exports both."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunSetup", "split_data", "dev_data"]


@dataclass
class RunSetup:
    """What every training run shares, whatever its objective."""

    bench_dir: str = "data/benchmarks/cpu"
    """A built benchmark folder (train and dev suites)."""
    table_dir: str = "data/tables/cpu/reader"
    """Folder of merged reward tables with train/ and dev/ subfolders."""
    out_dir: str = "runs/cpu/fgpo"
    """The run folder (adapter, checkpoints, manifest)."""
    n_train: int = 0
    """Use only the first N training questions (0: all)."""
    n_dev: int = 0
    """Use only the first N dev questions (0: all)."""
    keep: int = 40
    """Bases kept at each end of a long sequence in the selector's prompt (0: whole sequences)."""
    threads: int = 2
    """torch CPU threads."""
    init_adapter: str = ""
    """Start from this run folder's adapter (e.g. the format warm-up's) instead of a fresh one."""
    described: bool = False
    """Named tools: train with the tools' real names and descriptions in the selector's prompt (G.2)
    instead of anonymous slots (G.1): the paper's named-versus-anonymous sensitivity. The run's evaluations
    then use the same prompt."""
    merge_init: bool = False
    """With ``init_adapter``: merge that adapter into the base weights and train a fresh LoRA adapter
    of the config's rank on top (a start shared by runs of different ranks), instead of
    continuing the adapter itself."""
    dev_suite: str = "dev"
    """The suite whose questions choose the kept checkpoint and the early stop: "indev" (the in-domain
    dev: the training families and organisms, held out; a run on part of the pool reads only its
    questions in that part's domain, :func:`dev_data`) or "dev" (the former dev, which holds
    out-of-domain families; the default, so runs recorded before this field read as they were made)."""


def split_data(setup: RunSetup, split: str, n: int = 0):
    """The first ``n`` (0: all) questions of a benchmark split and their rows of the split's
    reward table: ``(questions, table)``."""
    from ..genomics.benchmarks import load_benchmark
    from ..table import load_table

    if n < 0:
        raise ValueError(f"--n-{'train' if split == 'train' else 'dev'} must be 0 (all questions) or positive, got {n}")
    _, suites = load_benchmark(setup.bench_dir)
    if split not in suites:
        raise ValueError(f"{setup.bench_dir} has no suite {split!r}; it has {', '.join(sorted(suites))}")
    if not (Path(setup.table_dir) / split).is_dir():
        raise ValueError(f"{setup.table_dir} has no reward table for the suite {split!r}")
    qs = suites[split][:n] if n else suites[split]
    return qs, load_table(Path(setup.table_dir) / split).select([q.id for q in qs])


def dev_data(setup: RunSetup, train_questions):
    """The questions (and table rows) that choose a run's kept checkpoint and early stop: the first
    ``n_dev`` of ``setup.dev_suite``; of the in-domain dev, only those in the domain of the run's own
    training questions (:func:`~fgpo_core.evaluation.domains.in_domain`), so a run on part of the
    pool never chooses on a family or organism it did not train on."""
    from ..evaluation.domains import IN_DOMAIN_DEV, in_domain

    qs, table = split_data(setup, setup.dev_suite, setup.n_dev)
    if setup.dev_suite != IN_DOMAIN_DEV:
        return qs, table
    kept = in_domain(qs, train_questions)
    if not kept:
        raise ValueError(f"none of the {len(qs)} in-domain dev questions is in the domain of the training questions")
    return kept, table.select([q.id for q in kept])
