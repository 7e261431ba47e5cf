"""Bring your own tools and questions: the registry, plugins, labelled references and
`fgpo table build --questions` with a tool the library does not ship."""
import json
from pathlib import Path

import pytest

from fgpo_core.cli import main
from fgpo_core.genomics.tools import (Evidence, ToolInput, library_from_names, load_plugin, missing_references,
                                      references_from_file, register_tool, registered_tools)
from fgpo_core.genomics.tools.registry import make_tool

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "byo" / "gene_tool.py"


def test_builtins_are_registered_in_the_papers_order():
    assert registered_tools()[:5] == ["composition", "motif_scan", "splice", "expert", "homology"]
    lib = library_from_names(["splice", "composition"])
    assert lib.names == ["splice", "composition"] and lib.n_tools == 2


def test_register_refuses_clashes_bad_names_and_non_tools():
    @register_tool("test_echo", replace=True)
    class Echo:
        name, title, version = "test_echo", "Echo", "1"

        def run(self, inp):
            return Evidence(self.name, self.title, {"": {}}, {"": [inp.sequences[""]]})

    assert "Echo" in library_from_names(["test_echo"]).render(
        library_from_names(["test_echo"]).run(ToolInput.single("ACGT")), 1)
    with pytest.raises(ValueError, match="already registered"):
        register_tool("test_echo", lambda: Echo())
    with pytest.raises(ValueError, match="plain identifier"):
        register_tool("bad name", Echo)
    register_tool("test_liar", lambda: Echo(), replace=True)
    with pytest.raises(ValueError, match="calls itself 'test_echo'"):
        make_tool("test_liar")
    register_tool("test_nothing", lambda: object(), replace=True)
    with pytest.raises(TypeError, match="needs name, title, version"):
        make_tool("test_nothing")
    with pytest.raises(ValueError, match="no tool named 'nope'.*register"):
        library_from_names(["nope"])


def test_plugin_file_registers_a_working_tool():
    """The example's gene caller on fragments with known answers: inside a gene called on the
    genome (read on its strand, then reverse-complemented) and a low-complexity repeat."""
    from fgpo_core.genomics.benchmarks.sources import gene_calls
    from fgpo_core.genomics.data import genome

    added = load_plugin(PLUGIN)
    assert added in ([], ["gene_call"]) and "gene_call" in registered_tools()
    assert load_plugin(PLUGIN) == []  # a file is imported once
    org = "Corynebacterium diphtheriae"
    g = genome(org)
    b, e, strand = next(x for x in gene_calls(org) if x[2] > 0 and x[1] - x[0] > 900)
    inside = g[b + 299:b + 599]
    rc = inside.translate(str.maketrans("ACGT", "TGCA"))[::-1]
    lib = library_from_names(["gene_call"])
    assert "called on the given strand" in lib.evidence(ToolInput.single(inside), 1)
    assert "called on the opposite strand" in lib.evidence(ToolInput.single(rc), 1)
    assert "No gene called" in lib.evidence(ToolInput.single(inside[:60]), 1)  # calls under 90 bp are dropped
    with pytest.raises(FileNotFoundError, match="not a Python file"):
        load_plugin(ROOT / "README.md")


def _question(i, family, seq, answer_text, split="train"):
    opts = {"A": answer_text, "B": "other one", "C": "other two", "D": "other three"}
    return {"id": f"q{i}", "suite": "mine", "split": split, "family": family, "shape": "describe",
            "question": f"What is {seq}?", "options": opts, "answer": "A", "sequences": {"": seq}, "schema": 1}


def test_references_from_questions_or_rows_and_missing_families(tmp_path):
    qs = tmp_path / "train.jsonl"
    qs.write_text("".join(json.dumps(_question(i, "mine", "ACGT" * (10 + i), f"label{i % 2}")) + "\n"
                          for i in range(6)))
    refs, _ = references_from_file(qs)
    assert set(refs) == {"mine"} and sorted(set(refs["mine"].labels)) == ["label0", "label1"]
    rows = tmp_path / "refs.jsonl"
    rows.write_text(json.dumps({"id": "r1", "family": "repeat", "seq": "ACGT" * 20, "label": "Alu"}) + "\n")
    refs, db = references_from_file(rows)
    assert set(refs) == {"repeat"}
    lib = library_from_names(["composition", "expert"], references=refs, database=db)
    assert missing_references(lib, ["repeat", "mine"]) == ["mine"]
    assert missing_references(library_from_names(["composition"]), ["mine"]) == []
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        references_from_file(tmp_path / "empty.jsonl")


def test_table_build_from_a_questions_file_with_a_plugin_tool(tmp_path, capsys):
    qs = tmp_path / "mine.jsonl"
    qs.write_text("".join(json.dumps(_question(i, "mine", "ATGAAACCCGGG" * (4 + i), f"label{i % 2}")) + "\n"
                          for i in range(3)))
    out = tmp_path / "table"
    code = main(["table", "build", "--questions", str(qs), "--plugin", str(PLUGIN), "--tools",
                 "composition,gene_call", "--reasoner", "reader", "--out", str(out), "--threads", "1"])
    assert code == 0
    from fgpo_core.table import load_table

    t = load_table(out)
    assert t.n_questions == 3 and t.n_actions == 4
    assert [n for n, _ in t.manifest["tools"]] == ["composition", "gene_call"]
    # the expert with no references for the family: a warning names the flag
    code = main(["table", "build", "--questions", str(qs), "--tools", "expert", "--reasoner", "reader",
                 "--out", str(tmp_path / "t2"), "--threads", "1"])
    assert code == 0 and "no labelled reference set for mine" in capsys.readouterr().err


def test_table_build_input_errors(tmp_path, capsys):
    with pytest.raises(SystemExit, match="either --bench"):
        main(["table", "build", "--out", str(tmp_path / "t")])
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "mine.jsonl").write_text("")
    assert main(["table", "build", "--bench", str(tmp_path / "folder"), "--suite", "mine",
                 "--out", str(tmp_path / "t")]) == 2
    assert "holds no manifest.json" in capsys.readouterr().err and not (tmp_path / "t").exists()
    (tmp_path / "folder" / "manifest.json").write_text('{"suites": {"mine": {"file": "mine.jsonl"}}}')
    assert main(["table", "build", "--bench", str(tmp_path / "folder"), "--suite", "mine",
                 "--out", str(tmp_path / "t")]) == 2
    assert "is not a benchmark manifest" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="holds no question"):
        main(["table", "build", "--questions", str(tmp_path / "folder" / "mine.jsonl"), "--out", str(tmp_path / "t")])
    (tmp_path / "one.jsonl").write_text(json.dumps(_question(0, "mine", "ACGT" * 10, "x")) + "\n")
    assert main(["table", "build", "--questions", str(tmp_path / "one.jsonl"), "--tools", "composition,nope",
                 "--out", str(tmp_path / "t")]) == 2
    assert "no tool named 'nope'" in capsys.readouterr().err
