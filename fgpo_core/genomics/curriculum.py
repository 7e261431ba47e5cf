"""The reading curriculum: questions for training a frozen reasoner, disjoint from every benchmark.

A reader that follows tool evidence has to be taught to, and what it is taught on
must not overlap the suites it will later be scored on. The curriculum therefore
differs from the benchmarks in all three ways a reader could memorise:

* **sequences**: synthetic DNA (independent bases at a drawn GC level, or short
  Markov chains), never a fragment of the genomes, exons or repeats the benchmarks
  use; :func:`check_disjoint` confirms no 32-mer is shared;
* **names**: transcription factors drawn from JASPAR matrices the benchmark's
  motif family never uses, and invented sources for the genomic expert
  (its reference set here is the curriculum's own, under the task ``source``);
* **wording**: its own question and option templates ("fragment", "recognition
  site", "5' signal"...), none of the benchmark's sentences.

Five skills, each with both question shapes (describe one fragment; select one of
four): ``recognition`` (read the motif scan), ``splicing`` (read the splice
classification), ``composition`` (read GC numbers), ``dinucleotide`` (read GC and
the CpG observed/expected ratio together, at thresholds of its own) and ``source``
(read the expert's vote shares). The evidence is produced by the real tool library on the
curriculum sequences, so the reader learns to read what the tools print; it is
never told which tool matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .benchmarks.families import gc_and_cpg
from .benchmarks.schema import LETTERS, Question
from .factors import curriculum_factors
from .tools import ReferenceSet, ToolLibrary
from .tools.expert import KmerSpectrumEncoder
from .tools.motifs import best_hit_by_factor, load_motifs
from .tools.splice import classify, load_maxent, sample_acceptors, sample_donors, splice_sites

__all__ = ["SKILLS", "SOURCES", "curriculum_library", "make_curriculum", "check_disjoint", "CurriculumSpec"]

SKILLS = ("recognition", "splicing", "composition", "dinucleotide", "source")

SOURCES = (
    "hot-spring archaeon",
    "deep-sea vent bacterium",
    "soil actinomycete",
    "freshwater cyanobacterium",
    "insect endosymbiont",
    "salt-marsh halophile",
)
"""Invented sequence sources for the curriculum's expert task; each is a random Markov chain."""

SPLICE_TEXT = {
    "donor only": "a 5' (donor) splicing signal and no 3' signal",
    "acceptor only": "a 3' (acceptor) splicing signal and no 5' signal",
    "donor and acceptor": "both a 5' and a 3' splicing signal",
    "no site": "neither a 5' nor a 3' splicing signal",
}

DINUCLEOTIDE = {
    "G+C-rich with CpG dinucleotides retained (CpG o/e above 0.8)": (True, True),
    "G+C-rich with CpG dinucleotides suppressed (CpG o/e below 0.4)": (True, False),
    "G+C-poor with CpG dinucleotides suppressed (CpG o/e below 0.4)": (False, False),
    "G+C-poor with CpG dinucleotides retained (CpG o/e above 0.8)": (False, True),
}

GC_BINS = {
    "strongly AT-biased (under 35% G+C)": (0.22, 0.33),
    "mildly AT-biased (38-45% G+C)": (0.39, 0.44),
    "mildly GC-biased (55-62% G+C)": (0.56, 0.61),
    "strongly GC-biased (over 65% G+C)": (0.67, 0.78),
}


@dataclass(frozen=True)
class CurriculumSpec:
    n_per_skill: int = 400
    """Questions per skill (half describe, half select)."""
    seed: int = 7
    """Seed of every draw."""
    length: tuple = (140, 260)
    """Fragment lengths (bp)."""


def _background(rng: np.random.Generator, length: int, gc: float | None = None) -> str:
    gc = float(rng.uniform(0.38, 0.58)) if gc is None else gc
    p = [(1 - gc) / 2, gc / 2, gc / 2, (1 - gc) / 2]
    return "".join(np.array(list("ACGT"))[rng.choice(4, size=length, p=p)])


@lru_cache(maxsize=1)
def _source_chains(seed: int = 5) -> dict:
    """One random order-2 Markov chain per invented source (sharp transition rows, so
    sources differ at the k-mer level as real genomes do)."""
    rng = np.random.default_rng(seed)
    return {s: rng.dirichlet(np.full(4, 0.7), size=16) for s in SOURCES}


