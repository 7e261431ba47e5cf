"""``--executor ray``: the table build and a study on a local Ray write what the local path writes.

The Ray tests start one Ray on this machine (two CPUs) for the module and are skipped when Ray is
not installed (``pip install -e '.[ray]'``); the refusals of bad input run without it."""

import functools
import json
import socket
import sys

import numpy as np
import pandas as pd
import pytest
from helpers import HashReasoner

from fgpo_core.cli import main
from fgpo_core.distributed import check_executor, chunk_name, study_parts
from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
from fgpo_core.table import ManifestMismatch
from fgpo_core.table.build import COSTS, build_cost, build_table, merge_table


def _files(folder) -> dict:
    """Every file of a folder by its path inside it, lock files and what the build cost aside (its
    seconds, in the cost log and the merged manifest's ``build``, differ from run to run)."""
    out = {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock") and p.name != COSTS
    }
    if "manifest.json" in out:
        manifest = json.loads(out["manifest.json"])
        manifest.pop("build", None)
        out["manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    return out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_line_exit_2(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_an_unknown_executor_or_an_address_without_ray_is_refused(capsys, tmp_path):
    with pytest.raises(ValueError, match="one of local, ray"):
        check_executor("spark", None)
    with pytest.raises(ValueError, match="with --executor ray"):
        check_executor("local", "10.0.0.1:6379")
    check_executor("ray", None)
    out = str(tmp_path / "t")
    assert "--executor must be" in _one_line_exit_2(
        capsys, ["table", "build", "--bench", "x", "--suite", "core", "--out", out, "--executor", "spark"]
    )
    assert "--executor must be" in _one_line_exit_2(capsys, ["study", "--executor", "dask", "--out-dir", out])
    assert "with --executor ray" in _one_line_exit_2(capsys, ["study", "--address", "10.0.0.1:6379", "--out-dir", out])


def test_an_unreachable_cluster_is_one_line_and_exit_2(capsys, ci_bench, tmp_path):
    bench, _ = ci_bench
    argv = ["table", "build", "--bench", str(bench), "--suite", "microbe", "--limit", "2", "--out", str(tmp_path)]
    for address, said in ((f"127.0.0.1:{_closed_port()}", "cannot reach a Ray cluster"), ("nohost", "HOST:PORT")):
        err = _one_line_exit_2(capsys, argv + ["--executor", "ray", "--address", address])
        assert said in err or "needs Ray" in err, err
    assert not (tmp_path / "manifest.json").exists()  # refused before anything was written
    err = _one_line_exit_2(capsys, ["study", "--executor", "ray", "--shard", "0/2", "--out-dir", str(tmp_path)])
    assert "splits the study itself" in err


# ---- on a local Ray ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="the Ray executor's tests need Ray: pip install -e '.[ray]'")
    import helpers

    for module in (helpers, sys.modules[__name__]):  # the workers need not import the tests
        ray.cloudpickle.register_pickle_by_value(module)
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_worker_niceness", "0")  # the workers at the tests' priority, as fgpo's own Ray runs them
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()
    mp.undo()


def _toy_inputs(bench, n: int):
    """What a Ray worker loads: the first ``n`` microbe questions, the benchmark's tools, a hash reasoner."""
    _, suites = load_benchmark(bench)
    return suites["microbe"][:n], tool_library_for(bench), HashReasoner()


def _no_inputs():
    raise ValueError("no suite here")


def test_a_table_built_on_ray_equals_the_local_build_byte_for_byte(ray_local, ci_bench, tmp_path):
    from fgpo_core.distributed import build_table_ray

    bench, _ = ci_bench
    qs, lib, reasoner = _toy_inputs(bench, 7)
    build_table(qs, lib, reasoner, tmp_path / "local", chunk_size=2, progress=False)
    merge_table(tmp_path / "local")
    build_table_ray(functools.partial(_toy_inputs, bench, 7), tmp_path / "ray", chunk_size=2, progress=False)
    merge_table(tmp_path / "ray")
    local, ray = _files(tmp_path / "local"), _files(tmp_path / "ray")
    assert chunk_name((0, 1), 3) in local  # four chunks of 2, 2, 2 and 1 questions
    assert list(ray) == list(local) and all(ray[f] == local[f] for f in local)
    for where in ("local", "ray"):  # each records its reasoner calls: 7 questions x 16 subsets
        assert build_cost(tmp_path / where)["reasoner_calls"] == 7 * 16
        assert json.loads((tmp_path / where / "manifest.json").read_text())["build"] == build_cost(tmp_path / where)
    # a second shard layout on Ray: shard 1 of 2, beside the local shard 0 of 2, merges to the same rows
    build_table(qs, lib, reasoner, tmp_path / "halves", shard=(0, 2), chunk_size=2, progress=False)
    build_table_ray(
        functools.partial(_toy_inputs, bench, 7), tmp_path / "halves", shard=(1, 2), chunk_size=2, progress=False
    )
    merge_table(tmp_path / "halves")
    assert (tmp_path / "halves" / "table.parquet").read_bytes() == local["table.parquet"]


def test_a_killed_build_resumes_on_ray_and_redoes_a_bad_chunk(ray_local, ci_bench, tmp_path):
    from fgpo_core.distributed import build_table_ray

    bench, _ = ci_bench
    qs, lib, reasoner = _toy_inputs(bench, 7)
    build_table(qs, lib, reasoner, tmp_path / "whole", chunk_size=2, progress=False)
    build_table(qs, lib, reasoner, tmp_path / "t", chunk_size=2, progress=False, max_chunks=2)
    first, second = tmp_path / "t" / chunk_name((0, 1), 0), tmp_path / "t" / chunk_name((0, 1), 1)
    kept = first.stat().st_mtime_ns
    second.write_bytes(second.read_bytes()[:-7])  # torn: fails its checksum
    build_table_ray(functools.partial(_toy_inputs, bench, 7), tmp_path / "t", chunk_size=2, workers=1, progress=False)
    assert first.stat().st_mtime_ns == kept  # a whole chunk is not built again
    assert _files(tmp_path / "t") == _files(tmp_path / "whole")
    # a folder of other inputs is refused before any chunk is written; a worker's user error is itself
    with pytest.raises(ManifestMismatch, match="different inputs"):
        build_table_ray(functools.partial(_toy_inputs, bench, 5), tmp_path / "t", chunk_size=2, progress=False)
    with pytest.raises(ValueError, match="^no suite here$"):
        build_table_ray(_no_inputs, tmp_path / "u", progress=False)
    assert not (tmp_path / "u").exists()


def _summary_without_seconds(z) -> dict:
    return {k: v for k, v in json.loads(str(z["summary"])).items() if k != "seconds"}


def test_a_study_on_ray_equals_the_local_study(ray_local, ci_bench, tmp_path):
    """Every result file is the local one byte for byte, save what records wall time: the parts'
    and the sweep's ``seconds`` (and the parts' zip timestamps), the manifest's timings."""
    from helpers import toy_study_inputs

    from fgpo_core.distributed import run_study_ray
    from fgpo_core.experiments.study import StudyConfig, run_study

    bench, _ = ci_bench
    toy_study_inputs(bench, tmp_path, {"train": 24, "dev": 8, "core": 8, "microbe": 8})

    def cfg(out):
        return StudyConfig(
            methods="fgpo,grpo",
            seeds=1,
            lrs="1e-2,1e-1",
            epochs=2,
            checkpoints=2,
            table_dir=str(tmp_path / "tables"),
            features_dir=str(tmp_path / "feat"),
            bench_dir=str(bench),
            suites="core,microbe",
            n_train=24,
            n_dev=8,
            n_test=8,
            out_dir=str(tmp_path / out),
        )

    run_study(cfg("local"), progress=False)
    assert study_parts(cfg("local")) == sorted(p.name for p in (tmp_path / "local" / "parts").iterdir())
    assert run_study_ray(cfg("ray"), progress=False) == tmp_path / "ray"
    local, ray = _files(tmp_path / "local"), _files(tmp_path / "ray")
    assert list(ray) == list(local)
    for name in ("picks", "q", "curves", "dev", "checkpoints"):
        assert ray[f"{name}.parquet"] == local[f"{name}.parquet"], name
    sweep = [pd.read_parquet(tmp_path / d / "sweep.parquet").drop(columns="seconds") for d in ("local", "ray")]
    pd.testing.assert_frame_equal(*sweep)
    for part in (tmp_path / "local" / "parts").iterdir():
        with np.load(part) as a, np.load(tmp_path / "ray" / "parts" / part.name) as b:
            assert a.files == b.files and _summary_without_seconds(a) == _summary_without_seconds(b)
            assert all(np.array_equal(a[k], b[k]) for k in a.files if k != "summary")
    m = [json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("local", "ray")]
    for x in m:
        del x["seconds"], x["train_seconds"], x["config"]["out_dir"], x["files"]["sweep.parquet"]
    assert m[0] == m[1]
    # resumed on Ray: every part is found and kept, nothing is trained again
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ray" / "parts").iterdir()}
    run_study_ray(cfg("ray"), progress=False)
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ray" / "parts").iterdir()} == before


def test_a_table_records_what_each_build_run_cost(ci_bench, tmp_path):
    """Calls and seconds per run, summed into the merged manifest; a resumed run adds only its own
    calls, and a torn line (a run killed mid-write) is skipped."""
    bench, _ = ci_bench
    qs, lib, reasoner = _toy_inputs(bench, 5)
    out = tmp_path / "t"
    build_table(qs, lib, reasoner, out, chunk_size=2, progress=False, max_chunks=1)
    assert build_cost(out)["reasoner_calls"] == 2 * 16 and build_cost(out)["runs"] == 1
    with open(out / COSTS, "a") as fh:
        fh.write('{"calls": 9')
    build_table(qs, lib, reasoner, out, chunk_size=2, progress=False)
    merge_table(out)
    cost = json.loads((out / "manifest.json").read_text())["build"]
    assert cost["reasoner_calls"] == 5 * 16 and cost["runs"] == 2
    assert cost["calls_per_second"] == pytest.approx(cost["reasoner_calls"] / cost["seconds"], rel=0.01)
    build_table(qs, lib, reasoner, out, chunk_size=2, progress=False)  # resumed after the merge: nothing to do
    assert build_cost(out)["runs"] == 2
