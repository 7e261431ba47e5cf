"""Genomic multiple-choice benchmarks built from real sequences that ship in packages.

:mod:`~fgpo_core.genomics.benchmarks.schema` (question schema v1, JSONL IO, validation),
:mod:`~fgpo_core.genomics.benchmarks.sources` (split-disjoint sequence sources),
:mod:`~fgpo_core.genomics.benchmarks.families` (families that plant and verify features),
:mod:`~fgpo_core.genomics.benchmarks.suites` (the suites, loading a built folder, disjointness checks),
:mod:`~fgpo_core.genomics.benchmarks.build` (the builder),
:mod:`~fgpo_core.genomics.benchmarks.answerability` (per-tool rules and text-only baselines),
:mod:`~fgpo_core.genomics.benchmarks.append` (adding the suites drawn last, the in-domain dev, to a built folder).
"""

from .append import append_suites
from .build import build_all
from .schema import LETTERS, Question, QuestionError, read_questions, validate_question, write_questions
from .suites import SIZES, SUITES, find_leaks, kmer_set, load_benchmark, tool_library_for

__all__ = [
    "LETTERS",
    "Question",
    "QuestionError",
    "read_questions",
    "validate_question",
    "write_questions",
    "SIZES",
    "SUITES",
    "build_all",
    "append_suites",
    "find_leaks",
    "kmer_set",
    "load_benchmark",
    "tool_library_for",
]
