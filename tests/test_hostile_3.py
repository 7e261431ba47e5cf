"""The third hostile-input set (issue 51): files read back that are torn, hand-edited or planted;
output paths that would leave their folder; OS errors. Each case ends in one line on stderr and
exit status 2, in the right result, or in a rebuild of the damaged part: never a traceback, a
silent wrong result, a write outside the output folder or a folder stuck until files are deleted
by hand."""

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import HashReasoner, question

from fgpo_core.cli import main

ROOT = Path(__file__).resolve().parents[1]


def one_line_error(capsys, status, *words):
    """The command failed with status 2 and exactly one line on stderr (besides progress bars)
    holding ``words``."""
    raw = capsys.readouterr().err
    lines = [ln for ln in re.split(r"[\r\n]+", raw) if ln.strip() and "%|" not in ln]
    assert status == 2, raw
    assert len(lines) == 1 and "Traceback" not in raw, raw
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


class FakeEncoder:
    """Features from a hash of the prompt (no model needed)."""

    fingerprint = "fake0"

    def __call__(self, texts):
        import hashlib

        return np.stack(
            [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=8) for t in texts]
        )


SIZES = {"train": 8, "dev": 4, "core": 4}


@pytest.fixture(scope="module")
def inputs(ci_bench, tmp_path_factory):
    """A ci benchmark's first questions, their tables (a stand-in reasoner) and features."""
    from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
    from fgpo_core.selectors.features import build_features
    from fgpo_core.table.build import build_table, merge_table

    bench, _ = ci_bench
    root = tmp_path_factory.mktemp("hostile3")
    _, suites = load_benchmark(bench)
    lib = tool_library_for(bench)
    qs = {s: suites[s][:n] for s, n in SIZES.items()}
    for s, q in qs.items():
        build_table(q, lib, HashReasoner(), root / "tables" / s, progress=False)
        merge_table(root / "tables" / s)
    build_features(qs, root / "feat", progress=False, model=FakeEncoder())
    return bench, root, qs, lib


def _study_argv(bench, root, out, methods="fgpo", suites="core", feat="feat"):
    return [
        "study",
        "--methods",
        methods,
        "--seeds",
        "1",
        "--lrs",
        "1e-1",
        "--epochs",
        "1",
        "--suites",
        suites,
        "--n-train",
        "8",
        "--n-dev",
        "4",
        "--n-test",
        "4",
        "--bench-dir",
        str(bench),
        "--table-dir",
        str(root / "tables"),
        "--features-dir",
        str(root / feat),
        "--out-dir",
        str(out),
    ]


def _copy_table(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


# -- 1. one safe writer: no planted link is followed, no path leaves its folder ------------------------


def test_a_link_planted_at_the_old_temporary_name_is_never_written_through(inputs, tmp_path):
    from fgpo_core.table.build import merge_table

    _, root, _, _ = inputs
    table = _copy_table(root / "tables" / "dev", tmp_path / "shared" / "dev")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for name in ("table.parquet", "manifest.json"):  # the names the old writer used, and the final names
        os.symlink(victim, table / f"{name}.{os.getpid()}.tmp")
    (table / "table.parquet").unlink()
    os.symlink(victim, table / "table.parquet")
    merge_table(table)
    assert victim.read_text() == "precious"
    assert not (table / "table.parquet").is_symlink() and (table / "table.parquet").stat().st_size > 0
    from fgpo_core.table import load_table

    assert load_table(table).n_questions == SIZES["dev"]


def test_temporary_files_are_fresh_exclusive_and_their_writers_never_reopen_a_name(tmp_path, monkeypatch):
    from fgpo_core.io import atomic_dir, atomic_file, atomic_path, write_text

    seen = []
    for _ in range(2):
        with atomic_path(tmp_path / "f.npz", suffix=".npz") as tmp:
            seen.append(tmp.name)
            assert tmp.exists() and tmp.stat().st_size == 0 and tmp.name.endswith(".npz")
            np.savez(tmp, a=np.arange(3))
    assert seen[0] != seen[1]  # not predictable from the pid
    victim = tmp_path / "victim"
    victim.write_text("precious")
    with pytest.raises(FileExistsError, match="replaced while it was written"):  # a temporary swapped for a link
        with atomic_path(tmp_path / "g.txt") as tmp:
            tmp.unlink()
            os.symlink(victim, tmp)
    assert victim.read_text() == "precious" and not (tmp_path / "g.txt").exists()
    with atomic_file(tmp_path / "h.bin") as fh:
        fh.write(b"x")
    write_text(tmp_path / "t.txt", "y")
    os.symlink(victim, tmp_path / "d")  # a link where a folder is replaced: the link goes, not its target
    with atomic_dir(tmp_path / "d") as d:
        (d / "x").write_text("1")
    assert victim.read_text() == "precious" and (tmp_path / "d" / "x").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "f.npz", "h.bin", "t.txt", "victim"]


@pytest.mark.parametrize("folder", ["../escape", "/tmp/fgpo-h3-escape", "a/../../b", ".."])
def test_an_lm_grids_folder_may_not_leave_the_runs_folder(tmp_path, capsys, folder):
    runs = tmp_path / "deep" / "runs"
    status = main(["lm", "--runs-dir", str(runs), "--folder", folder, "--bench-dir", str(tmp_path / "none")])
    one_line_error(capsys, status, "not a plain name")
    assert not (tmp_path / "deep" / "escape").exists() and not Path("/tmp/fgpo-h3-escape").exists()


