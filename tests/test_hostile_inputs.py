"""Hostile input to the command line, as a new user would try it: each case ends in one line on
stderr and exit status 2 (or, where the input was fine, in a right result), never a traceback,
a silent wrong result or a file outside the output folder."""

import json
import os
import re

import pytest
from helpers import HashReasoner, question

from fgpo_core.cli import main


def one_line_error(capsys, status, *words):
    """The command failed with status 2 and exactly one line on stderr (besides progress bars)
    holding ``words``."""
    raw = capsys.readouterr().err
    lines = [ln for ln in re.split(r"[\r\n]+", raw) if ln.strip() and "%|" not in ln]
    assert status == 2, raw
    assert len(lines) == 1 and "Traceback" not in raw, raw
    err = lines[0]
    for w in words:
        assert w in err, err
    return err


@pytest.fixture
def qfile(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(question(i).to_json() + "\n" for i in range(2)))
    return path


# -- writes outside the output folder ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../evil", "/tmp/fgpo-hostile-evil", "..", "a/b", " x"])
def test_features_question_names_may_not_leave_the_output_folder(tmp_path, qfile, capsys, name):
    out = tmp_path / "deep" / "er" / "out"
    status = main(["features", "--questions", f"{name}={qfile}", "--out", str(out)])
    one_line_error(capsys, status, "not a plain name")
    assert not list(tmp_path.rglob("*.npz")) and not os.path.exists("/tmp/fgpo-hostile-evil.npz")
    assert not out.exists()


def test_a_benchmark_manifests_suite_name_may_not_leave_the_output_folder(tmp_path, capsys):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "x.jsonl").write_text("")
    (bench / "manifest.json").write_text(
        json.dumps(
            {
                "suites": {"../../evil": {"file": "x.jsonl", "sha256": "0"}},
                "references": {"file": "x.jsonl", "sha256": "0"},
            }
        )
    )
    status = main(["features", "--bench", str(bench), "--out", str(tmp_path / "a" / "b" / "out")])
    one_line_error(capsys, status, "not a plain name", "../../evil")
    assert not list(tmp_path.rglob("*.npz"))


def test_build_features_itself_refuses_a_suite_name_with_a_folder_part(tmp_path):
    from fgpo_core.selectors.features import build_features

    with pytest.raises(ValueError, match="not a plain name"):
        build_features({"../x": [question(0)]}, tmp_path / "out", model=object())
    assert not (tmp_path / "x.npz").exists()


def test_evaluate_refuses_a_suite_name_with_a_folder_part(ci_bench, tmp_path, capsys):
    bench, _ = ci_bench
    status = main(
        ["evaluate", "--run", "untrained", "--bench", str(bench), "--suite", "../x", "--out", str(tmp_path / "ev")]
    )
    one_line_error(capsys, status, "not a plain name")


def test_plain_name_is_the_one_check():
    from fgpo_core.io import plain_name

    assert plain_name("core") == "core" and plain_name("my-suite.v2") == "my-suite.v2"
    for bad in ("", ".", "..", "../x", "/abs", "a\\b", "tab\tname", " x", None):
        with pytest.raises(ValueError, match="not a plain name"):
            plain_name(bad)


# -- flags ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags,words", [(["--n-tools", "0"], ["--n-tools"]), (["--n-tools=-2"], ["--n-tools"]), (["--keep=-1"], ["--keep"])]
)
def test_features_refuses_no_tool_slots_and_a_negative_keep(tmp_path, qfile, capsys, flags, words):
    status = main(["features", "--questions", f"mine={qfile}", "--out", str(tmp_path / "out"), *flags])
    one_line_error(capsys, status, *words)


def test_a_negative_keep_is_not_a_prompt():
    from fgpo_core.selectors.features import check_prompt_settings

    check_prompt_settings(4, 0)
    with pytest.raises(ValueError, match="--keep"):
        check_prompt_settings(4, -1)


@pytest.mark.parametrize("flag", ["--n-train=-5", "--n-dev=-1", "--n-test=-3", "--epochs=-3", "--seeds=0"])
def test_study_refuses_negative_question_counts(tmp_path, capsys, flag):
    # (a missing benchmark: the flag must be refused before any input is read)
    status = main(["study", flag, "--bench-dir", str(tmp_path / "none"), "--out-dir", str(tmp_path / "st")])
    one_line_error(capsys, status, flag.split("=")[0])


def test_table_build_refuses_a_chunk_size_below_one_before_loading_the_reasoner(tmp_path, capsys, monkeypatch):
    import fgpo_core.reasoners as reasoners

    monkeypatch.setattr(reasoners, "get_reasoner", lambda name: pytest.fail("the reasoner was loaded"))
    status = main(
        ["table", "build", "--questions", str(tmp_path / "q.jsonl"), "--chunk-size", "0", "--out", str(tmp_path / "t")]
    )
    one_line_error(capsys, status, "--chunk-size")


