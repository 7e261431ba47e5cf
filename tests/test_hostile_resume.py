"""Resumes under other inputs, and two jobs in one folder: a study's parts and a table's chunks are
reused only under the very inputs they were made from; anything else is rebuilt or refused in one
line, and a second live study into one folder is refused."""

import json
import os
import re

import numpy as np
import pytest
from helpers import HashReasoner, question

from fgpo_core.cli import main


class SaltedReasoner(HashReasoner):
    """Another reasoner over the same questions: other answers, another id."""

    id = "salted-hash-reasoner"

    def answer(self, batch):
        return super().answer([(q, ev + " salt") for q, ev in batch])


class FakeEncoder:
    """Features from a hash of the prompt (no model needed); ``seed`` gives another encoder's."""

    def __init__(self, seed=0):
        self.seed, self.fingerprint = seed, f"fake{seed}"

    def __call__(self, texts):
        import hashlib

        return np.stack(
            [
                np.random.default_rng(int(hashlib.sha256(f"{self.seed}{t}".encode()).hexdigest()[:8], 16)).normal(
                    size=8
                )
                for t in texts
            ]
        )


SIZES = {"train": 8, "dev": 4, "core": 4}


@pytest.fixture(scope="module")
def study_inputs(ci_bench, tmp_path_factory):
    from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
    from fgpo_core.selectors.features import build_features
    from fgpo_core.table.build import build_table, merge_table

    bench, _ = ci_bench
    root = tmp_path_factory.mktemp("hostile-study")
    _, suites = load_benchmark(bench)
    lib = tool_library_for(bench)
    qs = {s: suites[s][:n] for s, n in SIZES.items()}
    for name, reasoner in (("tables", HashReasoner()), ("other-tables", SaltedReasoner())):
        for s, q in qs.items():
            build_table(q, lib, reasoner, root / name / s, progress=False)
            merge_table(root / name / s)
    build_features(qs, root / "feat", progress=False, model=FakeEncoder(0))
    build_features(qs, root / "other-feat", progress=False, model=FakeEncoder(1))
    build_features(qs, root / "feat5", n_tools=5, progress=False, model=FakeEncoder(0))
    # the spread study's inputs: four training questions evenly spread over the whole split
    from fgpo_core.experiments.study_inputs import spread_indices

    spread = {**qs, "train": [suites["train"][i] for i in spread_indices(len(suites["train"]), 4)]}
    for s, q in spread.items():
        build_table(q, lib, HashReasoner(), root / "spread-tables" / s, progress=False)
        merge_table(root / "spread-tables" / s)
    build_features(spread, root / "spread-feat", progress=False, model=FakeEncoder(0))
    return bench, root


def _argv(bench, root, out, tables="tables", feat="feat", seeds=1):
    return [
        "study",
        "--methods",
        "fgpo",
        "--seeds",
        str(seeds),
        "--lrs",
        "1e-1",
        "--epochs",
        "1",
        "--suites",
        "core",
        "--n-train",
        "8",
        "--n-dev",
        "4",
        "--n-test",
        "4",
        "--bench-dir",
        str(bench),
        "--table-dir",
        str(root / tables),
        "--features-dir",
        str(root / feat),
        "--out-dir",
        str(out),
    ]


def _fingerprints(out):
    out_ = {}
    for p in sorted((out / "parts").glob("*.npz")):
        with np.load(p) as z:
            out_[p.name] = str(z["fingerprint"])
    return out_


def one_line_error(capsys, status, *words):
    raw = capsys.readouterr().err
    lines = [ln for ln in re.split(r"[\r\n]+", raw) if ln.strip() and "%|" not in ln]
    assert status == 2, raw
    assert len(lines) == 1 and "Traceback" not in raw, raw
    for w in words:
        assert w in lines[0], lines[0]


# -- studies ----------------------------------------------------------------------------------------


