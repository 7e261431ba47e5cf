"""Shared test helpers."""
import pytest


def make_tiny_lm(**config):
    """A randomly initialised 2-layer Llama with SmolLM2's tokenizer (seed 0): the stand-in
    selector model of the selector, GRPO and imitation tests. ``config`` adds LlamaConfig fields."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from fgpo_core.reasoners.causal_lm import smollm2_path

    d, f = smollm2_path()
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048, **config)
    return LlamaForCausalLM(cfg), tok


@pytest.fixture(scope="session")
def tiny_lm():
    return make_tiny_lm


@pytest.fixture(scope="session")
def ci_bench(tmp_path_factory):
    """The ci-profile benchmark (every suite, seed 0), built once for the whole test session:
    ``(folder, manifest)``."""
    from fgpo_core.genomics.benchmarks import build_all

    out = tmp_path_factory.mktemp("ci-bench")
    return out, build_all(out, "ci", seed=0, progress=False)
