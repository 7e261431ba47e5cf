"""The suites: a training pool, a dev split, a main test suite, two cross-domain suites and the in-domain dev.

| suite | split | families | like the paper's |
|---|---|---|---|
| ``train`` | train | splice, promoter, cpg, repeat; then regulator | the NT-task training pool (no taxonomy/TF motif) |
| ``dev`` | dev | tf_motif, splice, promoter, taxonomy, cpg | the first dev split, mixed domains; a diagnostic |
| ``core`` | test | tf_motif, splice, promoter, taxonomy, cpg | the main test suite, five families |
| ``microbe`` | test | promoter (C. diphtheriae), taxonomy (bacteria) | a bacterial-centred cross-domain suite |
| ``mosaic`` | test | repeat, tf_motif, cpg, splice | a mixed cross-domain suite |
| ``indev`` | dev | splice, promoter, cpg, repeat, regulator | in-domain dev: every selection reads it |

Everything is drawn deterministically from one seed. Before any file is
written, every evaluation question is checked against the training pool and the
tools' reference data for shared 32-mers (either strand) and redrawn if it
shares one; answer letters are balanced and options shuffled.

The training pool grows by appending: after the first block (``SIZES``) come the
``later`` families' questions (``LATER_SIZES``; today ``regulator``, whose decisive tool
is the motif scan), and after the references of the first families come theirs. The
first block, its references and every evaluation suite are drawn exactly as before
the pool grew, so they stay byte-identical; the appended questions and references are
drawn after the evaluation suites and redrawn (deterministically) wherever they would
share a 32-mer with one of them.

Suites marked ``after`` (today ``indev``, the in-domain dev that every selection reads: the
training families, promoter on the training organisms) are drawn last, under their own seed
stream (the suite's name salts every draw), each sequence from one of the ``sources`` splits'
regions (the dev tenth alone no longer holds enough unused promoter and CpG windows) and drawn
again wherever it would share a 32-mer with the training side or any other suite; nothing drawn
before them changes, so they can be added to a built folder
(:func:`~fgpo_core.genomics.benchmarks.append.append_suites`) and a full build makes the same files.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ...io import plain_name
from .families import Family, family
from .leaks import LeakError, find_leaks, kmer_set, training_kmers
from .schema import read_questions

__all__ = [
    "SUITES",
    "FIRST_SUITES",
    "AFTER_SUITES",
    "SIZES",
    "LATER_SIZES",
    "REFERENCES_PER_LABEL",
    "SuiteSpec",
    "kmer_set",
    "training_kmers",
    "find_leaks",
    "LeakError",
    "load_references",
    "load_benchmark",
    "tool_library_for",
    "file_sha256",
]


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    split: str
    families: tuple
    family_kwargs: tuple = ()
    later: tuple = ()
    """Families appended after the first block (sizes in ``LATER_SIZES``); training pool only."""
    after: bool = False
    """Drawn after every other suite and the training pool's appended block, clear of all of them;
    each drawn sequence that shares a 32-mer with them is drawn again (not the whole question)."""
    weights: tuple = ()
    """Relative number of questions per family (in ``families`` order); empty: as even as n allows."""
    sources: tuple = ()
    """The source splits (sequence regions) an ``after`` suite draws each sequence from, one drawn at
    random per sequence and named in its provenance (``source_split``); empty: the suite's split."""

    def family_objects(self, later: bool = False) -> list[Family]:
        kw = dict(self.family_kwargs)
        return [family(f, **kw.get(f, {})) for f in (self.later if later else self.families)]


SUITES = {
    "train": SuiteSpec("train", "train", ("splice", "promoter", "cpg", "repeat"), later=("regulator",)),
    "dev": SuiteSpec("dev", "dev", ("tf_motif", "splice", "promoter", "taxonomy", "cpg")),
    "core": SuiteSpec("core", "test", ("tf_motif", "splice", "promoter", "taxonomy", "cpg")),
    "microbe": SuiteSpec(
        "microbe",
        "test",
        ("promoter", "taxonomy"),
        (
            ("promoter", {"organisms": ("Corynebacterium diphtheriae",)}),
            (
                "taxonomy",
                {
                    "organisms": (
                        "Escherichia coli",
                        "Corynebacterium diphtheriae",
                        "Bacillus amyloliquefaciens",
                        "Kutzneria sp. 744",
                    )
                },
            ),
        ),
    ),
    "mosaic": SuiteSpec("mosaic", "test", ("repeat", "tf_motif", "cpg", "splice")),
    "indev": SuiteSpec(
        "indev",
        "dev",
        ("splice", "promoter", "cpg", "repeat", "regulator"),
        after=True,
        weights=(2, 1, 2, 2, 2),
        sources=("dev", "train", "test"),
    ),
}
FIRST_SUITES = tuple(n for n, spec in SUITES.items() if n != "train" and not spec.after)
"""The evaluation suites drawn before the training pool's appended block (it is checked against them)."""
AFTER_SUITES = tuple(n for n, spec in SUITES.items() if spec.after)

