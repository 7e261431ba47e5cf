"""T6-T9, the larger library's tools, on sequences with known answers."""

import numpy as np
import pytest

from fgpo_core.genomics.tools import ToolInput, library_from_names, registered_tools
from fgpo_core.genomics.tools.validate import reverse_complement


def _random(n, seed, probs=(0.25, 0.25, 0.25, 0.25)):
    rng = np.random.default_rng(seed)
    return "".join(rng.choice(list("ACGT"), n, p=probs))


@pytest.fixture(scope="module")
def known_gene():
    """A complete E. coli gene that Prodigal calls on the genome, with 60 and 40 bp of flank."""
    import pyrodigal

    from fgpo_core.genomics.data import genome

    g = genome("Escherichia coli")[:60000]
    calls = [
        x
        for x in pyrodigal.GeneFinder(meta=True).find_genes(g.encode())
        if x.strand == 1 and 200 < x.end - x.begin < 600 and not x.partial_begin and not x.partial_end
    ]
    x = calls[0]
    return g, x.begin, x.end


def test_gene_caller_finds_a_known_gene_on_its_strand_and_a_cut_gene_running_off(known_gene):
    from fgpo_core.genomics.tools.genes import gene_records

    g, begin, end = known_gene
    frag = g[begin - 61 : end + 40]
    best = gene_records(frag)[0]
    assert (best["begin"], best["end"], best["strand"]) == (61, end - begin + 61, 1)
    assert best["start_inside"] and best["stop_inside"] and best["start_codon"] == frag[60:63]
    rc = gene_records(reverse_complement(frag))[0]
    assert rc["strand"] == -1 and (rc["begin"], rc["end"]) == (41, end - begin + 41)
    assert rc["start_inside"] and rc["stop_inside"]
    cut = gene_records(g[begin + 60 : begin + 300])[0]  # the gene's start lies before the fragment
    assert cut["strand"] == 1 and not cut["start_inside"] and cut["stop_inside"]
    assert gene_records("ACGT" * 20) == []  # too short to hold a gene


def _islands_by_brute_force(seq, w=200):
    ok = []
    for i in range(len(seq) - w + 1):
        s = seq[i : i + w]
        c, g, cg = s.count("C"), s.count("G"), sum(s[k : k + 2] == "CG" for k in range(w - 1))
        ok.append((c + g) / w > 0.5 and c > 0 and g > 0 and cg * w / (c * g) > 0.6)
    return ok


def test_cpg_islands_match_the_window_criteria_by_brute_force():
    from fgpo_core.genomics.tools.cpg_islands import cpg_islands

    at_rich = (0.35, 0.15, 0.15, 0.35)
    seq = _random(250, 1, at_rich) + _random(300, 2, (0.15, 0.35, 0.35, 0.15)) + _random(250, 3, at_rich)
    ok = _islands_by_brute_force(seq)
    isl = cpg_islands(seq)
    covered = np.zeros(len(seq), bool)
    for i, v in enumerate(ok):
        if v:
            covered[i : i + 200] = True
    mine = np.zeros(len(seq), bool)
    for x in isl:
        mine[x["begin"] - 1 : x["end"]] = True
    assert isl and (mine == covered).all()
    assert all(250 - 200 < x["begin"] and x["end"] < 550 + 200 for x in isl)  # around the GC-rich middle
    assert cpg_islands(_random(400, 4, (0.4, 0.1, 0.1, 0.4))) == []  # AT-rich: none
    assert cpg_islands("CG" * 40)[0]["length"] == 80  # shorter than the window: judged whole


def test_dust_scores_poly_a_at_its_maximum_and_random_dna_low():
    from fgpo_core.genomics.tools.low_complexity import DUST_LEVEL, dust_scores

    assert dust_scores("A" * 64).tolist() == [31.0]  # 62 identical triplets: 62 * 61 / 2 / 61
    assert dust_scores(_random(300, 5)).max() < DUST_LEVEL
    mixed = dust_scores(_random(100, 6) + "CAG" * 30 + _random(100, 7))
    assert mixed.max() > DUST_LEVEL


def test_tandem_repeats_report_the_primitive_unit_and_its_copies():
    from fgpo_core.genomics.tools.low_complexity import tandem_repeats

    seq = "GATTC" + "CA" * 8 + "GTTAGC"  # CA x 8, flanked so it extends by no base
    assert [(t["unit"], t["copies"], t["begin"], t["end"]) for t in tandem_repeats(seq)] == [("CA", 8.0, 6, 21)]
    assert tandem_repeats("A" * 20)[0]["unit"] == "A"  # not AA, AAA, ...
    assert tandem_repeats("ACGTAGCTTGCA") == []