def test_the_one_path_check(tmp_path):
    from fgpo_core.io import inside

    assert inside(tmp_path, "a", "b") == tmp_path / "a" / "b"
    for bad in ("..", "", "x/y", "/abs"):
        with pytest.raises(ValueError, match="not a plain name"):
            inside(tmp_path, bad)


# -- 2. OS errors and every user error: one line, exit 2 -----------------------------------------------


@pytest.mark.parametrize(
    "err",
    [
        OSError(errno.EROFS, os.strerror(errno.EROFS), "/out/table.parquet"),
        OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/out/table.parquet"),
        OSError(errno.EFBIG, os.strerror(errno.EFBIG)),
        MemoryError(),
        MemoryError("Unable to allocate 8.00 GiB"),
    ],
)
def test_os_errors_and_memory_are_one_line(inputs, tmp_path, capsys, monkeypatch, err):
    import pyarrow.parquet as pq

    _, root, _, _ = inputs
    table = _copy_table(root / "tables" / "core", tmp_path / "core")

    def fail(*a, **k):
        raise err

    monkeypatch.setattr(pq, "write_table", fail)
    one_line_error(capsys, main(["table", "merge", str(table)]))
    monkeypatch.undo()
    assert main(["table", "merge", str(table)]) == 0  # nothing left half-written: the merge simply runs again


