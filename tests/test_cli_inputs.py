"""Ordinary bad input to the command line ends in a clear message, never a traceback."""

import gzip

import pytest

from fgpo_core.cli import main
from fgpo_core.genomics.data import FastaError, read_fasta
from fgpo_core.genomics.tools.validate import MAX_LENGTH


@pytest.fixture
def files(tmp_path):
    (tmp_path / "bin.fa").write_bytes(bytes(range(256)) * 2)
    (tmp_path / "plain.fa").write_text(">a\nacgtACGT\n")
    (tmp_path / "gz_without_suffix.fa").write_bytes(gzip.compress(b">a\nACGTTT\n"))
    (tmp_path / "folder").mkdir()
    return tmp_path


def test_read_fasta_reads_plain_and_gzip_by_content_and_refuses_the_rest(files):
    assert read_fasta(files / "plain.fa") == [("a", "ACGTACGT")]
    assert read_fasta(files / "gz_without_suffix.fa") == [("a", "ACGTTT")]
    for bad, why in (("bin.fa", "not a text FASTA"), ("missing.fa", "no such file"), ("folder", "is a folder")):
        with pytest.raises(FastaError, match=why):
            read_fasta(files / bad)


@pytest.mark.parametrize("bad", ["bin.fa", "missing.fa", "folder"])
def test_tools_on_a_bad_fasta_exits_with_a_message(files, bad, capsys):
    assert main(["tools", "--fasta", str(files / bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fgpo tools: ") and err.count("\n") == 1


def test_tools_task_gives_the_expert_its_references_and_help_names_the_length_limit(capsys):
    main(["tools", "--sequence", "ACGT" * 60, "--tool", "expert", "--task", "cpg"])
    out = capsys.readouterr().out
    assert "No labelled reference set" not in out and "for task 'cpg'" in out
    assert main(["tools", "--sequence", "ACGTACGT", "--task", "nope"]) == 2
    assert "no reference set for task 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tools", "--help"])
    assert f"{MAX_LENGTH:,} bp" in capsys.readouterr().out


def test_validate_refuses_non_utf8_deep_empty_and_boolean_schema(tmp_path, capsys):
    import json

    good = json.loads(open("data/benchmarks/cpu/core.jsonl").readline())
    cases = {
        "latin1.jsonl": '{"id": "caf\xe9"}\n'.encode("latin-1"),
        "deep.jsonl": ("[" * 100000 + "]" * 100000 + "\n").encode(),
        "empty.jsonl": b"",
        "schema_true.jsonl": (json.dumps({**good, "schema": True}) + "\n").encode(),
    }
    why = {
        "latin1.jsonl": "not UTF-8",
        "deep.jsonl": "nested too deeply",
        "empty.jsonl": "no questions",
        "schema_true.jsonl": "field 'schema' is True",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert main(["benchmark", "validate", str(tmp_path / name)]) == 1
        assert why[name] in capsys.readouterr().err
    (tmp_path / "ok.jsonl").write_text(json.dumps(good) + "\n")
    assert main(["benchmark", "validate", str(tmp_path / "ok.jsonl")]) == 0


def test_user_errors_are_one_line_not_a_traceback(tmp_path, capsys, monkeypatch):
    assert main(["book", "--profile", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "manifest.json").write_text('{"format": 99}')
    assert (
        main(
            [
                "table",
                "build",
                "--bench",
                "data/benchmarks/cpu",
                "--suite",
                "dev",
                "--limit",
                "1",
                "--out",
                str(tmp_path / "t"),
            ]
        )
        == 2
    )
    assert "made under different inputs" in capsys.readouterr().err
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text('{"objective": "fg')  # truncated
    assert (
        main(
            [
                "evaluate",
                "--run",
                str(tmp_path / "run"),
                "--suite",
                "core",
                "--limit",
                "1",
                "--out",
                str(tmp_path / "ev"),
            ]
        )
        == 2
    )
    assert "not a JSON run manifest" in capsys.readouterr().err
    monkeypatch.setenv("FGPO_TRACEBACK", "1")
    with pytest.raises(FileNotFoundError):
        main(["book", "--profile", str(tmp_path / "missing.yaml")])


def test_table_summary_prints_the_ceilings_of_a_committed_table(capsys):
    assert main(["table", "summary", "data/tables/cpu/reader/dev"]) == 0
    out = capsys.readouterr().out
    assert "200 questions x 16 subsets" in out and "oracle" in out and "cost:" in out


def test_table_build_refuses_a_negative_limit(capsys):
    assert (
        main(["table", "build", "--bench", "data/benchmarks/cpu", "--suite", "dev", "--limit", "-1", "--out", "/x"])
        == 2
    )
    assert "--limit must be 0" in capsys.readouterr().err


def test_evaluate_joins_its_picks_to_a_table_and_prints_the_accuracy(capsys):
    """The committed GRPO run's core evaluation is reused (same adapter, prompt and questions)."""
    import pandas as pd

    from fgpo_core.evaluation.picks import summarise_picks
    from fgpo_core.table import load_table

    ev = pd.read_parquet("runs/cpu/lm/grpo/eval/core.parquet")
    assert (
        main(
            [
                "evaluate",
                "--run",
                "runs/cpu/lm/grpo",
                "--suite",
                "core",
                "--limit",
                str(len(ev)),
                "--table",
                "data/tables/cpu/reader",
                "--into-run",
            ]
        )
        == 0
    )
    t = load_table("data/tables/cpu/reader/core").select(ev.question_id.tolist())
    want = summarise_picks(ev.generation_pick.to_numpy(), t.correct, t.n_tools)["accuracy"]
    assert f"accuracy {want:.1f}%" in capsys.readouterr().out
    assert main(["evaluate", "--run", "runs/cpu/lm/grpo", "--suite", "core", "--threads", "-1", "--into-run"]) == 2
    assert "--threads" in capsys.readouterr().err


def test_evaluate_needs_an_output_folder_and_can_skip_scoring(tmp_path, capsys):
    """A committed run folder is written only when asked (--into-run); --generation-only skips
    controlled scoring and p_gen, and a later full evaluation does not take it for one."""
    import pandas as pd

    assert main(["evaluate", "--run", "runs/cpu/lm/grpo", "--suite", "core", "--limit", "1"]) == 2
    assert "give --out FOLDER, or --into-run" in capsys.readouterr().err
    out = tmp_path / "ev"
    assert (
        main(
            [
                "evaluate",
                "--run",
                "untrained",
                "--suite",
                "dev",
                "--limit",
                "1",
                "--out",
                str(out),
                "--generation-only",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    ev = pd.read_parquet(out / "dev.parquet")
    assert "generation_pick" in ev and "scoring_pick" not in ev and not any(c.startswith("p_gen") for c in ev)
    assert (
        main(["evaluate", "--run", "untrained", "--suite", "dev", "--limit", "1", "--out", str(out), "--threads", "1"])
        == 0
    )
    assert "scoring_pick" in pd.read_parquet(out / "dev.parquet")
