"""Benchmarks: schema, validation errors, determinism, disjointness, verified labels, text-only baselines."""

import hashlib
import json
import os
import re
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from fgpo_core.cli import main
from fgpo_core.genomics.benchmarks import (
    QuestionError,
    build_all,
    find_leaks,
    kmer_set,
    read_questions,
    validate_question,
    write_questions,
)
from fgpo_core.genomics.benchmarks.answerability import answerability, text_baselines
from fgpo_core.genomics.benchmarks.families import CpG, family
from fgpo_core.genomics.benchmarks.sources import SIGMA70_THRESHOLD, sigma70_score
from fgpo_core.genomics.benchmarks.suites import LATER_SIZES, SIZES, load_references, tool_library_for
from fgpo_core.genomics.tools.splice import classify, load_maxent, splice_sites

REPO = Path(__file__).resolve().parent.parent
CPU = REPO / "data" / "benchmarks" / "cpu"


@pytest.fixture(scope="module")
def built(ci_bench):
    return ci_bench


def good():
    seq = "ACGT" * 10
    return {
        "id": "q1",
        "suite": "s",
        "split": "test",
        "family": "cpg",
        "shape": "describe",
        "question": f"What is this?\nSequence: {seq}",
        "options": {"A": "one", "B": "two", "C": "three", "D": "four"},
        "answer": "C",
        "sequences": {"": seq},
        "provenance": {"x": 1},
    }


def test_schema_round_trip(tmp_path):
    q = validate_question(good())
    write_questions([q], tmp_path / "q.jsonl")
    back = read_questions(tmp_path / "q.jsonl")
    assert back == [q] and asdict(back[0])["schema"] == 1


@pytest.mark.parametrize(
    "change,msg",
    [
        (lambda o: o.pop("answer"), "field 'answer' is missing"),
        (lambda o: o.update(answer="E"), "field 'answer' must be one of A-D"),
        (lambda o: o.update(options={"A": "x", "B": "y", "C": "z"}), "field 'options' must map exactly"),
        (lambda o: o.update(options={"A": "x", "B": "x", "C": "z", "D": "w"}), "must differ"),
        (lambda o: o.update(split="validation"), "field 'split'"),
        (lambda o: o.update(shape="pick"), "field 'shape'"),
        (lambda o: o.update(sequences={"": "ACGTZ"}), "invalid character 'Z' at position 5"),
        (lambda o: o.update(sequences={"A": "ACGT"}), "must have keys"),
        (lambda o: o.update(question="What is this?"), "must contain its sequence"),
        (lambda o: o.update(question=o["question"] + " Is it three?"), "the answer leaks"),
        (lambda o: o.update(schema=2), "field 'schema'"),
    ],
)
def test_validation_errors_name_line_and_field(tmp_path, change, msg):
    obj = good()
    change(obj)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good() | {"id": "ok"}) + "\n" + json.dumps(obj) + "\n")
    with pytest.raises(QuestionError, match=msg) as info:
        read_questions(path)
    assert str(info.value).startswith("line 2:")