def test_a_full_disk_during_a_table_build_is_one_line_and_the_build_resumes(inputs, tmp_path, capsys, monkeypatch):
    import pyarrow.parquet as pq

    bench, root, qs, _ = inputs
    out = tmp_path / "t"
    argv = [
        "table",
        "build",
        "--bench",
        str(bench),
        "--suite",
        "dev",
        "--limit",
        "4",
        "--reasoner",
        "minilm",
        "--out",
        str(out),
        "--chunk-size",
        "2",
    ]
    real, calls = pq.write_table, []

    def full(table, where, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(table, where, *a, **k)

    from fgpo_core import reasoners

    monkeypatch.setattr(reasoners, "get_reasoner", lambda name: HashReasoner())
    monkeypatch.setattr(pq, "write_table", full)
    one_line_error(capsys, main(argv), "No space left on device")
    monkeypatch.setattr(pq, "write_table", real)
    assert main(argv) == 0
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


def test_a_symlink_loop_and_a_name_too_long_are_one_line(tmp_path, capsys):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    one_line_error(capsys, main(["table", "merge", str(loop)]))
    one_line_error(capsys, main(["table", "summary", str(tmp_path / ("x" * 300))]), "too long")
    one_line_error(
        capsys, main(["features", "--questions", f"s={tmp_path / ('q' * 300)}.jsonl", "--out", str(tmp_path / "f")])
    )


def test_no_user_error_leaves_through_systemexit_with_status_1():
    offenders = []
    for path in (ROOT / "fgpo_core").rglob("*.py"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"""SystemExit\(\s*f?["']""", line):
                offenders.append(f"{path.relative_to(ROOT)}:{i}")
    assert not offenders, offenders


@pytest.mark.parametrize(
    "argv,words",
    [
        (["tools"], ["--sequence"]),
        (["tools", "--sequence", "ACGT", "--tool", "nosuch"], ["unknown tool"]),
        (["evaluate", "--run", "untrained", "--limit", "-1", "--out", "x"], ["--limit"]),
        (["table", "view", "--blocks", "/nonexistent-blocks", "--tools", "a", "--out", "/nonexistent-view"], []),
        (["table", "build", "--questions", "q.jsonl", "--out", "o", "--shard", "x"], ["--shard"]),
    ],
)
def test_user_errors_exit_2(capsys, argv, words):
    one_line_error(capsys, main(argv), *words)


def test_features_of_ones_own_questions_name_the_questions_not_a_benchmark(tmp_path, capsys):
    qfile = tmp_path / "mine.jsonl"
    qfile.write_text(question(0).to_json() + "\n")
    err = one_line_error(
        capsys,
        main(["features", "--questions", f"mine={qfile}", "--suite", "core", "--out", str(tmp_path / "f")]),
        "'core'",
        "mine",
    )
    assert "data/benchmarks" not in err


def test_a_profile_with_a_yaml_syntax_error_is_one_line(tmp_path, capsys):
    bad = tmp_path / "mine.yaml"
    bad.write_text("seed: [0, 1\nsuites: core\n")
    one_line_error(capsys, main(["book", "--profile", str(bad), "--no-html", "--no-execute"]), "YAML", "line 2")


def test_a_hostile_pickle_in_a_checkpoint_is_refused_in_one_line_and_a_torn_one_restarts(tmp_path, capsys):
    import torch

    from fgpo_core.algorithms.common import load_checkpoint, resume_checkpoint, save_checkpoint
    from fgpo_core.cli import _run
    from fgpo_core.io import CorruptResult

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    evil = tmp_path / "last.pt"
    torch.save({"params": [torch.ones(2)], "x": Evil()}, evil)
    one_line_error(capsys, _run("train", load_checkpoint, evil), "refused")
    with pytest.raises(CorruptResult):
        resume_checkpoint(evil)  # a foreign file is not silently discarded
    assert not (tmp_path / "pwned").exists() and evil.exists()
    save_checkpoint(tmp_path / "ok.pt", {"step": 3, "params": [torch.ones(2)]})
    data = (tmp_path / "ok.pt").read_bytes()
    (tmp_path / "ok.pt").write_bytes(data[: len(data) // 2])
    one_line_error(capsys, _run("train", load_checkpoint, tmp_path / "ok.pt"), "torn")
    assert resume_checkpoint(tmp_path / "ok.pt") is None  # moved aside: the run starts that part again
    assert (tmp_path / "ok.pt.torn").exists() and not (tmp_path / "ok.pt").exists()


def test_equal_checkpoints_are_equal_bytes_whichever_process_writes_them(tmp_path):
    code = (
        "import sys, torch; from fgpo_core.algorithms.common import save_checkpoint; "
        "save_checkpoint(sys.argv[1], {'step': 1, 'params': [torch.arange(4.0)]})"
    )
    for name in ("a", "b"):
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / name / "last.pt")],
            check=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
    assert (tmp_path / "a" / "last.pt").read_bytes() == (tmp_path / "b" / "last.pt").read_bytes()


@pytest.mark.parametrize(
    "text", ["\ufeff>s1 bom\nACGTACGTAC\n", ";an old comment\n>s1\nACGTACGTAC\n", ";c1\n;c2\n\n>s1\nACGT\nACGTAC\n"]
)
def test_fasta_with_a_byte_order_mark_or_comment_lines_is_read(tmp_path, capsys, text):
    fa = tmp_path / "x.fa"
    fa.write_text(text, encoding="utf-8")
    assert main(["tools", "--fasta", str(fa), "--tool", "composition", "--json"]) == 0
    cap = capsys.readouterr()
    assert cap.err == "" and json.loads(cap.out)[0]["tool"] == "composition"


def test_fasta_with_text_before_its_first_header_is_one_line(tmp_path, capsys):
    fa = tmp_path / "x.fa"
    fa.write_text("hello\n>s1\nACGT\n")
    one_line_error(capsys, main(["tools", "--fasta", str(fa), "--tool", "composition"]), "header")


# -- 3. one commit point per result: torn or flipped results refused or rebuilt ------------------------


def test_every_bit_flip_in_a_merged_table_is_refused(inputs, tmp_path, capsys):
    from fgpo_core.io import CorruptResult
    from fgpo_core.table import load_table

    _, root, _, _ = inputs
    src = root / "tables" / "dev"
    good = (src / "table.parquet").read_bytes()
    table = _copy_table(src, tmp_path / "dev")
    positions = np.linspace(0, len(good) - 1, 61).astype(int)
    for pos in positions:
        flipped = bytearray(good)
        flipped[pos] ^= 0x10
        (table / "table.parquet").write_bytes(bytes(flipped))
        with pytest.raises(CorruptResult, match="sha256"):
            load_table(table)
    one_line_error(capsys, main(["table", "summary", str(table)]), "sha256")
    assert main(["table", "merge", str(table)]) == 0  # the merge rebuilds it from its chunks
    assert load_table(table).n_questions == SIZES["dev"]


def test_a_committed_table_without_digests_still_loads(inputs, tmp_path):
    from fgpo_core.table import load_table

    _, root, _, _ = inputs
    table = _copy_table(root / "tables" / "dev", tmp_path / "dev")
    man = json.loads((table / "manifest.json").read_text())
    del man["files"]
    (table / "manifest.json").write_text(json.dumps(man))
    assert load_table(table).n_questions == SIZES["dev"]  # legacy, unverified


def test_a_build_killed_under_one_shard_layout_and_finished_under_another_merges(inputs, tmp_path):
    from fgpo_core.table import load_table
    from fgpo_core.table.build import build_table, merge_table

    _, root, qs, lib = inputs
    out = tmp_path / "t"
    build_table(qs["train"], lib, HashReasoner(), out, shard=(0, 1), chunk_size=2, progress=False, max_chunks=1)
    for i in range(2):
        build_table(qs["train"], lib, HashReasoner(), out, shard=(i, 2), chunk_size=2, progress=False)
    merge_table(out)
    whole = load_table(root / "tables" / "train")
    mine = load_table(out)
    assert (mine.correct == whole.correct).all() and mine.manifest["shards"] == 2
    assert (out / "table.parquet").read_bytes() == (root / "tables" / "train" / "table.parquet").read_bytes()


@pytest.mark.parametrize(
    "edit,field",
    [
        ({"n_tools": 4.0}, "n_tools"),
        ({"n_tools": None}, "n_tools"),
        ({"n_tools": "four"}, "n_tools"),
        ({"n_tools": True}, "n_tools"),
        ({"reasoner": None}, "reasoner"),
        ("drop reasoner", "reasoner"),
        ({"tools": "composition"}, "tools"),
        ("a list", "not a table manifest"),
        ("torn", "not a JSON"),
    ],
)
def test_a_hand_edited_table_manifest_is_one_line_naming_the_field(inputs, tmp_path, capsys, edit, field):
    _, root, _, _ = inputs
    table = _copy_table(root / "tables" / "dev", tmp_path / "dev")
    path = table / "manifest.json"
    man = json.loads(path.read_text())
    if edit == "drop reasoner":
        del man["reasoner"]
    elif edit == "a list":
        man = [man]
    elif isinstance(edit, dict):
        man.update(edit)
    path.write_text(json.dumps(man)[:40] if edit == "torn" else json.dumps(man))
    one_line_error(capsys, main(["table", "summary", str(table)]), field)
    if edit != "torn":
        one_line_error(capsys, main(["table", "merge", str(table)]))


def test_a_torn_features_file_is_refused_then_rebuilt(inputs, tmp_path, capsys):
    import shutil

    from fgpo_core.io import CorruptResult
    from fgpo_core.selectors.features import build_features, load_features

    _, root, qs, _ = inputs
    feat = tmp_path / "feat"
    shutil.copytree(root / "feat", feat)
    good = load_features(feat)["dev"][1]
    data = (feat / "dev.npz").read_bytes()
    (feat / "dev.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptResult, match="dev.npz"):
        load_features(feat)
    build_features(qs, feat, progress=False, model=FakeEncoder())  # the torn suite is computed again
    assert np.array_equal(load_features(feat)["dev"][1], good)
    flipped = bytearray((feat / "core.npz").read_bytes())
    flipped[len(flipped) // 2] ^= 1
    (feat / "core.npz").write_bytes(bytes(flipped))
    with pytest.raises(CorruptResult, match="core.npz"):
        load_features(feat)


def test_a_study_torn_at_its_final_writes_is_no_study_and_reruns(inputs, tmp_path, capsys, monkeypatch):
    from fgpo_core.experiments.study import load_study

    bench, root, _, _ = inputs
    out = tmp_path / "st"
    assert main(_study_argv(bench, root, out)) == 0
    first = load_study(out).picks
    # a full disk halfway through a resumed study's final writes
    real, written = pd.DataFrame.to_parquet, []

    def full(self, *a, **k):
        written.append(1)
        if len(written) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *a, **k)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    one_line_error(capsys, main(_study_argv(bench, root, out)), "No space left")
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError, match="no finished study"):
        load_study(out)  # never the new picks beside the old manifest
    assert main(_study_argv(bench, root, out)) == 0
    pd.testing.assert_frame_equal(load_study(out).picks, first)
    # a file altered after the study finished is refused, and a torn part is trained again
    (out / "sweep.parquet").write_bytes((out / "dev.parquet").read_bytes())
    with pytest.raises(ValueError, match="sha256"):
        load_study(out)
    part = next((out / "parts").glob("*.npz"))
    part.write_bytes(part.read_bytes()[:100])
    assert main(_study_argv(bench, root, out)) == 0
    pd.testing.assert_frame_equal(load_study(out).picks, first)


@pytest.mark.parametrize("flag,value", [("--methods", "fgpo,fgpo"), ("--suites", "core,core"), ("--lrs", "1e-1,1e-1")])
def test_a_method_suite_or_rate_named_twice_is_refused(inputs, tmp_path, capsys, flag, value):
    bench, root, _, _ = inputs
    argv = _study_argv(bench, root, tmp_path / "st")
    argv[argv.index(flag) + 1] = value
    one_line_error(capsys, main(argv), "twice")
    assert not (tmp_path / "st" / "manifest.json").exists()


def test_a_studys_features_of_other_questions_under_the_same_ids_are_refused(inputs, tmp_path, capsys):
    from dataclasses import replace

    from fgpo_core.selectors.features import build_features

    bench, root, qs, _ = inputs
    other = {**qs, "dev": [replace(q, question=q.question.replace("sequence", "stretch", 1) + " ") for q in qs["dev"]]}
    assert [q.id for q in other["dev"]] == [q.id for q in qs["dev"]]
    build_features(other, root / "feat-other-dev", progress=False, model=FakeEncoder())
    status = main(_study_argv(bench, root, tmp_path / "st", feat="feat-other-dev"))
    one_line_error(capsys, status, "dev features were computed for other questions")


# -- 4. runs and snapshots: hand-edited manifests, snapshots checked against their run -----------------


def _fake_run(folder: Path, objective="fgpo", format_weight=0.0, dev_acc=50.0, **extra) -> Path:
    (folder / "adapter").mkdir(parents=True)
    (folder / "adapter" / "adapter_model.safetensors").write_bytes(b"weights" + folder.name.encode())
    (folder / "adapter" / "adapter_config.json").write_text("{}")
    (folder / "ckpt").mkdir()
    cfg = {"format_weight": format_weight, "select_by": "generation", "batch_size": 4, "epochs": 1}
    (folder / "ckpt" / "config.json").write_text(json.dumps(cfg))
    man = {
        "objective": objective,
        "config": cfg,
        "setup": {"described": False},
        "dev": [{"step": 1, "gen_accuracy": dev_acc, "J": 0.1}],
        **extra,
    }
    (folder / "manifest.json").write_text(json.dumps(man))
    return folder


def test_a_snapshot_of_the_format_term_run_is_not_plain_fgpo(tmp_path, capsys):
    from fgpo_core.experiments.chosen import choose_runs

    runs = tmp_path / "runs"
    _fake_run(runs / "fgpo-format", format_weight=0.05)
    _fake_run(runs / "fgpo-plain")
    for name, src, acc in (("snap-format", "fgpo-format", 70.0), ("snap-plain", "fgpo-plain", 60.0)):
        d = runs / name
        (d / "adapter").mkdir(parents=True)
        (d / "adapter" / "adapter_model.safetensors").write_bytes(b"w" + name.encode())
        (d / "manifest.json").write_text(
            json.dumps(
                {  # a snapshot written before snapshots recorded a config
                    "objective": "fgpo",
                    "snapshot_of": {"run": str(runs / src), "step": 1},
                    "setup": {"described": False},
                    "dev_at_step": {"step": 1, "gen_accuracy": acc, "J": 0.1},
                }
            )
        )
    with pytest.raises(ValueError, match="format_weight"):
        choose_runs(runs, {"fgpo": "snap-format"})
    assert choose_runs(runs, {"fgpo-format": "snap-format"})["fgpo-format"] == "snap-format"
    # two snapshot folders: the better on dev, not KeyError 'config'
    assert main(["choose", "--runs-dir", str(runs), "--method", "fgpo=snap-plain,fgpo-plain"]) == 0
    one_line_error(
        capsys, main(["choose", "--runs-dir", str(runs), "--method", "fgpo=snap-plain,snap-format"]), "format_weight"
    )


@pytest.mark.parametrize(
    "manifest,field",
    [
        ([{"objective": "fgpo"}], "not a run manifest"),
        ({"objective": "fgpo", "setup": "x"}, "setup"),
        ({"objective": "fgpo", "config": [1]}, "config"),
        ({"objective": "fgpo", "config": {}, "dev": "x"}, "dev"),
    ],
)
def test_a_hand_edited_run_manifest_is_one_line(tmp_path, capsys, manifest, field):
    runs = tmp_path / "runs"
    _fake_run(runs / "r")
    (runs / "r" / "manifest.json").write_text(json.dumps(manifest))
    one_line_error(capsys, main(["choose", "--runs-dir", str(runs), "--method", "fgpo=r"]), field)


def test_a_runs_torn_adapter_is_refused_and_trained_again(tmp_path, monkeypatch):
    from fgpo_core.experiments import steps
    from fgpo_core.experiments.run import ADAPTER_FILES, RunSetup, run_manifest
    from fgpo_core.io import CorruptResult, with_digests

    run = _fake_run(tmp_path / "r")
    man = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps(with_digests(man, run, ADAPTER_FILES)))
    assert run_manifest(run)["objective"] == "fgpo"
    (run / "adapter" / "adapter_model.safetensors").write_bytes(b"weigh")
    with pytest.raises(CorruptResult, match="adapter_model.safetensors"):
        run_manifest(run)
    trained = []
    monkeypatch.setattr(steps, "train_run", lambda *a, **k: trained.append(a))
    steps.ensure_trained("fgpo", RunSetup(out_dir=str(run)), object())
    assert trained and not (run / "manifest.json").exists()


