"""The reward-table builder: determinism, sharding, resume after a kill, manifest refusal, ceilings."""

import numpy as np
import pandas as pd
import pytest
from helpers import HashReasoner

from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
from fgpo_core.table import ManifestMismatch, RewardTable, load_table
from fgpo_core.table.build import build_table, cost_accounting, merge_table


@pytest.fixture(scope="module")
def bench(ci_bench):
    out, _ = ci_bench
    _, suites = load_benchmark(out)
    return out, suites["microbe"][:10], tool_library_for(out)


def _bytes(path):
    return (path / "table.parquet").read_bytes()


def test_build_twice_identical_and_rows_complete(bench, tmp_path):
    out, qs, lib = bench
    for d in ("a", "b"):
        build_table(qs, lib, HashReasoner(), tmp_path / d, chunk_size=3, progress=False)
        merge_table(tmp_path / d)
    assert _bytes(tmp_path / "a") == _bytes(tmp_path / "b")
    table = load_table(tmp_path / "a")
    df = pd.read_parquet(tmp_path / "a" / "table.parquet")
    assert table.correct.shape == (10, 16) and len(df) == 160
    assert table.question_ids.tolist() == [q.id for q in qs] and table.manifest["n_questions"] == 10
    # the rewards stored at build time are the table's, and equal the ones computed from correctness
    np.testing.assert_array_equal(table.rewards("eq1"), df.reward_eq1.to_numpy().reshape(10, 16))
    computed = RewardTable(table.correct, 4, lam=table.lam)
    np.testing.assert_allclose(table.rewards("eq1"), computed.rewards("eq1"))
    np.testing.assert_allclose(table.rewards("differential"), computed.rewards("differential"))
    np.testing.assert_array_equal(table.predictions, df.prediction.to_numpy().reshape(10, 16))
    assert (df.groupby("q_index")["mask"].apply(list) == [list(range(16))] * 10).all()
    # Eq. 1 and differential rewards agree with correctness
    assert ((df.reward_eq1 > 0) == df.correct).all()
    first = df[df["mask"] == 0].set_index("q_index")["correct"]
    diff = df.reward_differential - 0.05
    assert np.allclose(diff, 0.95 * (df.correct.astype(float) - df.q_index.map(first).astype(float)))


def test_killed_build_resumes_identical(bench, tmp_path):
    out, qs, lib = bench
    build_table(qs, lib, HashReasoner(), tmp_path / "full", chunk_size=3, progress=False)
    merge_table(tmp_path / "full")
    build_table(qs, lib, HashReasoner(), tmp_path / "part", chunk_size=3, progress=False, max_chunks=2)
    with pytest.raises(ValueError, match="incomplete"):
        merge_table(tmp_path / "part")
    (tmp_path / "part" / "shard000of001-chunk00002.parquet.123.tmp").write_bytes(b"half-written")
    build_table(qs, lib, HashReasoner(), tmp_path / "part", chunk_size=3, progress=False)
    merge_table(tmp_path / "part")
    assert _bytes(tmp_path / "full") == _bytes(tmp_path / "part")


def test_shards_merge_to_the_whole(bench, tmp_path):
    out, qs, lib = bench
    build_table(qs, lib, HashReasoner(), tmp_path / "one", chunk_size=4, progress=False)
    merge_table(tmp_path / "one")
    for i in range(3):
        build_table(qs, lib, HashReasoner(), tmp_path / "three", shard=(i, 3), chunk_size=4, progress=False)
    merge_table(tmp_path / "three")
    a = pd.read_parquet(tmp_path / "one" / "table.parquet")
    b = pd.read_parquet(tmp_path / "three" / "table.parquet")
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(ValueError):
        build_table(qs, lib, HashReasoner(), tmp_path / "bad", shard=(3, 3))


def test_manifest_mismatch_is_refused(bench, tmp_path):
    out, qs, lib = bench
    build_table(qs, lib, HashReasoner(), tmp_path / "t", progress=False)
    merge_table(tmp_path / "t")
    with pytest.raises(ManifestMismatch, match="questions_sha256"):
        build_table(qs[:5], lib, HashReasoner(), tmp_path / "t", progress=False)

    class Other(HashReasoner):
        id = "other"

    with pytest.raises(ManifestMismatch, match="reasoner"):
        build_table(qs, lib, Other(), tmp_path / "t", progress=False)
    with pytest.raises(ManifestMismatch, match="lambda"):
        load_table(tmp_path / "t", expect={"lambda": 0.0})


def test_ceilings_order_on_a_built_table(bench, tmp_path):
    out, qs, lib = bench
    build_table(qs, lib, HashReasoner(), tmp_path / "t", progress=False)
    merge_table(tmp_path / "t")
    table = load_table(tmp_path / "t")
    c = table.ceilings()
    assert c["oracle"] >= c["best_fixed"] >= table.fixed_subset_accuracy().max() - 1e-9
    assert c["best_fixed"] >= max(c["no_tool"], c["all_tools"], c["random"]) - 1e-9