def test_bad_json_and_duplicate_ids(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text(json.dumps(good()) + "\n{not json\n")
    with pytest.raises(QuestionError, match="line 2: not valid JSON"):
        read_questions(p)
    p.write_text(json.dumps(good()) + "\n" + json.dumps(good()) + "\n")
    with pytest.raises(QuestionError, match="line 2: field 'id' 'q1' repeats line 1"):
        read_questions(p)


def test_builder_depends_on_its_seed(built, tmp_path):
    out, manifest = built
    other = build_all(tmp_path / "other", "ci", seed=1, suites=["microbe"], progress=False)
    assert other["suites"]["microbe"]["sha256"] != manifest["suites"]["microbe"]["sha256"]


def test_suites_are_valid_balanced_and_shaped(built):
    out, manifest = built
    for name, info in manifest["suites"].items():
        qs = read_questions(out / info["file"])
        assert len(qs) == info["n"]
        counts = np.array(list(info["answer_letters"].values()))
        assert counts.max() - counts.min() <= 1
        assert {q.shape for q in qs} == {"describe", "select"}
    train_fams = {q.family for q in read_questions(out / "train.jsonl")}
    core_fams = {q.family for q in read_questions(out / "core.jsonl")}
    assert len(core_fams) == 5 and {"taxonomy", "tf_motif"} <= core_fams - train_fams
    assert "regulator" in train_fams and "regulator" not in core_fams


def test_the_training_pool_grows_by_appending(built):
    """The later families come after the first block, which is the pool as it was before it
    grew (its checksum is in the manifest); the appended references follow the first ones."""
    out, manifest = built
    info = manifest["suites"]["train"]
    later = info["later"]
    lines = (out / "train.jsonl").read_bytes().splitlines(keepends=True)
    assert later["first_index"] == SIZES["ci"]["train"] and later["n"] == LATER_SIZES["ci"]["train"]
    assert len(lines) == info["n"] == later["first_index"] + later["n"]
    assert hashlib.sha256(b"".join(lines[: later["first_index"]])).hexdigest() == later["first_block_sha256"]
    qs = read_questions(out / "train.jsonl")
    assert {q.family for q in qs[: later["first_index"]]} == {"splice", "promoter", "cpg", "repeat"}
    assert {q.family for q in qs[later["first_index"] :]} == {"regulator"}
    refs = load_references(out / "references.jsonl")
    first = manifest["references"]["later"]["first_line"] - 1
    assert {r["family"] for r in refs[first:]} == {"regulator"} and "regulator" not in {
        r["family"] for r in refs[:first]
    }


def test_the_regulator_family_is_its_own():
    """Its 40 factors: none named by the TF-motif family or the reader's curriculum; its
    wording shares no five-word phrase with the TF-motif family's or the curriculum's."""
    from fgpo_core.genomics import curriculum
    from fgpo_core.genomics.factors import curriculum_factors, motif_factors, regulator_factors

    reg = {n for n, _ in regulator_factors()}
    assert len(reg) == 40
    assert not reg & {n for n, _ in motif_factors()} and not reg & {n for n, _ in curriculum_factors()}
    assert family("regulator").decisive_tool == "motif_scan"

    def phrases(text, k=5):
        w = re.findall(r"[a-z0-9]+", text.lower())
        return {tuple(w[i : i + k]) for i in range(len(w) - k + 1)}

    mine = phrases(family("regulator").describe_text) | phrases(family("regulator").select_text)
    theirs = phrases(family("tf_motif").describe_text) | phrases(family("tf_motif").select_text)
    for t in list(curriculum.DESCRIBE.values()) + list(curriculum.SELECT.values()):
        theirs |= phrases(t)
    assert mine and not mine & theirs


@pytest.mark.skipif(
    not (CPU / "manifest.json").exists() or not os.environ.get("FGPO_REBUILD_CPU"),
    reason="rebuilds the cpu-profile benchmark (minutes); set FGPO_REBUILD_CPU=1",
)
def test_rebuilding_reproduces_the_committed_cpu_benchmark(tmp_path):
    """The committed cpu benchmark is what the builder makes: every file byte-identical, and the
    training pool's first block is the pool the committed first tables were built from."""
    manifest = build_all(tmp_path, "cpu", seed=0, progress=False)
    committed = json.loads((CPU / "manifest.json").read_text())
    for name in ("dev", "core", "microbe", "mosaic", "train", "indev"):
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (CPU / f"{name}.jsonl").read_bytes(), name
    assert (tmp_path / "references.jsonl").read_bytes() == (CPU / "references.jsonl").read_bytes()
    assert manifest["suites"]["train"]["later"] == committed["suites"]["train"]["later"]


def test_disjointness_holds_and_a_leak_is_caught(built):
    out, _ = built
    train = read_questions(out / "train.jsonl")
    refs = load_references(out / "references.jsonl")
    forbidden = kmer_set([r["seq"] for r in refs] + [s for q in train for s in q.sequences.values()])
    for name in ("dev", "core", "microbe", "mosaic"):
        assert find_leaks(forbidden, read_questions(out / f"{name}.jsonl")) == []
    leaked = read_questions(out / "core.jsonl")[0]
    stolen = next(iter(train[0].sequences.values()))
    key = next(iter(leaked.sequences))
    leaked.sequences[key] = leaked.sequences[key][:20] + stolen[:40] + leaked.sequences[key][60:]
    assert find_leaks(forbidden, [leaked]) == [leaked.id]


def test_planted_features_are_found_by_measurement(built):
    out, _ = built
    qs = [q for n in ("core", "mosaic", "train", "microbe", "indev") for q in read_questions(out / f"{n}.jsonl")]
    tf = family("tf_motif")
    model = load_maxent()
    checked = 0
    for q in qs:
        lab = q.provenance["answer_label"]
        seq = q.sequences[""] if q.shape == "describe" else q.sequences[q.answer]
        if q.family in ("tf_motif", "regulator"):
            assert tf.hits_by_factor(seq).get(lab, 1.0) < 1e-5
            if q.shape == "describe":  # distractor factors have no hit at all
                others = [q.provenance["option_labels"][L] for L in "ABCD" if L != q.answer]
                assert all(tf.hits_by_factor(seq).get(x, 1.0) >= 1e-4 for x in others)
            else:  # no distractor sequence carries the asked factor
                assert all(tf.hits_by_factor(s).get(lab, 1.0) >= 1e-4 for L, s in q.sequences.items() if L != q.answer)
        elif q.family == "splice":
            s = splice_sites(model, seq)
            assert classify(s["donors"], s["acceptors"]) == lab
        elif q.family == "cpg":
            assert CpG.measure(seq) == lab
        elif q.family == "promoter":
            assert (sigma70_score(seq)[0] >= SIGMA70_THRESHOLD) == (lab == "promoter")
        else:
            continue
        checked += 1
    assert checked > 20


def test_answerability_finds_each_decisive_tool(built):
    out, _ = built
    lib = tool_library_for(out, five=True)
    qs = [q for n in ("core", "mosaic") for q in read_questions(out / f"{n}.jsonl")]
    table = answerability(qs, lib)
    assert table.loc["splice", "splice"] > 80 and table.loc["cpg", "composition"] > 80
    assert table.loc["tf_motif", "motif_scan"] > 60
    train = [q for q in read_questions(out / "train.jsonl") if q.family == "regulator"]
    assert answerability(train, lib).loc["regulator", "motif_scan"] > 60


@pytest.mark.skipif(not (CPU / "manifest.json").exists(), reason="the committed cpu-profile benchmarks are not present")
def test_the_committed_training_pool_keeps_its_first_thousand_questions():
    """The committed cpu training pool grew by appending: its first 1,000 lines are the pool
    the first reward tables were built from (their questions' checksum, before it grew)."""
    later = json.loads((CPU / "manifest.json").read_text())["suites"]["train"]["later"]
    lines = (CPU / "train.jsonl").read_bytes().splitlines(keepends=True)
    first = hashlib.sha256(b"".join(lines[: later["first_index"]])).hexdigest()
    assert later["first_index"] == 1000 and first == later["first_block_sha256"]
    assert first == "574d1098d343416d3c8c49b9a668b75ab4879ffa94bae2f7be6406195536a0b9"


@pytest.mark.skipif(not (CPU / "core.jsonl").exists(), reason="the committed cpu-profile benchmarks are not present")
def test_text_only_baselines_sit_near_chance_on_the_cpu_suites():
    qs = [q for n in ("core", "microbe", "mosaic") for q in read_questions(CPU / f"{n}.jsonl")]
    base = text_baselines(qs).loc["all"]
    for rule, pct in base.items():
        assert abs(pct - 25.0) < 6.0, (rule, pct)


def test_cli_benchmark_rebuilds_the_same_suite(built, tmp_path, capsys):
    """Built again alone, from the command line, a suite and its references are byte-identical."""
    _, manifest = built
    assert main(["benchmark", "build", "--suite", "microbe", "--profile", "ci", "--out", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "manifest.json").read_text())
    assert again["suites"]["microbe"]["sha256"] == manifest["suites"]["microbe"]["sha256"]
    assert again["references"]["sha256"] == manifest["references"]["sha256"]
    assert main(["benchmark", "validate", str(tmp_path / "microbe.jsonl")]) == 0
    assert "valid questions" in capsys.readouterr().out
    (tmp_path / "bad.jsonl").write_text('{"id": "x"}\n')
    assert main(["benchmark", "validate", str(tmp_path / "bad.jsonl")]) == 1