def test_study_refuses_the_training_split_as_a_test_suite(tmp_path, capsys):
    status = main(
        [
            "study",
            "--suites",
            "core,train",
            "--n-test",
            "5",
            "--bench-dir",
            str(tmp_path / "none"),
            "--out-dir",
            str(tmp_path / "st"),
        ]
    )
    one_line_error(capsys, status, "'train'")


def test_train_refuses_a_negative_question_count(ci_bench, tmp_path):
    from fgpo_core.experiments.run import RunSetup, split_data

    bench, _ = ci_bench
    with pytest.raises(ValueError, match="--n-train must be 0"):
        split_data(RunSetup(bench_dir=str(bench), n_train=-5), "train", -5)


@pytest.mark.parametrize("cmd", ["evaluate", "format"])
def test_evaluate_and_format_refuse_a_negative_keep(tmp_path, capsys, cmd):
    status = main(
        [cmd, "--run", "untrained", "--keep=-1", "--bench", str(tmp_path / "none"), "--out", str(tmp_path / "o")]
    )
    one_line_error(capsys, status, "--keep")


# -- questions and references -----------------------------------------------------------------------


def test_a_question_with_two_answer_keys_is_refused(tmp_path, capsys):
    line = question(0).to_json()
    dup = line[:-1] + ',"answer":"B"}'
    assert json.loads(dup)["answer"] == "B"  # plain JSON keeps the last silently
    (tmp_path / "dup.jsonl").write_text(dup + "\n")
    assert main(["benchmark", "validate", str(tmp_path / "dup.jsonl")]) == 1
    assert "'answer' appears twice" in capsys.readouterr().err
    status = main(["table", "build", "--questions", str(tmp_path / "dup.jsonl"), "--out", str(tmp_path / "t")])
    one_line_error(capsys, status, "'answer' appears twice", "line 1")


def test_a_reference_row_with_invalid_bases_is_refused(tmp_path, qfile, capsys):
    refs = tmp_path / "refs.jsonl"
    refs.write_text(json.dumps({"id": "r1", "family": "cpg", "seq": "ACGTXYZ", "label": "island-like"}) + "\n")
    status = main(
        ["table", "build", "--questions", str(qfile), "--references", str(refs), "--out", str(tmp_path / "t")]
    )
    one_line_error(capsys, status, "invalid character 'X'", "r1")
    refs.write_text('{"id": "r1", "family": "cpg", "seq": "ACGT", "seq": "ACGTT", "label": "x"}\n')
    one_line_error(
        capsys,
        main(["table", "build", "--questions", str(qfile), "--references", str(refs), "--out", str(tmp_path / "t")]),
        "appears twice",
    )


# -- plugins ----------------------------------------------------------------------------------------

PLUGIN = """
from fgpo_core.genomics.tools import Evidence, register_tool


@register_tool("{name}")
class Hostile:
    name, title, version = "{name}", "Hostile", "1"

    def run(self, inp):
        {body}
"""


def plugin(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(PLUGIN.format(name=name, body=body))
    return path


@pytest.fixture
def hash_reasoner(monkeypatch):
    import fgpo_core.reasoners as reasoners

    monkeypatch.setattr(reasoners, "get_reasoner", lambda name: HashReasoner())


@pytest.mark.parametrize(
    "name,body,words",
    [
        ("bare_lines", 'return Evidence(self.name, self.title, {"": {}}, {"": "a bare string"})', ["list of strings"]),
        ("lines_not_dict", 'return Evidence(self.name, self.title, {}, ["x"])', ["map each sequence label"]),
        (
            "other_label",
            'return Evidence(self.name, self.title, {"A": {}}, {"A": ["about A"]})',
            ["sequence 'A'", "lacks"],
        ),
        ("exits_in_run", "import sys; sys.exit(0)", ["sys.exit(0)"]),
        ("not_evidence", 'return "text"', ["not an Evidence"]),
    ],
)
def test_table_build_refuses_a_plugins_malformed_evidence(tmp_path, qfile, capsys, hash_reasoner, name, body, words):
    p = plugin(tmp_path, name, body)
    status = main(
        [
            "table",
            "build",
            "--questions",
            str(qfile),
            "--tools",
            f"composition,{name}",
            "--plugin",
            str(p),
            "--out",
            str(tmp_path / "t"),
        ]
    )
    one_line_error(capsys, status, f"'{name}'", *words)
    assert not (tmp_path / "t" / "table.parquet").exists()


def test_a_plugin_that_exits_while_loading_is_an_error_not_a_success(tmp_path, qfile, capsys):
    p = tmp_path / "exits.py"
    p.write_text("import sys\nsys.exit(0)\n")
    status = main(["table", "build", "--questions", str(qfile), "--plugin", str(p), "--out", str(tmp_path / "t")])
    one_line_error(capsys, status, "sys.exit(0)", "exits.py")
    p2 = tmp_path / "broken.py"
    p2.write_text("import no_such_module_xyz\n")
    status = main(["table", "build", "--questions", str(qfile), "--plugin", str(p2), "--out", str(tmp_path / "t")])
    one_line_error(capsys, status, "failed to load", "no_such_module_xyz")


# -- the all-N sequence -----------------------------------------------------------------------------


def test_an_all_n_sequence_has_no_open_frame_and_tools_json_is_json(capsys):
    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in --json output"))

    assert main(["tools", "--sequence", "N" * 300, "--tool", "composition", "--json"]) == 0
    rec = strict(capsys.readouterr().out)[0]["records"][""]
    assert rec["longest_orf_bp"] == 0 and rec["longest_orf_frame"] == "" and rec["codon_adaptation"] is None
    assert main(["tools", "--sequence", "N" * 300, "--tool", "composition"]) == 0
    assert "Longest open frame 0 bp (none)" in capsys.readouterr().out
    # an ordinary sequence keeps its frame and its codon adaptation
    assert main(["tools", "--sequence", "ATGGCTGCAAAA" * 30, "--tool", "composition", "--json"]) == 0
    rec = strict(capsys.readouterr().out)[0]["records"][""]
    assert rec["longest_orf_bp"] >= 90 and rec["codon_adaptation"]


def test_finite_json_turns_nan_into_null():
    from fgpo_core.io import finite_json

    assert (
        json.dumps(finite_json({"a": [float("nan"), 1.5, float("inf")], "b": "x"}), allow_nan=False)
        == '{"a": [null, 1.5, null], "b": "x"}'
    )


# -- fgpo choose ------------------------------------------------------------------------------------


def _run(folder, objective, **extra):
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"objective": objective, "setup": {}, "config": {}, **extra}))