def test_thermodynamics_find_a_planted_hairpin_and_none_in_poly_a():
    from fgpo_core.genomics.tools.thermo import thermo_record

    stem = "GCGCGCATGC"
    hp = "ATATATATAT" + stem + "TTTT" + reverse_complement(stem) + "ATATATATAT"
    r = thermo_record(hp)
    assert r["hairpin_dg"] < -3 and r["hairpin_window"] == 1
    flat = thermo_record("A" * 90)
    assert flat["hairpin_window"] is None and flat["dimer_window"] is None
    assert thermo_record(_random(200, 8, (0.1, 0.4, 0.4, 0.1)))["tm"] > thermo_record(_random(200, 8))["tm"]


def test_the_larger_library_is_registered_and_runs_on_a_question():
    larger = ["genes", "cpg_islands", "low_complexity", "thermo", "signature", "restriction", "profiles"]
    assert set(larger) <= set(registered_tools())
    lib = library_from_names(larger)
    inp = ToolInput({"A": _random(200, 9), "B": "CA" * 60})
    for tool in lib.tools:
        ev = tool.run(inp)
        assert set(ev.records) == set(ev.lines) == {"A", "B"} and ev.text.startswith(f"[{tool.title}]")


def test_genomic_signature_is_strand_symmetric_and_finds_its_own_genome():
    from fgpo_core.genomics.data import genome
    from fgpo_core.genomics.tools.signature import GenomicSignature, delta_star, rho_star

    s = _random(500, 10, (0.1, 0.4, 0.4, 0.1))
    np.testing.assert_allclose(rho_star(s), rho_star(reverse_complement(s)))
    assert delta_star(rho_star(s), rho_star(s)) == 0
    cg = rho_star("ACGT" * 50)  # CG follows C in every copy: far above the 1.0 of independence
    assert cg[6] > 1.5  # ACGT order: CG is index 1 * 4 + 2
    ecoli, cd = genome("Escherichia coli"), genome("Corynebacterium diphtheriae")
    tool = GenomicSignature({"E. coli": ecoli[:300_000], "C. diphtheriae": cd[:300_000]}, max_length=3000)
    for query, name in ((ecoli[320_000:323_000], "E. coli"), (cd[400_000:403_000], "C. diphtheriae")):
        ev = tool.run(ToolInput.single(query))
        d = ev.records[""]["delta_star"]
        assert min(d, key=d.get) == name and ev.lines[""][1].startswith(f"Nearest genomes by delta* (x1000): {name}")


def test_restriction_sites_at_known_positions():
    from fgpo_core.genomics.tools.restriction import PANEL, RestrictionSites

    tool = RestrictionSites()
    ev = tool.run(ToolInput.single("TTTT" + "GAATTC" + "TTTT" + "GCGGCCGC" + "TTTT"))
    cuts = ev.records[""]["cuts"]
    assert cuts["EcoRI"] == [6] and cuts["NotI"] == [17]  # after G^AATTC and GC^GGCCGC (1-based)
    assert "BamHI" not in cuts and set(cuts) <= set(PANEL)
    assert tool.run(ToolInput.single("AT" * 40)).records[""]["cuts"] == {}


def test_profile_scan_finds_a_back_translated_domain_in_its_frame():
    import pyhmmer

    from fgpo_core.genomics.data import package_file
    from fgpo_core.genomics.tools.profiles import ProfileScan

    with pyhmmer.plan7.HMMFile(package_file("pyhmmer", "tests/data/hmms/txt/Thioesterase.hmm")) as fh:
        consensus = next(fh).consensus.upper()[:150]
    codon = {
        "A": "GCG",
        "R": "CGT",
        "N": "AAC",
        "D": "GAT",
        "C": "TGC",
        "Q": "CAG",
        "E": "GAA",
        "G": "GGC",
        "H": "CAT",
        "I": "ATT",
        "L": "CTG",
        "K": "AAA",
        "M": "ATG",
        "F": "TTT",
        "P": "CCG",
        "S": "AGC",
        "T": "ACC",
        "W": "TGG",
        "Y": "TAT",
        "V": "GTG",
    }
    dna = "".join(codon.get(a, "GCG") for a in consensus)
    tool = ProfileScan()
    hits = tool.run(ToolInput.single(reverse_complement(dna))).records[""]["hits"]
    assert hits and hits[0]["profile"] == "Thioesterase" and hits[0]["frame"].startswith("-")
    assert tool.run(ToolInput.single(_random(300, 11))).records[""]["hits"] == []
