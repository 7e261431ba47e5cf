"""The in-domain dev suite ``indev``: the training families and organisms, held out, drawn after every
other suite and sequence-disjoint from all of them; adding it changes no other file."""

import json
from pathlib import Path

import pytest

from fgpo_core.genomics.benchmarks import append_suites, build_all, find_leaks, kmer_set, load_benchmark, read_questions
from fgpo_core.genomics.benchmarks.suites import FIRST_SUITES, SIZES, SUITES, load_references

CPU = Path(__file__).resolve().parent.parent / "data" / "benchmarks" / "cpu"
TRAINING_ORGANISMS = {"Escherichia coli", "Bacillus amyloliquefaciens"}


@pytest.fixture(scope="module")
def built(ci_bench):
    return ci_bench


def _seqs(qs):
    return [s for q in qs for s in q.sequences.values()]


def _promoter_organisms(qs):
    out = set()
    for q in qs:
        if q.family == "promoter":
            p = q.provenance
            out |= {p["organism"]} if q.shape == "describe" else {o["organism"] for o in p["options"].values()}
    return out


def _disjoint_from_everything(bench: Path, manifest: dict) -> dict:
    """For every other suite and the references: how many of them share a 32-mer with indev
    (each side's sequences scanned against the other's k-mers: indev's are few)."""
    indev = read_questions(bench / "indev.jsonl")
    mine = kmer_set(_seqs(indev))
    out = {
        name: len(find_leaks(mine, read_questions(bench / info["file"])))
        for name, info in manifest["suites"].items()
        if name != "indev"
    }
    refs = load_references(bench / "references.jsonl")
    out["references"] = sum(bool(find_leaks(mine, [_Ref(r["seq"])])) for r in refs)
    return out


class _Ref:
    def __init__(self, seq):
        self.id, self.sequences = "ref", {"": seq}


def test_indev_holds_the_training_families_and_organisms(built):
    out, manifest = built
    info = manifest["suites"]["indev"]
    qs = read_questions(out / "indev.jsonl")
    train = read_questions(out / "train.jsonl")
    assert len(qs) == info["n"] == SIZES["ci"]["indev"] and {q.split for q in qs} == {"dev"}
    assert {q.family for q in qs} == {q.family for q in train} == set(SUITES["indev"].families)
    assert _promoter_organisms(qs) <= TRAINING_ORGANISMS and _promoter_organisms(train) == TRAINING_ORGANISMS
    assert set(info["clear_of"]) == {"references", "train"} | set(FIRST_SUITES)


def test_indev_is_sequence_disjoint_from_every_suite_and_reference(built):
    out, manifest = built
    assert set(manifest["suites"]) >= {"train", "indev"} | set(FIRST_SUITES)
    counts = _disjoint_from_everything(out, manifest)
    assert counts == {name: 0 for name in counts}
    # the check can fail: a training sequence planted in an indev question is caught
    qs = read_questions(out / "indev.jsonl")
    stolen = _seqs(read_questions(out / "train.jsonl"))[0]
    key = next(iter(qs[0].sequences))
    qs[0].sequences[key] = qs[0].sequences[key][:10] + stolen[:40] + qs[0].sequences[key][50:]
    assert find_leaks(kmer_set(_seqs(read_questions(out / "train.jsonl"))), qs) == [qs[0].id]


def test_appending_indev_changes_nothing_else_and_matches_a_full_build(built, tmp_path):
    """A folder built without indev holds the same files as one built with it; appending indev
    to it draws the same questions the full build drew."""
    out, manifest = built
    before = build_all(tmp_path, "ci", seed=0, suites=["train", *FIRST_SUITES], progress=False)
    assert "indev" not in before["suites"]
    for name in ["train", *FIRST_SUITES, "references"]:
        fname = "references.jsonl" if name == "references" else f"{name}.jsonl"
        assert (tmp_path / fname).read_bytes() == (out / fname).read_bytes(), name
    after = append_suites(tmp_path, progress=False)
    assert (tmp_path / "indev.jsonl").read_bytes() == (out / "indev.jsonl").read_bytes()
    assert after["suites"]["indev"] == manifest["suites"]["indev"]
    load_benchmark(tmp_path)  # every checksum holds
    with pytest.raises(ValueError, match="only suites drawn after"):
        append_suites(tmp_path, ["core"], progress=False)


@pytest.mark.skipif(not (CPU / "indev.jsonl").exists(), reason="the committed cpu-profile indev suite is not present")
def test_the_committed_indev_suite():
    manifest, suites = load_benchmark(CPU)
    info = manifest["suites"]["indev"]
    qs = suites["indev"]
    assert info["n"] == len(qs) == SIZES["cpu"]["indev"] == 250
    assert {f: sum(v.values()) for f, v in info["families"].items()} == {
        "splice": 56,
        "promoter": 28,
        "cpg": 56,
        "repeat": 55,
        "regulator": 55,
    }
    assert max(info["answer_letters"].values()) - min(info["answer_letters"].values()) <= 1
    assert _promoter_organisms(qs) <= TRAINING_ORGANISMS
    counts = _disjoint_from_everything(CPU, manifest)
    assert counts == {name: 0 for name in ["train", "dev", "core", "microbe", "mosaic", "references"]}
    assert json.loads((CPU / "manifest.json").read_text())["suites"]["dev"]["n"] == 200  # today's dev stays
