"""T9, thermodynamics: primer3's nearest-neighbour melting temperature of the sequence and the
most stable hairpin and self-dimer of its 60-bp windows (primer3-py, SantaLucia 1998
parameters, 50 mM monovalent salt, 1.5 mM Mg2+ as primer3's defaults).

The hairpin and dimer searches take at most 60 bases, so the sequence is read in windows of
60 bp every 30 bp and the most stable (lowest free energy) structure is reported with its
window. A measurement of the molecule that carries little about where it comes from: in a
large library, a likely distractor.
"""

from __future__ import annotations

from .base import Evidence, ToolInput
from .validate import MAX_LENGTH, validate_sequence

__all__ = ["Thermodynamics", "thermo_record", "THERMO_WINDOW"]

THERMO_WINDOW = 60


def thermo_record(seq: str) -> dict:
    """Melting temperature (degrees C) of the whole sequence and the lowest hairpin and
    homodimer free energies (kcal/mol) over its 60-bp windows, with their windows' starts."""
    import primer3

    clean = seq.replace("N", "")
    starts = list(range(0, max(len(clean) - THERMO_WINDOW, 0) + 1, THERMO_WINDOW // 2))
    if starts and starts[-1] + THERMO_WINDOW < len(clean):
        starts.append(len(clean) - THERMO_WINDOW)
    hair, dimer = (0.0, None), (0.0, None)
    for s in starts:
        w = clean[s : s + THERMO_WINDOW]
        h, d = primer3.calc_hairpin(w), primer3.calc_homodimer(w)
        if h.structure_found and h.dg / 1000 < hair[0]:
            hair = (h.dg / 1000, s + 1)
        if d.structure_found and d.dg / 1000 < dimer[0]:
            dimer = (d.dg / 1000, s + 1)
    return {
        "tm": round(float(primer3.calc_tm(clean)), 1) if clean else None,
        "hairpin_dg": round(hair[0], 2),
        "hairpin_window": hair[1],
        "dimer_dg": round(dimer[0], 2),
        "dimer_window": dimer[1],
    }


class Thermodynamics:
    """T9: melting temperature, hairpins and self-dimers (primer3)."""

    name = "thermo"
    title = "Thermodynamics (primer3)"

    def __init__(self, max_length: int = MAX_LENGTH):
        import primer3

        self.max_length = max_length
        self.version = f"primer3-py-{primer3.__version__}"

    def run(self, inp: ToolInput) -> Evidence:
        records, lines = {}, {}
        for label, raw in inp.sequences.items():
            seq = validate_sequence(raw, self.max_length, name=f"sequence {label}".strip())
            r = thermo_record(seq)
            records[label] = r
            tm = "n/a" if r["tm"] is None else f"{r['tm']:.1f} C"
            hp = (
                f"{r['hairpin_dg']:.1f} kcal/mol (window at base {r['hairpin_window']})"
                if r["hairpin_window"]
                else "none found"
            )
            dm = (
                f"{r['dimer_dg']:.1f} kcal/mol (window at base {r['dimer_window']})"
                if r["dimer_window"]
                else "none found"
            )
            lines[label] = [f"Melting temperature {tm}", f"Most stable hairpin {hp}; most stable self-dimer {dm}"]
        return Evidence(self.name, self.title, records, lines)
