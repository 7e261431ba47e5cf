"""Tables fused from block scores equal the tables the builder makes with the same reader."""

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["composition", "splice", "genes", "cpg_islands", "thermo"]


@pytest.fixture(scope="module")
def inputs():
    from fgpo_core.genomics.benchmarks import load_benchmark
    from fgpo_core.genomics.tools import library_from_names
    from fgpo_core.reasoners.reader import EvidenceReader

    _, suites = load_benchmark(ROOT / "data/benchmarks/cpu")
    qs = [suites["core"][i] for i in (0, 1, 7)]  # describe and select questions
    return qs, (lambda names=NAMES: library_from_names(names)), EvidenceReader()


def test_fused_table_equals_the_built_table_row_by_row(inputs, tmp_path):
    from fgpo_core.table import load_table
    from fgpo_core.table.build import build_table, merge_table
    from fgpo_core.table.fusion import load_blocks, score_blocks

    qs, library, reader = inputs
    score_blocks(qs, library(), reader, tmp_path / "blocks", chunk_size=2, progress=False)
    build_table(qs, library(), reader, tmp_path / "built", progress=False)
    merge_table(tmp_path / "built")
    built, fused = load_table(tmp_path / "built"), load_blocks(tmp_path / "blocks").table()
    assert (fused.predictions == built.predictions).all() and (fused.correct == built.correct).all()
    np.testing.assert_allclose(fused.letter_logprobs, built.letter_logprobs, rtol=0, atol=1e-12)
    assert (fused.tokens == built.tokens).all()  # blocks add up token for token
    for kind in ("eq1", "differential"):
        np.testing.assert_array_equal(fused.rewards(kind), built.rewards(kind))
    assert load_table(tmp_path / "blocks").n_tools == len(NAMES)  # a block-score folder loads as a table


def test_a_view_is_the_table_of_its_sub_library_and_bad_views_are_refused(inputs, tmp_path):
    from fgpo_core.table import has_table, load_table
    from fgpo_core.table.build import build_table, merge_table
    from fgpo_core.table.fusion import score_blocks, write_view

    qs, library, reader = inputs
    score_blocks(qs, library(), reader, tmp_path / "blocks", progress=False)
    sub = ["genes", "composition"]
    write_view(tmp_path / "view", tmp_path / "blocks", sub)
    assert has_table(tmp_path / "view")
    build_table(qs, library(sub), reader, tmp_path / "built", progress=False)
    merge_table(tmp_path / "built")
    view, built = load_table(tmp_path / "view"), load_table(tmp_path / "built")
    assert view.n_tools == 2 and list(view.tool_names) == sub
    assert (view.predictions == built.predictions).all() and (view.tokens == built.tokens).all()
    np.testing.assert_allclose(view.letter_logprobs, built.letter_logprobs, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="distinct names"):
        write_view(tmp_path / "bad", tmp_path / "blocks", ["genes", "nope"])


def test_block_scoring_resumes_and_refuses_another_library(inputs, tmp_path):
    from fgpo_core.table.build import ManifestMismatch
    from fgpo_core.table.fusion import BLOCKS, load_blocks, score_blocks

    qs, library, reader = inputs
    score_blocks(qs, library(), reader, tmp_path, chunk_size=1, progress=False, max_chunks=2)
    assert not (tmp_path / BLOCKS).exists() and len(list(tmp_path.glob("chunk*.parquet"))) == 2
    score_blocks(qs, library(), reader, tmp_path, chunk_size=1, progress=False)
    assert list(load_blocks(tmp_path).question_ids) == [q.id for q in qs]
    with pytest.raises(ManifestMismatch):
        score_blocks(qs, library(NAMES[:3]), reader, tmp_path, chunk_size=1, progress=False)
    with pytest.raises(TypeError, match="late-fusion"):
        score_blocks(qs, library(), object(), tmp_path / "other", progress=False)


def test_on_demand_rewards_ask_each_pair_once_and_match_the_built_table(inputs, tmp_path):
    from fgpo_core.table import load_table
    from fgpo_core.table.build import ManifestMismatch, build_table, merge_table
    from fgpo_core.table.ondemand import OnDemandRewards

    qs, library, reader = inputs
    build_table(qs, library(), reader, tmp_path / "built", progress=False)
    merge_table(tmp_path / "built")
    built = load_table(tmp_path / "built")
    od = OnDemandRewards(qs, library(), reader, tmp_path / "store")
    qi, masks = np.array([0, 0, 2, 1, 0]), np.array([3, 17, 31, 5, 3])
    correct, reward = od.get(qi, masks)
    assert od.calls == 4 and len(od) == 4  # the repeated pair is asked once
    np.testing.assert_array_equal(correct, built.correct[qi, masks])
    np.testing.assert_allclose(reward, built.rewards("eq1")[qi, masks], rtol=0, atol=1e-12)
    od.flush()
    again = OnDemandRewards(qs, library(), reader, tmp_path / "store")  # another method, the same store
    again.get(qi, masks)
    assert again.calls == 0 and len(again) == 4
    with pytest.raises(ManifestMismatch):
        OnDemandRewards(qs[:2], library(), reader, tmp_path / "store")
    with pytest.raises(ValueError, match="masks lie in"):
        od.get([0], [32])


def test_cli_scores_blocks_and_writes_views(tmp_path, capsys):
    from fgpo_core.cli import main
    from fgpo_core.table import load_table

    bench = str(ROOT / "data/benchmarks/cpu")
    assert (
        main(
            [
                "table",
                "blocks",
                "--bench",
                bench,
                "--suite",
                "dev",
                "--limit",
                "2",
                "--tools",
                "composition,cpg_islands,restriction",
                "--out",
                str(tmp_path / "b"),
                "--threads",
                "1",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "table",
                "view",
                "--blocks",
                str(tmp_path / "b"),
                "--tools",
                "restriction,composition",
                "--out",
                str(tmp_path / "v"),
            ]
        )
        == 0
    )
    t = load_table(tmp_path / "v")
    assert t.n_questions == 2 and list(t.tool_names) == ["restriction", "composition"]
    assert (
        main(["table", "view", "--blocks", str(tmp_path / "b"), "--tools", "genes", "--out", str(tmp_path / "w")]) == 2
    )
    assert "distinct names" in capsys.readouterr().err
