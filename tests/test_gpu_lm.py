"""The GPU run's transfer and its device-side script, at toy scale on the CPU: packing a weights
file into call folders, a corrupted piece refused, the pieces gathered over two calls,
reassembled and checked, a wheel installed, then FGPO and GRPO trained and evaluated end to end
on a tiny random Llama (with a byte-level tokenizer) and the run folders read back."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fgpo_core.experiments import gpu_pack
from fgpo_core.experiments.gpu_scoring import EVAL_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _tiny_model_tar(folder: Path) -> Path:
    """A 2-layer random Llama with a byte-level tokenizer (no merges) and a ChatML template, as a tar."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(sorted(alphabet))}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", bos_token="<|im_start|>")
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = CHATML
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.bos_token_id,
        )
    )
    src = folder / "tiny"
    model.save_pretrained(src)
    tok.save_pretrained(src)
    out = folder / "tiny.tar"
    with tarfile.open(out, "w") as tar:
        for f in sorted(src.iterdir()):
            tar.add(f, arcname=f.name)
    return out


def _dummy_wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel (``fgpo_gpu_probe``), to test the --no-index --target install."""
    folder.mkdir()
    whl = folder / "fgpo_gpu_probe-0.1-py3-none-any.whl"
    files = {
        "fgpo_gpu_probe/__init__.py": b"VALUE = 7\n",
        "fgpo_gpu_probe-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: fgpo-gpu-probe\nVersion: 0.1\n",
        "fgpo_gpu_probe-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = "".join(f"{n},,\n" for n in files) + "fgpo_gpu_probe-0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(whl, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
        z.writestr("fgpo_gpu_probe-0.1.dist-info/RECORD", record)
    return whl


def test_pack_split_corruption_and_reassembly(tmp_path):
    blob = np.random.default_rng(0).integers(0, 256, 5 * 2**20 + 123, dtype=np.uint8).tobytes()
    weights = tmp_path / "model.gguf"
    weights.write_bytes(blob)
    m = gpu_pack.pack(weights, tmp_path / "pack", piece_mib=1, carry_mib=2.5)
    assert [len(names) for _, names in m["calls"]] == [2, 2, 2]  # six pieces, two per call
    assert m["sha256"] == hashlib.sha256(blob).hexdigest()
    calls = [tmp_path / "pack" / name for name, _ in m["calls"]]
    assert gpu_pack.gather(calls[:1], tmp_path / "cache") == [p["name"] for p in m["pieces"][2:]]
    # a corrupted piece is refused, in one line, by the device command
    bad = calls[1] / m["pieces"][2]["name"]
    good = bad.read_bytes()
    bad.write_bytes(b"x" + good[1:])
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fgpo_core.experiments.gpu_pack",
            "device",
            str(calls[1]),
            "--cache",
            str(tmp_path / "cache"),
            "--no-run",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "corrupted" in res.stderr, res.stderr
    bad.write_bytes(good)
    assert gpu_pack.gather(calls[1:], tmp_path / "cache") == []
    assert gpu_pack.assemble(tmp_path / "cache").read_bytes() == blob
    # a cached piece damaged after its check is caught when the whole is joined
    (tmp_path / "cache" / "model.gguf").unlink()
    (tmp_path / "cache" / m["pieces"][0]["name"]).write_bytes(b"\0")
    with pytest.raises(gpu_pack.PackError, match="corrupted"):
        gpu_pack.assemble(tmp_path / "cache")


def test_travel_size_refuses_over_the_limit(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "tracked.bin").write_bytes(b"\0" * 300_000)
    (repo / ".gitignore").write_text("/.gpu-lm/\n")
    (repo / ".gpu-lm").mkdir()
    (repo / ".gpu-lm" / "piece").write_bytes(b"\0" * 500_000)
    subprocess.run(["git", "-C", str(repo), "add", "tracked.bin", ".gitignore"], check=True)
    tree, carried = gpu_pack.travel_bytes(repo, [".gpu-lm"])
    assert tree == 300_000 + len("/.gpu-lm/\n") and carried == 500_000
    cmd = [sys.executable, "-m", "fgpo_core.experiments.gpu_pack", "size", "--root", str(repo)]
    ok = subprocess.run(cmd + ["--limit-mib", "1"], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and "would travel" in ok.stdout
    over = subprocess.run(cmd + ["--carry", ".gpu-lm", "--limit-mib", "0.7"], cwd=ROOT, capture_output=True, text=True)
    assert over.returncode == 2 and over.stderr.count("\n") == 1 and over.stderr.startswith("refused")


def test_device_script_end_to_end(tmp_path, monkeypatch):
    """Two device calls: the first brings half the pieces, the second the rest and a wheel, then
    FGPO and GRPO train (4 questions, 1 epoch, G=2) and are evaluated; the tars unpack into the
    cpu runs' layout."""
    import torch

    torch.set_num_threads(1)
    weights = _tiny_model_tar(tmp_path)
    wheel = _dummy_wheel(tmp_path / "wheels")
    m = gpu_pack.pack(weights, tmp_path / "pack", piece_mib=0.05, carry_mib=0.1, wheels=[wheel])
    calls = [str(tmp_path / "pack" / name) for name, _ in m["calls"]]
    assert len(calls) >= 2 and (Path(calls[-1]) / "wheels" / wheel.name).exists()
    cache, site, out = tmp_path / "cache", tmp_path / "site", tmp_path / "OUT"
    monkeypatch.setattr(sys, "path", list(sys.path))
    common = ["--cache", str(cache), "--site", str(site), "--out", str(out)]
    assert gpu_pack.main(["device", *calls[:-1], *common]) == 0
    assert not out.exists()
    run = [
        "--n-train",
        "4",
        "--n-dev",
        "2",
        "--n-test",
        "4",
        "--epochs",
        "1",
        "--evals-per-epoch",
        "2",
        "--fgpo-batch",
        "2",
        "--fgpo-micro",
        "1",
        "--prompts-per-step",
        "2",
        "--G",
        "2",
        "--eval-batch",
        "3",
        "--init-adapter",
        "",
        "--keep",
        "10",
        "--device",
        "cpu",
        "--max-completion-length",
        "8",
    ]
    assert gpu_pack.main(["device", calls[-1], *common, "--", *run]) == 0
    import fgpo_gpu_probe  # installed from the carried wheel into --site

    assert fgpo_gpu_probe.VALUE == 7
    files = sorted(p.name for p in out.iterdir() if p.is_file())
    assert files == ["chosen.json", "fgpo-format-lr0.0003.tar", "gpu-lm-log.txt", "grpo.tar"]
    runs = tmp_path / "runs"
    gpu_pack.unpack(out, runs)
    chosen = json.loads((runs / "chosen.json").read_text())
    assert chosen == {"fgpo-format": "lm/fgpo-format-lr0.0003", "grpo": "lm/grpo"}
    for method, rel in chosen.items():
        folder = runs / rel
        man = json.loads((folder / "manifest.json").read_text())
        assert man["objective"] == method.split("-")[0] and man["n_train"] == 4 and man["gpu_run"]["visits"] == 4
        assert (folder / "adapter" / "adapter_model.safetensors").exists()
        dev = pd.DataFrame(man["dev"])
        assert list(dev["step"]) == [0, 1, 2] and man["best_step"] in (0, 1, 2)
        assert {"accuracy", "J"} <= set(dev) and len(man["steps"]) == 2
        for suite in ("core", "microbe", "mosaic"):
            frame = pd.read_parquet(folder / "eval" / f"{suite}.parquet")
            assert list(frame.columns[: len(EVAL_COLUMNS)]) == list(EVAL_COLUMNS) and len(frame) == 4
            assert [f"candidate_score_{a}" for a in range(16)] + [f"p_gen_{a}" for a in range(16)] == list(
                frame.columns[len(EVAL_COLUMNS) :]
            )
            assert frame["generation_pick"].between(-1, 15).all() and frame["scoring_pick"].between(0, 15).all()
            assert frame.attrs["adapter"] == man["adapter_hash"] and frame.attrs["keep"] == "10"
    grpo = json.loads((runs / "lm" / "grpo" / "manifest.json").read_text())
    assert grpo["reward_evaluations"] == 2 * 2 * 2 and "frac_reward_zero_std" in grpo["steps"][0]