# -- the motif cache: torn, or a read-only home ------------------------------------------------------


def test_a_torn_motif_cache_is_rebuilt_and_an_unwritable_one_is_skipped(tmp_path, monkeypatch, capsys):
    from fgpo_core.genomics.tools import motifs

    small = dict(
        ids=np.array(["M1"]),
        names=np.array(["X"]),
        widths=np.array([2]),
        pssm=np.zeros((1, 2, 5), dtype=np.int32),
        thresholds=np.zeros(1, dtype=np.int64),
        tail_offsets=np.array([0, 1]),
        tail=np.ones(1),
    )
    built = []
    monkeypatch.setattr(motifs, "_build", lambda *a: built.append(a) or small)
    monkeypatch.setenv("FGPO_CACHE", str(tmp_path / "cache"))
    motifs.load_motifs.cache_clear()
    try:
        assert motifs.load_motifs("R1").ids.tolist() == ["M1"] and len(built) == 1
        (cached,) = (tmp_path / "cache").glob("motifs_R1_*.npz")
        cached.write_bytes(cached.read_bytes()[:50])  # torn
        motifs.load_motifs.cache_clear()
        assert motifs.load_motifs("R1").ids.tolist() == ["M1"] and len(built) == 2
        motifs.load_motifs.cache_clear()
        assert motifs.load_motifs("R1").ids.tolist() == ["M1"] and len(built) == 2  # rebuilt cache read back
        (tmp_path / "file").write_text("")
        monkeypatch.setenv("FGPO_CACHE", str(tmp_path / "file" / "cache"))  # cannot be a folder
        motifs.load_motifs.cache_clear()
        assert motifs.load_motifs("R1").ids.tolist() == ["M1"]
        assert "not cached" in capsys.readouterr().err
    finally:
        motifs.load_motifs.cache_clear()