def _chain_sequence(source: str, length: int, rng: np.random.Generator) -> str:
    T = _source_chains()[source]
    x = list(rng.choice(4, size=2))
    for _ in range(length - 2):
        x.append(int(rng.choice(4, p=T[x[-2] * 4 + x[-1]])))
    return "".join("ACGT"[c] for c in x)


@lru_cache(maxsize=4)
def curriculum_library(per_source: int = 60, seed: int = 3) -> ToolLibrary:
    """The main four-tool library whose genomic expert consults the curriculum's own
    reference set (task ``source``); the other tools are the benchmark's tools unchanged."""
    rng = np.random.default_rng(seed)
    ids, seqs, labels = [], [], []
    for s in SOURCES:
        for i in range(per_source):
            ids.append(f"ref-{s}-{i}")
            seqs.append(_chain_sequence(s, int(rng.integers(150, 300)), rng))
            labels.append(s)
    enc = KmerSpectrumEncoder()
    return ToolLibrary.main({"source": ReferenceSet.build("source", ids, seqs, labels, enc)}, enc)


# -- skills: each returns (sequence, label) with the label measured, or None ----------------
def _recognition(label, rng, length):
    db = load_motifs()
    bg = _background(rng, length)
    if label is None:
        return bg, None
    m = dict(curriculum_factors())[label]
    w = int(db.widths[m])
    site = "".join("ACGT"[rng.choice(4, p=p)] for p in db.probabilities(m))
    if db.site_pvalue(m, site) >= 1e-5:
        return None
    pos = int(rng.integers(0, length - w + 1))
    return bg[:pos] + site + bg[pos + w :], label


