"""Shared test helpers, and the order the tests start in when spread over processes (pytest-xdist)."""

import copy
import os

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):  # one torch/OpenMP thread per worker: the workers share the cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")

SLOW_FIRST = {
    "test_notebooks.py::test_chapter_executes_under_ci[reward_table]": 358,
    "test_grpo.py::test_an_interrupted_grpo_run_resumes_with_the_dead_group_counts_of_its_earlier_steps": 238,
    "test_reader.py::test_reader_scores_in_any_batch_order_and_adds_blocks": 224,
    "test_grpo.py::test_grpo_keeps_the_adapter_of_its_best_dev_evaluation": 153,
    "test_notebooks.py::test_chapter_executes_under_ci[benchmarks]": 146,
    "test_imitation.py::test_sampled_format_agrees_with_the_exact_mass_by_monte_carlo": 129,
    "test_reader.py::test_reader_training_smoke_run_writes_a_manifest": 127,
    "test_imitation.py::test_an_interrupted_sft_run_resumes_from_its_checkpoint_to_the_same_adapter": 120,
    "test_notebooks.py::test_chapter_executes_under_ci[fgpo_vs_grpo]": 116,
    "test_imitation.py::test_tiny_dpo_run_widens_the_chosen_over_rejected_margin": 111,
    "test_grpo.py::test_tiny_trl_grpo_run_logs_the_dead_fraction_of_its_groups": 89,
    "test_grpo.py::test_trls_dead_group_count_misses_groups_whose_float32_mean_rounds": 83,
    "test_imitation.py::test_micro_batched_dpo_takes_the_same_step_as_one_pass": 65,
    "test_cli_inputs.py::test_evaluate_needs_an_output_folder_and_can_skip_scoring": 61,
    "test_notebooks.py::test_chapter_executes_under_ci[your_own]": 61,
    "test_imitation.py::test_dpo_from_a_trained_adapter_keeps_that_adapter_as_its_reference": 50,
    "test_notebooks.py::test_chapter_executes_under_ci[intro]": 49,
    "test_imitation.py::test_tiny_exact_warmup_raises_the_mass_spreads_it_and_resumes": 46,
    "test_reasoners.py::test_causal_lm_kv_reuse_equals_full_prompts": 45,
    "test_notebooks.py::test_chapter_executes_under_ci[head_study]": 44,
    "test_notebooks.py::test_chapter_executes_under_ci[tool_library]": 43,
    "test_imitation.py::test_tiny_warmup_resumes_from_its_last_finished_epoch": 42,
    "test_grpo.py::test_grpo_with_dev_scoring_logs_fgpos_dev_fields_and_keeps_by_free_generation": 36,
    "test_imitation.py::test_tiny_warmup_raises_the_mass_on_the_policy_strings_and_stops_at_the_target": 36,
    "test_notebooks.py::test_chapter_executes_under_ci[exact_vs_sampled]": 34,
    "test_notebooks.py::test_chapter_executes_under_ci[dead_groups]": 30,
    "test_imitation.py::test_tiny_sft_run_raises_the_target_strings_probability": 29,
    "test_notebooks.py::test_chapter_executes_under_ci[past_enumeration]": 28,
    "test_notebooks.py::test_chapter_executes_under_ci[post_training]": 26,
    "test_imitation.py::test_uniform_format_loss_is_the_mean_sft_loss_over_every_policy_string": 26,
    "test_runs.py::test_a_fresh_adapter_over_a_merged_one_loads_back_as_it_was_trained": 24,
    "test_notebooks.py::test_chapter_executes_under_ci": 30,
}
"""Seconds each test over 20 s took in one process (``pytest --durations=40`` on two cores shared with
other jobs, 2026-12-07, before the tokenizer was read once per process; a name without its
``[parameter]`` stands for every parameter not listed). Only their order matters."""


def _expected_seconds(item) -> float:
    name = item.nodeid.rsplit("/", 1)[-1]
    return SLOW_FIRST.get(name, SLOW_FIRST.get(name.split("[", 1)[0], 0.0))


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the slowest tests first (the rest keep their order): with ``--dist load
    --maxschedchunk 1`` each worker then takes the longest test left whenever it is free, so the
    long chapters run side by side from the start and the short tests fill the gaps at the end,
    instead of one worker running every chapter after the other. The order is the same in every
    worker, as xdist requires."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: -_expected_seconds(item))  # stable: the others keep their order


_TOKENIZER: dict = {}


def smollm2_tokenizer():
    """SmolLM2's tokenizer as ``AutoTokenizer.from_pretrained`` reads it from the GGUF file, a fresh
    copy for each caller. The file is read once per process: reading it parses the whole file's
    metadata, seconds each time, three quarters of what the tiny-LM tests took."""
    if "smollm2" not in _TOKENIZER:
        from transformers import AutoTokenizer

        from fgpo_core.reasoners.causal_lm import smollm2_path

        d, f = smollm2_path()
        _TOKENIZER["smollm2"] = AutoTokenizer.from_pretrained(d, gguf_file=f)
    return copy.deepcopy(_TOKENIZER["smollm2"])


def make_tiny_lm(**config):
    """A randomly initialised 2-layer Llama with SmolLM2's tokenizer (seed 0): the stand-in
    selector model of the selector, GRPO and imitation tests. ``config`` adds LlamaConfig fields."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = smollm2_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        **config,
    )
    return LlamaForCausalLM(cfg), tok


@pytest.fixture(scope="session")
def tiny_lm():
    return make_tiny_lm


@pytest.fixture(scope="session")
def ci_bench(tmp_path_factory):
    """The ci-profile benchmark (every suite, seed 0), built once for the whole test session, and
    under pytest-xdist once for all its workers (the first builds it in their shared temporary
    folder while the others wait): ``(folder, manifest)``. Tests only read it."""
    import fcntl
    import json
    import shutil

    from fgpo_core.genomics.benchmarks import build_all

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        out = tmp_path_factory.mktemp("ci-bench")
        build_all(out, "ci", seed=0, progress=False)
        return out, json.loads((out / "manifest.json").read_text())
    shared = tmp_path_factory.getbasetemp().parent  # this session's, common to its workers
    out, done = shared / "ci-bench", shared / "ci-bench.done"
    with open(shared / "ci-bench.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():  # not built, or a worker died while building it
            shutil.rmtree(out, ignore_errors=True)
            build_all(out, "ci", seed=0, progress=False)
            done.touch()
    return out, json.loads((out / "manifest.json").read_text())