def test_a_study_resumed_on_another_reasoners_tables_retrains_every_part(study_inputs, tmp_path, capsys):
    bench, root = study_inputs
    out = tmp_path / "st"
    assert main(_argv(bench, root, out)) == 0
    first = _fingerprints(out)
    assert main(_argv(bench, root, out)) == 0  # the same inputs: every part reused
    assert _fingerprints(out) == first
    assert main(_argv(bench, root, out, tables="other-tables")) == 0
    again = _fingerprints(out)
    assert set(again) == set(first) and all(again[k] != first[k] for k in first)
    man = json.loads((out / "manifest.json").read_text())
    assert man["tables"]["train"]["reasoner"] == SaltedReasoner.id
    assert set(man["inputs"]) == {"train", "dev", "core"}


def test_a_study_resumed_on_other_features_retrains_every_part(study_inputs, tmp_path):
    bench, root = study_inputs
    out = tmp_path / "st"
    assert main(_argv(bench, root, out)) == 0
    first = _fingerprints(out)
    assert main(_argv(bench, root, out, feat="other-feat")) == 0
    again = _fingerprints(out)
    assert all(again[k] != first[k] for k in first)
    assert json.loads((out / "manifest.json").read_text())["features"]["fingerprint"] == "fake1"


def test_spread_indices_cover_the_split_evenly():
    from fgpo_core.experiments.study_inputs import spread_indices

    idx = spread_indices(1250, 500)
    assert len(idx) == 500 and idx[0] == 0 and idx[-1] == 1249 and set(np.diff(idx)) == {2, 3}
    assert (idx >= 1000).sum() == 100  # a family appended last gets its share
    assert spread_indices(5, 0).tolist() == spread_indices(5, 9).tolist() == [0, 1, 2, 3, 4]


def test_a_study_on_spread_training_questions_trains_on_them(study_inputs, tmp_path):
    from fgpo_core.experiments.study import load_study
    from fgpo_core.genomics.benchmarks import load_benchmark

    bench, root = study_inputs
    out = tmp_path / "st"
    argv = _argv(bench, root, out, tables="spread-tables", feat="spread-feat")
    argv[argv.index("--n-train") + 1] = "4"
    assert main(argv + ["--train-spread"]) == 0
    _, suites = load_benchmark(bench)
    assert load_study(out).manifest["config"]["train_spread"] is True
    # the first four training questions are not in these tables: the study read the spread ones
    assert main(argv) == 2


def test_a_study_refuses_features_of_another_tool_count(study_inputs, tmp_path, capsys):
    bench, root = study_inputs
    status = main(_argv(bench, root, tmp_path / "st", feat="feat5"))
    one_line_error(capsys, status, "5 tool slots", "4 tools")
    assert not (tmp_path / "st" / "parts").exists() or not list((tmp_path / "st" / "parts").iterdir())


def test_a_second_live_study_into_one_folder_is_refused(study_inputs, tmp_path, capsys):
    bench, root = study_inputs
    out = tmp_path / "st"
    out.mkdir()
    lock = out / ".study.lock"
    lock.write_text(str(os.getppid()))  # a live process holds the folder
    status = main(_argv(bench, root, out))
    one_line_error(capsys, status, "another study", str(os.getppid()))
    assert not (out / "manifest.json").exists() and lock.read_text() == str(os.getppid())
    lock.write_text("999999999")  # its study is gone: the lock is taken over, and released at the end
    assert main(_argv(bench, root, out)) == 0
    assert not lock.exists() and (out / "manifest.json").exists()


def test_assembly_refuses_a_part_rewritten_while_the_study_ran(study_inputs, tmp_path, monkeypatch, capsys):
    import fgpo_core.experiments.study as study

    bench, root = study_inputs
    out = tmp_path / "st"
    assert main(_argv(bench, root, out)) == 0  # seed 0 done
    part = out / "parts" / "fgpo__lr0.1__s0.npz"
    train_head = study.train_head

    def meanwhile(*args, **kwargs):  # while seed 1 trains, another run rewrites seed 0's part
        with np.load(part) as z:
            arrays = {k: z[k] for k in z.files}
        np.savez_compressed(part, **{**arrays, "fingerprint": np.array("another-run")})
        return train_head(*args, **kwargs)

    monkeypatch.setattr(study, "train_head", meanwhile)
    before = (out / "picks.parquet").read_bytes()
    status = main(_argv(bench, root, out, seeds=2))
    one_line_error(capsys, status, "fgpo__lr0.1__s0.npz", "fingerprint changed")
    assert (out / "picks.parquet").read_bytes() == before  # nothing assembled from the mixed parts