def test_cost_accounting_of_the_paper():
    c = cost_accounting(4, 2002)
    assert c["table_calls"] == 32_032 and c["grpo_calls"] == 76_800
    assert c["grpo_over_table"] == pytest.approx(76_800 / 32_032)


def test_extending_by_one_tool_equals_the_full_build(bench, tmp_path):
    """The five-tool table built by extending the four-tool one answers only the 16 subsets
    that hold T5 and ends equal to a five-tool table built from scratch."""
    out, qs, lib = bench
    five = tool_library_for(out, five=True)
    build_table(qs, lib, HashReasoner(), tmp_path / "four", chunk_size=4, progress=False)
    merge_table(tmp_path / "four")
    build_table(qs, five, HashReasoner(), tmp_path / "full", chunk_size=4, progress=False)
    merge_table(tmp_path / "full")
    calls = []

    class Counting(HashReasoner):
        def answer(self, pairs):
            calls.append(len(pairs))
            return super().answer(pairs)

    build_table(qs, five, Counting(), tmp_path / "ext", chunk_size=4, progress=False, extend_from=tmp_path / "four")
    merge_table(tmp_path / "ext")
    assert calls == [16] * len(qs)
    a, b = (pd.read_parquet(tmp_path / d / "table.parquet") for d in ("full", "ext"))
    pd.testing.assert_frame_equal(a, b)
    four_tools = load_table(tmp_path / "four").manifest["tools"]
    assert load_table(tmp_path / "ext").manifest["extended_from"]["tools"] == four_tools
    # a base of other questions, or one that is not the library less one tool, is refused
    build_table(qs[:5], lib, HashReasoner(), tmp_path / "few", progress=False)
    merge_table(tmp_path / "few")
    with pytest.raises(ManifestMismatch, match="questions_sha256"):
        build_table(qs, five, HashReasoner(), tmp_path / "x", progress=False, extend_from=tmp_path / "few")
    with pytest.raises(ManifestMismatch, match="tools"):
        build_table(qs, five, HashReasoner(), tmp_path / "y", progress=False, extend_from=tmp_path / "full")


def test_truncated_or_altered_chunks_are_caught_and_rebuilt(bench, tmp_path):
    out, qs, lib = bench
    build_table(qs, lib, HashReasoner(), tmp_path / "t", chunk_size=4, progress=False)
    merge_table(tmp_path / "t")
    whole = _bytes(tmp_path / "t")
    c0, c1 = (tmp_path / "t" / f"shard000of001-chunk0000{j}.parquet" for j in (0, 1))
    c0.write_bytes(c0.read_bytes()[:100])  # truncated
    df = pd.read_parquet(c1)
    df.loc[0, "prediction"] = "Z"  # altered: a valid parquet file with another value
    df.to_parquet(c1, index=False)
    with pytest.raises(ValueError, match="fail their checksum"):
        merge_table(tmp_path / "t")
    build_table(qs, lib, HashReasoner(), tmp_path / "t", chunk_size=4, progress=False)  # redoes both
    merge_table(tmp_path / "t")
    assert _bytes(tmp_path / "t") == whole


def test_resuming_with_another_chunk_size_or_beside_a_live_builder_is_refused(bench, tmp_path):
    import os

    from fgpo_core.table.build import BuildLocked

    out, qs, lib = bench
    build_table(qs, lib, HashReasoner(), tmp_path / "t", chunk_size=4, progress=False, max_chunks=1)
    with pytest.raises(ManifestMismatch, match="chunk_size"):
        build_table(qs, lib, HashReasoner(), tmp_path / "t", chunk_size=3, progress=False)
    lock = tmp_path / "t" / ".shard000of001.lock"
    lock.write_text(str(os.getppid()))  # a live process holds the shard
    with pytest.raises(BuildLocked, match="another builder"):
        build_table(qs, lib, HashReasoner(), tmp_path / "t", chunk_size=4, progress=False)
    lock.write_text("999999999")  # its builder is gone: the lock is taken over
    build_table(qs, lib, HashReasoner(), tmp_path / "t", chunk_size=4, progress=False)
    assert not lock.exists()
    merge_table(tmp_path / "t")
    with pytest.raises(ValueError, match="chunk_size"):
        build_table(qs, lib, HashReasoner(), tmp_path / "u", chunk_size=0, progress=False)
    assert not (tmp_path / "u").exists()  # refused before the folder was made


