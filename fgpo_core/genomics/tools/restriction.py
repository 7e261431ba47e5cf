"""T11, restriction sites: where common restriction enzymes cut the sequence (Biopython's
``Bio.Restriction``, REBASE recognition sites).

A fixed panel of twelve widely used enzymes, from 4-cutters (AluI, HaeIII, MspI/HpaII, TaqI)
to 8-cutters (NotI); HpaII and NotI sites hold CpG. A measurement every cloning bench makes,
which says little about a fragment's origin or function: in a large library, a distractor.
"""

from __future__ import annotations

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, validate_sequence

__all__ = ["RestrictionSites", "PANEL"]

PANEL = ("AluI", "HaeIII", "MspI", "HpaII", "TaqI", "DpnI", "EcoRI", "BamHI", "HindIII", "XhoI", "SmaI", "NotI")


class RestrictionSites:
    """T11: cut positions of a panel of common restriction enzymes."""

    name = "restriction"
    title = "Restriction sites (REBASE panel of 12 enzymes)"

    def __init__(self, max_length: int = MAX_LENGTH):
        import Bio
        from Bio.Restriction import RestrictionBatch

        self.max_length = max_length
        self.batch = RestrictionBatch(list(PANEL))
        self.version = f"biopython-{Bio.__version__}"

    def run(self, inp: ToolInput) -> Evidence:
        from Bio.Seq import Seq

        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            hits = {str(e): sorted(v) for e, v in self.batch.search(Seq(seq)).items()}
            cuts = {e: hits[e] for e in PANEL if hits.get(e)}
            records[label] = {"cuts": cuts}
            if cuts:
                lines[label] = [
                    f"Cut by {len(cuts)} of the {len(PANEL)} enzymes: "
                    + ", ".join(f"{e} ({len(v)}x)" for e, v in cuts.items())
                ]
            else:
                lines[label] = [f"No site for any of the {len(PANEL)} enzymes of the panel"]
        return Evidence(self.name, self.title, records, lines)