# -- tables -----------------------------------------------------------------------------------------


@pytest.fixture
def qfile(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(question(i, seq="ACGTTGCA" * 12 if i % 2 else "GGCGCCTA" * 12).to_json() + "\n" for i in range(2))
    )
    return path


def _refs(path, label):
    path.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "family": "cpg", "seq": seq, "label": label}) + "\n"
            for i, seq in enumerate(("ACGCGCGT" * 10, "ATATATTA" * 10))
        )
    )
    return path


def test_a_table_build_resumed_with_other_references_is_refused(tmp_path, qfile, capsys, monkeypatch):
    import fgpo_core.reasoners as reasoners

    monkeypatch.setattr(reasoners, "get_reasoner", lambda name: HashReasoner())
    argv = [
        "table",
        "build",
        "--questions",
        str(qfile),
        "--tools",
        "composition,expert",
        "--chunk-size",
        "1",
        "--out",
        str(tmp_path / "t"),
    ]
    a, b = _refs(tmp_path / "a.jsonl", "island-like"), _refs(tmp_path / "b.jsonl", "AT-rich")
    assert main(argv + ["--references", str(a)]) == 0
    capsys.readouterr()
    assert main(argv + ["--references", str(a)]) == 0  # the same references: resumed
    capsys.readouterr()
    status = main(argv + ["--references", str(b)])
    one_line_error(capsys, status, "made under different inputs", "references_sha256")


def test_a_tool_replaced_under_the_same_name_and_version_is_refused_on_resume(tmp_path):
    from fgpo_core.genomics.tools import Composition, Evidence, ToolLibrary
    from fgpo_core.table import ManifestMismatch
    from fgpo_core.table.build import build_table

    class Impostor:  # a plugin's tool under the built-in's name and version
        name, title, version = "composition", "Sequence composition", "1"

        def run(self, inp):
            return Evidence(self.name, self.title, {"": {}}, {"": ["GC 99%"]})

    qs = [question(i) for i in range(2)]
    build_table(
        qs, ToolLibrary([Composition()]), HashReasoner(), tmp_path / "t", chunk_size=1, progress=False, max_chunks=1
    )
    with pytest.raises(ManifestMismatch, match="tool_code"):
        build_table(qs, ToolLibrary([Impostor()]), HashReasoner(), tmp_path / "t", chunk_size=1, progress=False)


def test_a_build_begun_before_tools_code_was_recorded_is_not_resumed(tmp_path):
    from fgpo_core.genomics.tools import Composition, ToolLibrary
    from fgpo_core.table import ManifestMismatch
    from fgpo_core.table.build import build_table

    qs = [question(i) for i in range(2)]
    lib = ToolLibrary([Composition()])
    build_table(qs, lib, HashReasoner(), tmp_path / "t", chunk_size=1, progress=False, max_chunks=1)
    man = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert set(man["tool_code"]) == {"composition"} and man["references_sha256"] is None
    old = {k: v for k, v in man.items() if k not in ("tool_code", "references_sha256")}
    (tmp_path / "t" / "manifest.json").write_text(json.dumps(old))
    with pytest.raises(ManifestMismatch, match="made before a table's manifest recorded tool_code"):
        build_table(qs, lib, HashReasoner(), tmp_path / "t", chunk_size=1, progress=False)


# -- what was committed before these keys still reads -------------------------------------------------


def test_committed_tables_and_studies_still_read():
    from pathlib import Path

    from fgpo_core.experiments.study import load_study
    from fgpo_core.table import load_table

    table, study = Path("data/tables/cpu/reader/dev"), Path("runs/cpu/study-features/minilm")
    if not (table / "manifest.json").exists() or not (study / "manifest.json").exists():
        pytest.skip("the committed artifacts are not in this checkout")
    t = load_table(table)
    assert t.n_questions > 0
    st = load_study(study)
    assert len(st.picks) > 0