@pytest.fixture
def runs(tmp_path):
    for name, obj in (("sft", "sft"), ("sft2", "sft"), ("grpo", "grpo")):
        _run(tmp_path / "lm" / name, obj)
    _run(tmp_path / "lm" / "fgpo", "fgpo", config={"format_weight": 0.0})
    _run(tmp_path / "lm" / "fgpo-format", "fgpo", config={"format_weight": 0.05})
    (tmp_path / "lm" / "desc" / "eval").mkdir(parents=True)
    return tmp_path


def test_choose_merges_into_chosen_json(runs, capsys):
    assert (
        main(
            [
                "choose",
                "--runs-dir",
                str(runs),
                "--method",
                "sft=lm/sft",
                "--method",
                "grpo=lm/grpo",
                "--method",
                "tools-with-descriptions=lm/desc",
            ]
        )
        == 0
    )
    assert main(["choose", "--runs-dir", str(runs), "--method", "sft=lm/sft2"]) == 0
    assert json.loads((runs / "chosen.json").read_text()) == {
        "sft": "lm/sft2",
        "grpo": "lm/grpo",
        "tools-with-descriptions": "lm/desc",
    }


def test_choose_refuses_a_method_given_twice(runs, capsys):
    status = main(["choose", "--runs-dir", str(runs), "--method", "sft=lm/sft", "--method", "sft=lm/sft2"])
    one_line_error(capsys, status, "--method sft is given twice")
    assert not (runs / "chosen.json").exists()


@pytest.mark.parametrize(
    "item,words",
    [
        ("sft=lm/grpo", ["objective is 'grpo'"]),
        ("fgpo=lm/fgpo-format", ["format_weight"]),
        ("fgpo-format=lm/fgpo", ["format_weight"]),
        ("untrained=lm/sft", ["trained run"]),
        ("dpo=lm/desc", ["evaluations only"]),
    ],
)
def test_choose_refuses_a_run_of_another_objective(runs, capsys, item, words):
    status = main(["choose", "--runs-dir", str(runs), "--method", item])
    one_line_error(capsys, status, "cannot be the", *words)
    assert not (runs / "chosen.json").exists()


@pytest.mark.parametrize("n_tools", [5, 8])
def test_a_table_of_more_tools_than_the_features_slots_is_refused(n_tools):
    import numpy as np

    from fgpo_core.experiments.study_inputs import check_study_inputs
    from fgpo_core.table import RewardTable

    table = RewardTable(np.zeros((2, 1 << n_tools), dtype=bool), n_tools)
    data = {s: (["a", "b"], np.zeros((2, 3)), table) for s in ("train", "dev", "core")}
    with pytest.raises(ValueError, match=f"4 tool slots in the prompt but the tables' library has {n_tools} tools"):
        check_study_inputs(data, {"n_tools": 4})
    assert check_study_inputs(data, {"n_tools": n_tools}) == n_tools
    four = RewardTable(np.zeros((2, 16), dtype=bool), 4)
    with pytest.raises(ValueError, match="different tool counts"):
        check_study_inputs({**data, "dev": (["a", "b"], np.zeros((2, 3)), four)}, {"n_tools": n_tools})
