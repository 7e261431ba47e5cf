"""T12, protein profile scan: the six-frame translation of the sequence searched with profile
HMMs (HMMER3 through pyhmmer) against the protein domain profiles pyhmmer ships.

Those profiles are a handful of Pfam and RREFam families (2-hydroxyacid dehydrogenase NAD
binding, acyl-CoA reductase LuxC, thioesterase, ketoreductase and the RiPP recognition
elements), so almost every fragment finds none: a genuine analysis whose database misses the
question, the kind of tool a large library accumulates.
"""

from __future__ import annotations

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, reverse_complement, validate_sequence

__all__ = ["ProfileScan", "PROFILE_FILES", "E_VALUE"]

PROFILE_FILES = ("PF02826.hmm", "LuxC.hmm", "Thioesterase.hmm", "KR.hmm", "RREFam.hmm")
E_VALUE = 0.01


def _frames(seq: str) -> list[tuple[str, str]]:
    """(frame label, protein) of the six reading frames (stops as '*' cut into pieces later)."""
    from Bio.Seq import Seq

    out = []
    for strand, s in (("+", seq), ("-", reverse_complement(seq))):
        for f in range(3):
            sub = s[f:]
            sub = sub[: len(sub) // 3 * 3].replace("N", "A")
            out.append((f"{strand}{f + 1}", str(Seq(sub).translate())))
    return out


class ProfileScan:
    """T12: HMMER3 search of the six-frame translation against packaged protein profiles."""

    name = "profiles"
    title = "Protein profile scan (HMMER3, packaged profiles)"

    def __init__(self, max_length: int = MAX_LENGTH):
        import pyhmmer

        from ..data import package_file

        self.max_length = max_length
        self.alphabet = pyhmmer.easel.Alphabet.amino()
        self.hmms = []
        for f in PROFILE_FILES:
            with pyhmmer.plan7.HMMFile(package_file("pyhmmer", f"tests/data/hmms/txt/{f}")) as fh:
                self.hmms.extend(fh)
        self.version = f"pyhmmer-{pyhmmer.__version__}"

    def run(self, inp: ToolInput) -> Evidence:
        import pyhmmer

        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            seqs = []
            for frame, prot in _frames(seq):
                for k, piece in enumerate(prot.split("*")):
                    if len(piece) >= 20:
                        seqs.append(
                            pyhmmer.easel.TextSequence(name=f"{frame}_{k}".encode(), sequence=piece).digitize(
                                self.alphabet
                            )
                        )
            hits = []
            if seqs:
                block = pyhmmer.easel.DigitalSequenceBlock(self.alphabet, seqs)
                for top in pyhmmer.hmmsearch(self.hmms, block, E=E_VALUE, cpus=1):
                    name = top.query.name.decode() if isinstance(top.query.name, bytes) else str(top.query.name)
                    for h in top:
                        if h.evalue <= E_VALUE:
                            target = h.name.decode() if isinstance(h.name, bytes) else str(h.name)
                            hits.append(
                                {
                                    "profile": name,
                                    "frame": target.split("_")[0],
                                    "evalue": float(f"{h.evalue:.2g}"),
                                    "score": round(float(h.score), 1),
                                }
                            )
            hits.sort(key=lambda h: h["evalue"])
            records[label] = {"hits": hits, "profiles": len(self.hmms)}
            if hits:
                lines[label] = [
                    f"{h['profile']} in frame {h['frame']}: E = {h['evalue']:.2g}, score {h['score']:.1f}"
                    for h in hits[:2]
                ]
            else:
                lines[label] = [f"No hit among {len(self.hmms)} protein profiles (E <= {E_VALUE:g}) in six frames"]
        return Evidence(self.name, self.title, records, lines)
