"""Genomic multiple-choice benchmarks built from real sequences that ship in packages.

:mod:`~fgpo_core.benchmarks.schema` (question schema v1, JSONL IO, validation),
:mod:`~fgpo_core.benchmarks.sources` (split-disjoint sequence sources),
:mod:`~fgpo_core.benchmarks.families` (families that plant and verify features),
:mod:`~fgpo_core.benchmarks.suites` (suites, the builder, disjointness checks),
:mod:`~fgpo_core.benchmarks.answerability` (per-tool rules and text-only baselines).
"""
from .schema import LETTERS, Question, QuestionError, read_questions, validate_question, write_questions
from .suites import SIZES, SUITES, build_all, build_suite, find_leaks, kmer_set, load_benchmark, tool_library_for

__all__ = ["LETTERS", "Question", "QuestionError", "read_questions", "validate_question", "write_questions",
           "SIZES", "SUITES", "build_all", "build_suite", "find_leaks", "kmer_set", "load_benchmark",
           "tool_library_for"]