def test_a_grown_table_equals_the_whole_build(bench, tmp_path):
    """A finished table of the first questions, grown by the appended ones (only those are
    answered), equals a whole build: rows and manifest; a five-tool table extending the grown
    four-tool one grows the same way; a base of other questions is refused."""
    from fgpo_core.table.grow import grow_table

    out, qs, four = bench
    five = tool_library_for(out, five=True)
    build_table(qs, four, HashReasoner(), tmp_path / "whole4", chunk_size=4, progress=False)
    merge_table(tmp_path / "whole4")
    build_table(
        qs, five, HashReasoner(), tmp_path / "whole5", chunk_size=4, progress=False, extend_from=tmp_path / "whole4"
    )
    merge_table(tmp_path / "whole5")
    build_table(qs[:6], four, HashReasoner(), tmp_path / "first4", chunk_size=4, progress=False)
    merge_table(tmp_path / "first4")
    build_table(
        qs[:6], five, HashReasoner(), tmp_path / "first5", chunk_size=4, progress=False, extend_from=tmp_path / "first4"
    )
    merge_table(tmp_path / "first5")

    class Counting(HashReasoner):
        calls = 0

        def answer(self, batch):
            Counting.calls += len(batch)
            return super().answer(batch)

    grow_table(
        qs, four, Counting(), tmp_path / "first4", tmp_path / "grown4", tmp_path / "work4", chunk_size=4, progress=False
    )
    assert Counting.calls == 4 * 16
    grow_table(
        qs,
        five,
        Counting(),
        tmp_path / "first5",
        tmp_path / "first5",
        tmp_path / "work5",
        chunk_size=4,
        progress=False,
        extend_from=tmp_path / "grown4",
    )
    assert Counting.calls == 4 * 16 + 4 * 16
    for whole, grown in (("whole4", "grown4"), ("whole5", "first5")):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / whole / "table.parquet"), pd.read_parquet(tmp_path / grown / "table.parquet")
        )
        inputs = [{k: v for k, v in load_table(tmp_path / f).manifest.items() if k != "build"} for f in (whole, grown)]
        assert inputs[0] == inputs[1]  # what each build cost aside
    with pytest.raises(ManifestMismatch, match="questions_sha256"):
        grow_table(qs[1:], four, HashReasoner(), tmp_path / "first4", tmp_path / "x", tmp_path / "wx", progress=False)


def test_grown_features_equal_the_whole_build(bench, tmp_path):
    """A feature cache grown by the appended questions equals a whole build (ids, features,
    manifest); the other suites' files are untouched."""
    import hashlib
    import json

    from fgpo_core.selectors.features import build_features, grow_features

    out, qs, _ = bench

    class Fake:
        fingerprint = "fake-v1"

        def __call__(self, texts):
            return np.array(
                [[b / 255 for b in hashlib.sha256(t.encode()).digest()[:8]] for t in texts], dtype=np.float32
            )

    build_features({"train": qs, "dev": qs[:3]}, tmp_path / "whole", model=Fake(), progress=False)
    build_features({"train": qs[:7], "dev": qs[:3]}, tmp_path / "grown", model=Fake(), progress=False)
    dev = (tmp_path / "grown" / "dev.npz").read_bytes()
    grow_features(qs, tmp_path / "grown", batch_size=4, progress=False, model=Fake())
    for d in ("whole", "grown"):
        with np.load(tmp_path / d / "train.npz") as z:
            got = (z["ids"].tolist(), z["features"])
        if d == "whole":
            want = got
    assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert json.loads((tmp_path / "grown" / "manifest.json").read_text()) == json.loads(
        (tmp_path / "whole" / "manifest.json").read_text()
    )
    assert (tmp_path / "grown" / "dev.npz").read_bytes() == dev


def test_grown_block_scores_equal_the_whole_run(bench, tmp_path):
    """Block scores of the first questions, grown by the rest, equal a whole run (scores and
    manifest), and a view of the grown folder reads all the questions."""
    from helpers import HashFusionReader

    from fgpo_core.table.fusion import BLOCKS, score_blocks, write_view
    from fgpo_core.table.grow import grow_blocks

    out, qs, lib = bench
    score_blocks(qs, lib, HashFusionReader(), tmp_path / "whole", chunk_size=4, progress=False)
    score_blocks(qs[:5], lib, HashFusionReader(), tmp_path / "grown", chunk_size=4, progress=False)
    grow_blocks(
        qs,
        lib,
        HashFusionReader(),
        tmp_path / "grown",
        tmp_path / "grown",
        tmp_path / "work",
        chunk_size=4,
        progress=False,
    )
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "whole" / BLOCKS).reset_index(drop=True),
        pd.read_parquet(tmp_path / "grown" / BLOCKS).reset_index(drop=True),
    )
    assert (tmp_path / "whole" / "manifest.json").read_text() == (tmp_path / "grown" / "manifest.json").read_text()
    write_view(tmp_path / "view", tmp_path / "grown", ["motif_scan", "splice"])
    assert load_table(tmp_path / "view").n_questions == len(qs)