def test_batched_scores_match_the_selector(tmp_path):
    """The batched, left-padded pass gives the selector's own question-by-question numbers."""
    import torch

    from fgpo_core.experiments.gpu_scoring import batch_logprobs, evaluate_batch, load_base, load_gpu_selector
    from fgpo_core.genomics.benchmarks import load_benchmark

    torch.set_num_threads(1)
    lm = load_base(str(_tiny_model_tar(tmp_path)), "cpu", False)
    sel = load_gpu_selector(lm, "", keep=10)
    sel.model.eval()
    _, suites = load_benchmark(ROOT / "data" / "benchmarks" / "cpu")
    qs = suites["dev"][:3]
    assert len({len(sel.prompt_ids(q)) for q in qs}) > 1  # the batch really is padded
    with torch.no_grad():
        lp = batch_logprobs(sel, qs)
        for b, q in enumerate(qs):
            torch.testing.assert_close(lp[b], sel._token_logprobs(sel.prompt_ids(q), True), atol=2e-5, rtol=1e-5)
    for e, q in zip(evaluate_batch(sel, qs, batch=2), qs):
        ref = sel.evaluate_question(q)
        torch.testing.assert_close(e["scores"], ref["scores"], atol=2e-5, rtol=1e-5)
        assert (e["generation_pick"], e["constrained_pick"]) == (ref["generation_pick"], ref["constrained_pick"])


def test_time_guard_stops_training_and_keeps_the_dev_argmax(tmp_path):
    """A run past its time guard stops, says so, and still evaluates what it kept."""
    import torch

    from fgpo_core.experiments.gpu_lm import GPULMConfig, run_gpu_lm

    torch.set_num_threads(1)
    cfg = GPULMConfig(
        weights=str(_tiny_model_tar(tmp_path)),
        out=str(tmp_path / "out"),
        methods="fgpo",
        n_train=4,
        n_dev=2,
        n_test=2,
        epochs=1,
        fgpo_batch=1,
        init_adapter="",
        keep=10,
        device="cpu",
        eval_batch=2,
        max_train_s=1e-6,
    )
    assert run_gpu_lm(cfg) == {"fgpo-format": "lm/fgpo-format-lr0.0003"}
    man = json.loads((tmp_path / "out" / "lm" / "fgpo-format-lr0.0003" / "manifest.json").read_text())
    assert man["stopped_early"] and len(man["steps"]) == 1 and man["visits_done"] == 1
    assert man["config"]["format_weight"] == 0.05 and man["config"]["lr"] == 3e-4
    assert [d["step"] for d in man["dev"]] == [0, 1] and man["best_step"] in (0, 1)
    assert len(pd.read_parquet(tmp_path / "out" / "lm" / "fgpo-format-lr0.0003" / "eval" / "core.parquet")) == 2