@pytest.mark.parametrize("value", [4.0, None, "four"])
def test_a_hand_edited_features_manifest_is_one_line_naming_the_field(inputs, tmp_path, capsys, value):
    import shutil

    bench, root, _, _ = inputs
    shutil.copytree(root / "feat", tmp_path / "feat")
    man = json.loads((tmp_path / "feat" / "manifest.json").read_text())
    (tmp_path / "feat" / "manifest.json").write_text(json.dumps(man | {"n_tools": value}))
    argv = _study_argv(bench, root, tmp_path / "st")
    argv[argv.index("--features-dir") + 1] = str(tmp_path / "feat")
    one_line_error(capsys, main(argv), "n_tools")


# -- kill -9 at a random moment of an LM run's checkpoint writes, then resume -------------------------

_FGPO_CHILD = """
import sys
sys.path.insert(0, {tests!r})
from conftest import make_tiny_lm
from test_selectors import _tiny_problem
from fgpo_core.algorithms.fgpo import FGPOConfig, train_fgpo
from fgpo_core.selectors import LMSelector
from fgpo_core.selectors.lm import add_lora
import torch
torch.set_num_threads(1)
model, tok = make_tiny_lm()
sel = LMSelector(add_lora(model, r=4, alpha=8), tok, n_tools=4, keep=12)
qs, rewards, correct = _tiny_problem()
config = FGPOConfig(lr=0.05, epochs=5, batch_size=4, lora_r=4, lora_alpha=8)
train_fgpo(sel, qs, rewards, qs, rewards, correct, config, out_dir=sys.argv[1], progress=False)
"""