def _splicing(label, rng, length):
    seq = list(_background(rng, length))
    if label in ("acceptor only", "donor and acceptor"):
        acc = sample_acceptors(1, rng, sweeps=30)[0]
        p = int(rng.integers(5, length // 2 - 30))
        seq[p : p + 23] = acc
    if label in ("donor only", "donor and acceptor"):
        don = sample_donors(1, rng)[0]
        p = int(rng.integers(length // 2, length - 12))
        seq[p : p + 9] = don
    s = "".join(seq)
    sites = splice_sites(load_maxent(), s)
    return s, classify(sites["donors"], sites["acceptors"])


def _gc(seq: str) -> float:
    return (seq.count("G") + seq.count("C")) / max(1, len(seq))


def _composition(label, rng, length):
    lo, hi = GC_BINS[label]
    s = _background(rng, length, float(rng.uniform(lo, hi)))
    g = _gc(s)
    for lab, (a, b) in GC_BINS.items():
        if a - 0.02 <= g <= b + 0.02:
            return s, lab
    return None


def _dinucleotide(label, rng, length):
    rich, retained = DINUCLEOTIDE[label]
    gc = float(rng.uniform(0.57, 0.68) if rich else rng.uniform(0.30, 0.43))
    s = list(_background(rng, length, gc))
    if not retained:  # methylation-style loss: most CpGs mutate to TpG or CpA
        for i in range(len(s) - 1):
            if s[i] == "C" and s[i + 1] == "G" and rng.random() < 0.85:
                if rng.random() < 0.5:
                    s[i] = "T"
                else:
                    s[i + 1] = "A"
    s = "".join(s)
    g, oe = _gc(s), gc_and_cpg(s)[1]
    ok_gc = g > 0.55 if rich else g < 0.45
    ok_oe = oe > 0.8 if retained else oe < 0.4
    return (s, label) if ok_gc and ok_oe else None


def _source(label, rng, length):
    return _chain_sequence(label, length, rng), label


def _labels(skill: str) -> tuple:
    return {
        "recognition": tuple(n for n, _ in curriculum_factors()),
        "splicing": tuple(SPLICE_TEXT),
        "composition": tuple(GC_BINS),
        "dinucleotide": tuple(DINUCLEOTIDE),
        "source": SOURCES,
    }[skill]


def _text(skill: str, label: str) -> str:
    if skill == "splicing":
        return SPLICE_TEXT[label]
    if skill == "source":
        return f"{'an' if label[0] in 'aeiou' else 'a'} {label}"
    return label


DESCRIBE = {
    "recognition": "Which DNA-binding protein has a strong recognition site in this fragment?\nFragment: {seq}",
    "splicing": "What splicing signals does this fragment carry?\nFragment: {seq}",
    "composition": "Which statement fits the G+C content of this fragment?\nFragment: {seq}",
    "dinucleotide": "What best describes the dinucleotide make-up of this fragment?\nFragment: {seq}",
    "source": "What is the most likely source of this DNA fragment?\nFragment: {seq}",
}
SELECT = {
    "recognition": "Which candidate fragment carries a strong recognition site for the protein {label}?",
    "splicing": "Which candidate fragment carries {label}?",
    "composition": "Which candidate fragment is {label}?",
    "dinucleotide": "Which candidate fragment is {label}?",
    "source": "Which candidate fragment most likely comes from {label}?",
}


def _draw(skill, label, rng, length, tries: int = 60):
    for _ in range(tries):
        out = {
            "recognition": _recognition,
            "splicing": _splicing,
            "composition": _composition,
            "dinucleotide": _dinucleotide,
            "source": _source,
        }[skill](label, rng, length)
        if out is None:
            continue
        seq, got = out
        if skill == "recognition":
            hits = best_hit_by_factor(seq)
            if label is not None and hits.get(label, 1.0) >= 1e-5:
                continue
            return seq, hits
        if got == label:
            return seq, got
    raise RuntimeError(f"could not draw a {skill} fragment labelled {label!r} in {tries} tries")


def _question(skill: str, shape: str, letter: str, qid: str, rng: np.random.Generator, length_range) -> Question:
    labels = _labels(skill)
    idx = LETTERS.index(letter)
    length = int(rng.integers(*length_range))
    label = labels[int(rng.integers(len(labels)))]
    if shape == "describe":
        seq, info = _draw(skill, label, rng, length)
        pool = [x for x in labels if x != label]
        if skill == "recognition":  # distractor factors without any hit
            pool = [x for x in pool if info.get(x, 1.0) >= 1e-4]
        distract = [str(x) for x in rng.choice(pool, size=3, replace=False)]
        opts = distract[:idx] + [label] + distract[idx:]
        return Question(
            qid,
            "curriculum",
            "train",
            skill,
            "describe",
            DESCRIBE[skill].format(seq=seq),
            {L: _text(skill, x) for L, x in zip(LETTERS, opts)},
            letter,
            {"": seq},
            {"answer_label": label, "source": "synthetic (fgpo_core.genomics.curriculum)"},
        )
    target, _ = _draw(skill, label, rng, length)
    others = []
    while len(others) < 3:
        if skill == "recognition":
            s, hits = _draw(skill, None, rng, length)
            if hits.get(label, 1.0) < 1e-4:
                continue
        else:
            other = [x for x in labels if x != label][int(rng.integers(len(labels) - 1))]
            s, _ = _draw(skill, other, rng, length)
        others.append(s)
    seqs = others[:idx] + [target] + others[idx:]
    seqs = dict(zip(LETTERS, seqs))
    return Question(
        qid,
        "curriculum",
        "train",
        skill,
        "select",
        SELECT[skill].format(label=_text(skill, label)),
        dict(seqs),
        letter,
        seqs,
        {"answer_label": label, "source": "synthetic (fgpo_core.genomics.curriculum)"},
    )


def make_curriculum(spec: CurriculumSpec = CurriculumSpec(), progress: bool = False) -> list[Question]:
    """Every curriculum question, deterministic under ``spec.seed``; answer letters balanced."""
    from tqdm.auto import tqdm

    out = []
    total = spec.n_per_skill * len(SKILLS)
    bar = tqdm(total=total, desc="curriculum", disable=not progress)
    for s_i, skill in enumerate(SKILLS):
        rng = np.random.default_rng([spec.seed, s_i])
        for i in range(spec.n_per_skill):
            shape = ("describe", "select")[i % 2]
            letter = LETTERS[(i // 2) % 4]
            out.append(_question(skill, shape, letter, f"cur-{skill}-{i:05d}", rng, spec.length))
            bar.update()
    bar.close()
    return out


def check_disjoint(questions, bench_dir) -> list[str]:
    """Ids of curriculum questions sharing a 32-mer with any benchmark suite or reference
    (an empty list means disjoint)."""
    from pathlib import Path

    from .benchmarks.suites import find_leaks, kmer_set, load_benchmark, load_references

    _, suites = load_benchmark(bench_dir)
    seqs = [s for qs in suites.values() for q in qs for s in q.sequences.values()]
    seqs += [r["seq"] for r in load_references(Path(bench_dir) / "references.jsonl")]
    return find_leaks(kmer_set(seqs), questions)