SIZES = {
    "ci": {"train": 48, "dev": 20, "core": 40, "microbe": 16, "mosaic": 16, "indev": 20},
    "cpu": {"train": 1000, "dev": 200, "core": 1000, "microbe": 500, "mosaic": 500, "indev": 250},
    "gpu": {"train": 2002, "dev": 492, "core": 3590, "microbe": 1000, "mosaic": 1000, "indev": 500},
}
LATER_SIZES = {"ci": {"train": 12}, "cpu": {"train": 250}, "gpu": {"train": 500}}
"""Questions of the ``later`` families, appended after the first block of a suite."""
REFERENCES_PER_LABEL = {"ci": 8, "cpu": 60, "gpu": 150}
"""Labelled training-split sequences per label that the genomic expert (T4) and homology search (T5) consult."""


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, as the manifest records it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_benchmark(bench_dir) -> tuple[dict, dict]:
    """The manifest and every suite of a built benchmark folder, after checking each file's
    SHA-256 against the manifest (a changed file is refused).

    A benchmark folder (what ``fgpo benchmark build`` writes) holds one JSONL file of
    schema-v1 questions per suite, ``references.jsonl`` (the labelled training sequences of
    the expert and homology tools: rows ``{"id", "family", "seq", "label"}``) and
    ``manifest.json``::

        {"suites": {"core": {"file": "core.jsonl", "sha256": "..."}, ...},
         "references": {"file": "references.jsonl", "sha256": "..."}, ...}

    Questions of your own need no such folder: ``fgpo table build --questions FILE.jsonl``
    (with ``--references FILE`` for the expert's labelled sequences)."""
    bench_dir = Path(bench_dir)
    if not bench_dir.is_dir():
        raise FileNotFoundError(f"benchmark folder {bench_dir} does not exist")
    path = bench_dir / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(
            f"{bench_dir} holds no manifest.json, so it is not a built benchmark folder (made by "
            "`fgpo benchmark build`); for a JSONL file of your own questions use --questions FILE"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        files = [(name, info["file"], info["sha256"]) for name, info in manifest["suites"].items()]
        files.append(("references", manifest["references"]["file"], manifest["references"]["sha256"]))
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(
            f"{path} is not a benchmark manifest ({type(exc).__name__}: {exc}); it needs "
            '"suites" (name -> {"file", "sha256"}) and "references" ({"file", "sha256"})'
        ) from None
    for name, fname, sha in files:  # names become files under output folders; files lie in this folder
        plain_name(name, f"{path}: suite name")
        plain_name(fname, f"{path}: file name")
        if not (bench_dir / fname).exists():
            raise FileNotFoundError(f"{bench_dir / fname}, named by {path}, does not exist")
        if file_sha256(bench_dir / fname) != sha:
            raise ValueError(f"{bench_dir / fname} does not match its manifest checksum; rebuild the benchmark")
    suites = {name: read_questions(bench_dir / info["file"]) for name, info in manifest["suites"].items()}
    return manifest, suites


def load_references(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def tool_library_for(bench_dir, five: bool = False, encoder=None):
    """The tool library of a built benchmark: T4 reference sets per family and the T5
    database, from ``references.jsonl`` (training split only)."""
    from ..tools import ToolLibrary, references_from_rows
    from ..tools.expert import KmerSpectrumEncoder

    encoder = encoder or KmerSpectrumEncoder()
    references, db = references_from_rows(load_references(Path(bench_dir) / "references.jsonl"), encoder)
    if not five:
        return ToolLibrary.main(references, encoder)
    return ToolLibrary.five(references, db, encoder)