def _fgpo_child(out: Path) -> subprocess.Popen:
    code = _FGPO_CHILD.format(tests=str(ROOT / "tests"))
    return subprocess.Popen(
        [sys.executable, "-c", code, str(out)],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _weights(out: Path, name: str):
    import torch

    from fgpo_core.algorithms.common import load_checkpoint

    state = load_checkpoint(out / name)
    steps = [{k: v for k, v in s.items() if "seconds" not in k} for s in state.get("steps", [])]
    return [p.tolist() for p in state["params"]], steps, torch.__version__


def test_an_lm_run_killed_at_random_moments_resumes_to_the_same_weights(tmp_path):
    import random
    import signal
    import time

    whole = tmp_path / "whole"
    child = _fgpo_child(whole)
    assert child.wait() == 0, child.stderr.read().decode()[-2000:]
    rng = random.Random(51)
    cut = tmp_path / "cut"
    for _ in range(3):  # killed at a random moment after its first checkpoint, then resumed
        child = _fgpo_child(cut)
        while child.poll() is None and not (cut / "last.pt").exists():
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 0.5))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
        child.wait()
        if (cut / "last.pt").exists():
            _weights(cut, "last.pt")  # whatever moment it was killed at, the checkpoint is whole
    child = _fgpo_child(cut)
    assert child.wait() == 0, child.stderr.read().decode()[-2000:]
    for name in ("last.pt", "best.pt"):
        assert _weights(cut, name) == _weights(whole, name)
    # the kept checkpoint holds no timings: equal tensors give equal bytes, whichever process wrote them
    assert (cut / "best.pt").read_bytes() == (whole / "best.pt").read_bytes()


# -- the GPU run's pack and run folders: names from a carried manifest, atomic writes, digests ------------


def _pack(tmp_path, wheels=()):
    from fgpo_core.experiments import gpu_pack

    weights = tmp_path / "model.gguf"
    weights.parent.mkdir(parents=True, exist_ok=True)
    weights.write_bytes(bytes(range(256)) * 40)
    m = gpu_pack.pack(weights, tmp_path / "pack", piece_mib=2000 / 2**20, carry_mib=8000 / 2**20, wheels=wheels)
    return m, [tmp_path / "pack" / name for name, _ in m["calls"]]


@pytest.mark.parametrize(
    "field,value",
    [("file", "../escape.gguf"), ("file", "ABSOLUTE"), ("piece", "../escape.part"), ("wheel", "../w")],
)
def test_a_pack_manifest_naming_a_path_outside_its_folder_is_one_line(tmp_path, capsys, field, value):
    from fgpo_core.experiments import gpu_pack

    wheel = tmp_path / "w-0.1-py3-none-any.whl"
    wheel.write_bytes(b"wheel")
    m, calls = _pack(tmp_path, wheels=[wheel])
    value = str(tmp_path / "abs-escape.gguf") if value == "ABSOLUTE" else value
    for call in calls:
        man = json.loads((call / "manifest.json").read_text())
        if field == "file":
            man["file"] = value
        else:
            man["pieces" if field == "piece" else "wheels"][0]["name"] = value
        (call / "manifest.json").write_text(json.dumps(man))
    cache = tmp_path / "deep" / "cache"
    status = gpu_pack.main(["device", *map(str, calls), "--cache", str(cache), "--no-run"])
    one_line_error(capsys, status, "not a plain name")
    assert not (tmp_path / "deep" / "escape.gguf").exists() and not (tmp_path / "abs-escape.gguf").exists()
    # the cache's own manifest, hand-edited after a good gather, is refused by the join as well
    assert gpu_pack.main(["device", *map(str, _pack(tmp_path / "again")[1]), "--cache", str(cache), "--no-run"]) == 0
    man = json.loads((cache / "manifest.json").read_text())
    (cache / "manifest.json").write_text(json.dumps({**man, "file": "../escape.gguf"}))
    with pytest.raises(gpu_pack.PackError, match="not a plain name"):
        gpu_pack.assemble(cache)


def test_links_planted_in_the_pack_cache_are_never_written_through(tmp_path):
    from fgpo_core.experiments import gpu_pack

    m, calls = _pack(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    for name in (m["pieces"][0]["name"], "model.gguf.tmp", "model.gguf"):
        os.symlink(victim, cache / name)
    (cache / "manifest.json").write_text("{")  # a torn cache manifest: the cache starts again
    assert gpu_pack.gather(calls, cache) == []
    assert gpu_pack.assemble(cache).read_bytes() == (tmp_path / "model.gguf").read_bytes()
    assert victim.read_text() == "precious" and not (cache / "model.gguf").is_symlink()


def test_a_gpu_runs_adapter_is_saved_whole_with_its_digests_and_a_torn_one_is_refused(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from fgpo_core.experiments import gpu_lm
    from fgpo_core.experiments.run import run_manifest
    from fgpo_core.io import CorruptResult

    class Model:
        def save_pretrained(self, folder):
            Path(folder, "adapter_model.safetensors").write_bytes(b"gpu weights")
            Path(folder, "adapter_config.json").write_text('{"target_modules": ["q"]}')

        def eval(self):
            pass

    table = SimpleNamespace(manifest={"reasoner": "hash", "questions_sha256": "q"})
    data = SimpleNamespace(train_qs=[1, 2], dev_qs=[1], train_t=table, test={}, table_dir=str(tmp_path))
    cfg = gpu_lm.GPULMConfig(out=str(tmp_path / "out"), device="cpu")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "out" / "lm" / "r").mkdir(parents=True)
    os.symlink(victim, tmp_path / "out" / "lm" / "r" / "adapter")  # planted: replaced, never written through
    os.symlink(victim, tmp_path / "out" / "r.tar")
    sel = SimpleNamespace(model=Model())
    folder = gpu_lm._write_run(sel, "r", {"config": {"objective": "fgpo"}}, data, cfg, 1.0, "cpu", False, print)
    assert victim.read_text() == "precious" and not (tmp_path / "out" / "r.tar").is_symlink()
    man = run_manifest(folder)
    assert set(man["files"]) == {"adapter/adapter_model.safetensors", "adapter/adapter_config.json"}
    (folder / "adapter" / "adapter_model.safetensors").write_bytes(b"gpu weigh")
    with pytest.raises(CorruptResult, match="adapter_model.safetensors"):
        run_manifest(folder)
    with pytest.raises(ValueError, match="not a plain name"):
        gpu_lm._write_run(sel, "../escape", {"config": {"objective": "fgpo"}}, data, cfg, 1.0, "cpu", False, print)
    assert not (tmp_path / "out" / "escape").exists()


# -- the trained evidence reader: digests written by a training, checked when loaded ---------------------


def _reader_folder(folder: Path, digests: bool) -> Path:
    from fgpo_core.io import with_digests
    from fgpo_core.reasoners.reader import READER_FILES

    folder.mkdir(parents=True)
    for name in READER_FILES:
        (folder / name).write_bytes(b"reader " + name.encode())
    man = {"reader": "minilm-evidence-reader"}
    (folder / "manifest.json").write_text(json.dumps(with_digests(man, folder, READER_FILES) if digests else man))
    return folder


def test_a_torn_reader_is_refused_in_one_line_and_the_committed_one_loads_unverified(tmp_path, capsys):
    from fgpo_core.io import CorruptResult
    from fgpo_core.reasoners.reader import EvidenceReader, check_reader, default_reader_dir

    assert check_reader(default_reader_dir()) is False  # committed before digests were recorded
    assert check_reader(_reader_folder(tmp_path / "legacy", digests=False)) is False
    good = _reader_folder(tmp_path / "good", digests=True)
    assert check_reader(good) is True
    (good / "head.pt").write_bytes(b"reader head.p")
    with pytest.raises(CorruptResult, match="head.pt"):
        EvidenceReader(good)
    (good / "head.pt").write_bytes(b"reader head.pt")
    (good / "adapter_model.safetensors").unlink()
    with pytest.raises(CorruptResult, match="missing"):
        check_reader(good)
    (good / "manifest.json").write_text("[1]")
    with pytest.raises(ValueError, match="not a reader manifest"):
        check_reader(good)


def test_a_reader_training_records_the_digests_of_its_files(tmp_path, monkeypatch):
    import torch

    from fgpo_core.reasoners import train_reader as tr
    from fgpo_core.reasoners.reader import READER_FILES, check_reader

    class FakeReader:
        def __init__(self, **kw):
            self.w = torch.nn.Parameter(torch.zeros(1))

        def parameters(self):
            return [self.w]

        def train(self, mode=True):
            pass

        def score(self, pairs):
            return self.w * torch.arange(len(pairs), dtype=torch.float32)

        def save(self, out_dir, extra=None):
            from fgpo_core.io import atomic_dir

            with atomic_dir(out_dir) as tmp:
                for name in READER_FILES:
                    (tmp / name).write_bytes(f"{name} {self.w.item()}".encode())

    monkeypatch.setattr(tr, "ReaderModel", FakeReader)
    man = tr.train_reader(
        tr.ReaderConfig(out_dir=str(tmp_path / "r"), n_per_skill=1, n_val_per_skill=1, epochs=1), False
    )
    assert set(man["files"]) == set(READER_FILES) and check_reader(tmp_path / "r") is True


# -- a further set of hostile inputs of the same classes ------------------------------------------------


def test_a_link_planted_as_a_tables_manifest_is_replaced_not_written_through(inputs, tmp_path):
    from fgpo_core.io import FILES_KEY

    _, root, _, _ = inputs
    table = _copy_table(root / "tables" / "dev", tmp_path / "dev")
    victim = tmp_path / "victim.json"  # outside the folder; the link makes it the manifest's content
    man = json.loads((table / "manifest.json").read_text())
    victim.write_text(json.dumps({k: v for k, v in man.items() if k != FILES_KEY}))
    before = victim.read_bytes()
    (table / "manifest.json").unlink()
    os.symlink(victim, table / "manifest.json")
    assert main(["table", "merge", str(table)]) == 0
    assert victim.read_bytes() == before and not (table / "manifest.json").is_symlink()


def test_a_chosen_json_planted_as_a_link_is_replaced_not_written_through(tmp_path):
    runs = tmp_path / "runs"
    _fake_run(runs / "r")
    victim = tmp_path / "victim"
    victim.write_text('{"sft": "lm/sft"}')
    os.symlink(victim, runs / "chosen.json")
    assert main(["choose", "--runs-dir", str(runs), "--method", "fgpo=r"]) == 0
    assert victim.read_text() == '{"sft": "lm/sft"}' and not (runs / "chosen.json").is_symlink()
    assert json.loads((runs / "chosen.json").read_text()) == {"sft": "lm/sft", "fgpo": "r"}


@pytest.mark.parametrize(
    "extra,words",
    [
        (["--seeds", "0"], ["seeds"]),
        (["--methods", "fgpo/x"], ["fgpo/x"]),
        (["--methods", "../fgpo"], ["../fgpo"]),
        (["--suites", "../core"], ["../core"]),
    ],
)
def test_a_study_given_no_seeds_or_a_name_with_a_folder_part_is_one_line(inputs, tmp_path, capsys, extra, words):
    bench, root, _, _ = inputs
    argv = _study_argv(bench, root, tmp_path / "study")
    for flag, value in zip(extra[::2], extra[1::2]):
        argv[argv.index(flag) + 1] = value
    one_line_error(capsys, main(argv), *words)
    assert not (tmp_path / "fgpo").exists() and not (tmp_path / "core").exists()


def test_a_study_whose_out_dir_is_a_file_is_one_line(inputs, tmp_path, capsys):
    bench, root, _, _ = inputs
    (tmp_path / "study").write_text("not a folder")
    one_line_error(capsys, main(_study_argv(bench, root, tmp_path / "study")))
    assert (tmp_path / "study").read_text() == "not a folder"


def test_features_out_under_a_file_is_one_line(tmp_path, capsys):
    qfile = tmp_path / "mine.jsonl"
    qfile.write_text(question(0).to_json() + "\n")
    (tmp_path / "file").write_text("x")
    one_line_error(capsys, main(["features", "--questions", f"mine={qfile}", "--out", str(tmp_path / "file" / "f")]))


def test_a_chunk_whose_checksum_was_edited_is_not_merged_silently(inputs, tmp_path, capsys):
    from fgpo_core.table import load_table

    _, root, _, _ = inputs
    table = _copy_table(root / "tables" / "core", tmp_path / "core")
    side = sorted(table.rglob("*.sha256"))
    assert side, sorted(table.rglob("*"))
    side[0].write_text("0" * 64 + "\n")
    status = main(["table", "merge", str(table)])
    if status == 0:  # the merge may only succeed from chunks that match their checksums
        raise AssertionError("a chunk whose checksum does not match was merged")
    one_line_error(capsys, status)
    assert load_table(root / "tables" / "core").n_questions == 4


@pytest.mark.parametrize(
    "blob,words",
    [
        (b'{"id": "q\x00"}\n', ["line 1"]),
        (b"\xff\xfe{}\n", ["line 1", "UTF-8"]),
        (b"\x00" * 64, ["line 1"]),
    ],
)
def test_a_questions_file_with_nul_bytes_or_not_utf8_is_one_line(tmp_path, capsys, blob, words):
    qfile = tmp_path / "q.jsonl"
    qfile.write_bytes(blob)
    one_line_error(capsys, main(["table", "build", "--questions", str(qfile), "--out", str(tmp_path / "o")]), *words)


def test_a_suite_file_with_a_repeated_question_id_is_one_line(ci_bench, tmp_path, capsys):
    import hashlib
    import shutil

    bench = Path(shutil.copytree(ci_bench[0], tmp_path / "bench"))
    core = bench / "core.jsonl"
    lines = core.read_text().splitlines()
    core.write_text("\n".join(lines + lines[:1]) + "\n")
    status = main(["table", "build", "--bench", str(bench), "--suite", "core", "--out", str(tmp_path / "o")])
    one_line_error(capsys, status, "checksum")  # a hand-edited suite is refused by its checksum
    man = json.loads((bench / "manifest.json").read_text())
    man["suites"]["core"]["sha256"] = hashlib.sha256(core.read_bytes()).hexdigest()  # and with it edited too
    (bench / "manifest.json").write_text(json.dumps(man))
    status = main(["table", "build", "--bench", str(bench), "--suite", "core", "--out", str(tmp_path / "o")])
    one_line_error(capsys, status, "id")


@pytest.mark.parametrize(
    "text", ["- seed\n- 0\n", "just a string\n", "seed: {a: 1}\n", "n_seeds: [1, 2]\n", "", "1: 2\n"]
)
def test_a_profile_that_is_not_a_mapping_is_one_line(tmp_path, capsys, text):
    bad = tmp_path / "mine.yaml"
    bad.write_text(text)
    one_line_error(capsys, main(["book", "--profile", str(bad), "--no-html", "--no-execute"]))


@pytest.mark.parametrize("shard", ["1/0", "2/2", "-1/2", "0/-1", "0/0"])
def test_an_impossible_shard_is_one_line(tmp_path, capsys, shard):
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(question(0).to_json() + "\n")
    argv = ["table", "build", "--questions", str(qfile), "--out", str(tmp_path / "o"), f"--shard={shard}"]
    one_line_error(capsys, main(argv), "shard")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("digests", [True, False])
@pytest.mark.parametrize("kind", ["empty", "folder", "fifo"])
def test_an_empty_or_odd_table_parquet_under_a_valid_looking_manifest_is_one_line(
    inputs, tmp_path, capsys, kind, digests
):
    import shutil

    from fgpo_core.io import FILES_KEY

    _, root, _, _ = inputs
    table = _copy_table(root / "tables" / "dev", tmp_path / "dev")
    man = json.loads((table / "manifest.json").read_text())
    if not digests:
        man.pop(FILES_KEY, None)
    (table / "manifest.json").write_text(json.dumps(man))
    if kind == "empty":
        (table / "table.parquet").write_bytes(b"")
    elif kind == "folder":  # pyarrow would read a folder of parquet files as one dataset
        (table / "table.parquet").unlink()
        (table / "table.parquet").mkdir()
        shutil.copy(root / "tables" / "core" / "table.parquet", table / "table.parquet" / "part.parquet")
    else:  # a FIFO: reading it would block forever
        (table / "table.parquet").unlink()
        os.mkfifo(table / "table.parquet")
    one_line_error(capsys, main(["table", "summary", str(table)]))


def test_a_choose_pointing_outside_the_runs_folder_is_one_line(tmp_path, capsys):
    runs = tmp_path / "deep" / "runs"
    _fake_run(tmp_path / "deep" / "outside")
    runs.mkdir()
    one_line_error(capsys, main(["choose", "--runs-dir", str(runs), "--method", "fgpo=../outside"]))
