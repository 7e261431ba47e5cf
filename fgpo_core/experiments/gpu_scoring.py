"""Batched scoring of the LM selector for the GPU run (:mod:`fgpo_core.experiments.gpu_lm`): the base
model and adapter loaded for a device, the candidates' log-probabilities of a minibatch in one
left-padded pass whose key-value cache is repeated for the 16 candidate strings, and the dev and
test evaluations built on it."""

from __future__ import annotations

import contextlib
import tarfile
from pathlib import Path

import numpy as np

__all__ = [
    "pick_device",
    "autocast_for",
    "load_base",
    "load_gpu_selector",
    "forward_cached",
    "batch_logprobs",
    "batch_scores",
    "evaluate_batch",
    "dev_row",
    "eval_frame",
    "EVAL_COLUMNS",
]

EVAL_COLUMNS = (
    "question_id",
    "family",
    "generation_pick",
    "completion",
    "generation_from_pass",
    "scoring_pick",
    "constrained_pick",
)
"""The fixed columns of an ``eval/<suite>.parquet`` (then ``candidate_score_<mask>`` and ``p_gen_<mask>``)."""


def pick_device(cfg):
    """The run's device (``cfg.device``, "auto": cuda when present) and whether it computes in bf16."""
    import torch

    device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    bf16 = cfg.dtype == "bf16" and device == "cuda"
    return device, bf16


def autocast_for(device: str, bf16: bool):
    import torch

    return torch.autocast(device_type="cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


def load_base(weights: str, device: str, bf16: bool):
    """The base model and tokenizer from a GGUF file (de-quantised by transformers, as on cpu) or
    from a ``.tar`` of a transformers model folder (extracted beside it)."""
    import torch

    from ..reasoners.causal_lm import CausalLMReasoner

    w = Path(weights)
    if w.suffix == ".tar":
        folder = w.with_suffix("")
        if not folder.exists():
            with tarfile.open(w) as tar:
                tar.extractall(folder)
        lm = CausalLMReasoner(str(folder), device=device)
    else:
        lm = CausalLMReasoner(str(w.parent), gguf_file=w.name, device=device)
    if bf16:
        lm.model.to(torch.bfloat16)
    return lm


def load_gpu_selector(lm, init_adapter: str, keep: int, trainable: bool = True):
    """The LM selector over ``lm``'s model: the adapter of ``init_adapter`` (a run folder) or a
    fresh one; the same prompt and prefill as :func:`fgpo_core.selectors.lm.load_selector`."""
    import copy

    from ..selectors.lm import PREFILL, LMSelector, add_lora

    model = copy.deepcopy(lm.model)
    if init_adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(Path(init_adapter) / "adapter"), is_trainable=trainable)
    else:
        model = add_lora(model)
    return LMSelector(model, lm.tokenizer, n_tools=4, keep=keep or None, prefill=PREFILL)


def forward_cached(model, input_ids, attention_mask, position_ids, cache=None, last_only: bool = False):
    """float32 logits ``[B, T, V]`` (the last position only with ``last_only``) and the key-value
    cache. For a Llama-like model (``.model`` and ``.lm_head`` under the peft wrapper) the head runs
    in float32 outside autocast: bf16 logits of size 20 are only good to 0.1, too coarse for the
    candidates' log-probabilities and for reading greedy generation off the pass."""
    import inspect

    import torch
    import torch.nn.functional as F

    from ..hf import cache_keyword, cache_of

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner, head = getattr(base, "model", None), getattr(base, "lm_head", None)
    if inner is None or head is None:  # any other causal LM: its own head, in the ambient precision
        kw = {cache_keyword(model): cache} if cache is not None else {}
        out = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=True,
            **({"logits_to_keep": 1} if last_only else {}),
            **kw,
        )
        return (out.logits[:, -1:] if last_only else out.logits).float(), cache_of(out)
    kw = {}
    if cache is not None:
        kw["cache" if "cache" in inspect.signature(inner.forward).parameters else "past_key_values"] = cache
    out = inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=True, **kw)
    hidden = out.last_hidden_state[:, -1:] if last_only else out.last_hidden_state
    with torch.autocast(device_type=hidden.device.type, enabled=False):
        logits = F.linear(
            hidden.float(), head.weight.float(), head.bias.float() if getattr(head, "bias", None) is not None else None
        )
    return logits, cache_of(out)


def batch_logprobs(selector, questions, top2: bool = False):
    """The candidates' token log-probabilities ``[B, 2**n, C]`` of several questions in two
    forward passes: the prompts left-padded (explicit positions) with a key-value cache, which is
    repeated for every candidate string. The same numbers as
    :meth:`~fgpo_core.selectors.lm.LMSelector._token_logprobs` question by question. With ``top2``
    also the two most likely next tokens at every position (``[B, 2**n, C, 2]`` values and ids)."""
    import torch

    model = selector.model
    dev = next(model.parameters()).device
    A, C = selector.cand_ids.shape
    prompts = [selector.prompt_ids(q) for q in questions]
    B, P = len(prompts), max(map(len, prompts))
    ids = torch.full((B, P), selector.end_id, dtype=torch.long)
    mask = torch.zeros((B, P), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, P - len(p) :] = torch.tensor(p)
        mask[i, P - len(p) :] = 1
    ids, mask = ids.to(dev), mask.to(dev)
    lengths = mask.sum(1)
    first, cache = forward_cached(
        model, input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0), last_only=True
    )
    cache.batch_repeat_interleave(A)
    cand = selector.cand_ids.to(dev).repeat(B, 1)  # [B*A, C]: question-major, as the cache
    amask = torch.cat([mask.repeat_interleave(A, 0), torch.ones(B * A, C - 1, dtype=mask.dtype, device=dev)], 1)
    pos = lengths.repeat_interleave(A)[:, None] + torch.arange(C - 1, device=dev)
    rest, _ = forward_cached(model, input_ids=cand[:, :-1], attention_mask=amask, position_ids=pos, cache=cache)
    logits = torch.cat([first.repeat_interleave(A, 0), rest], 1)  # [B*A, C, V]
    lse = torch.logsumexp(logits, -1)
    picked = (logits.gather(-1, cand[..., None])[..., 0] - lse).view(B, A, C)
    if not top2:
        return picked
    top = logits.detach().topk(2, -1)
    return picked, (top.values - lse.detach()[..., None]).view(B, A, C, 2), top.indices.view(B, A, C, 2)


def batch_scores(selector, questions):
    """With gradients: the Eq. 4 scores ``[B, 2**n]`` and the log of p_gen's mass on the policy
    strings ``[B]`` (:meth:`~fgpo_core.selectors.lm.LMSelector.scores_and_log_mass`, batched)."""
    import torch

    lp = batch_logprobs(selector, questions)
    m = selector.cand_mask.to(lp.device).float()
    total = (lp * m).sum(-1)
    return total / m.sum(1), torch.logsumexp(total, -1)


def evaluate_batch(selector, questions, batch: int = 50) -> list[dict]:
    """:meth:`~fgpo_core.selectors.lm.LMSelector.evaluate_question` of every question, scored
    ``batch`` questions per pass (greedy generation read off the pass where it can be, generated
    for real where not, as there)."""
    import torch

    rows = []
    m = selector.cand_mask.float()
    for s in range(0, len(questions), batch):
        qs = questions[s : s + batch]
        with torch.no_grad():
            lp, top_v, top_i = batch_logprobs(selector, qs, top2=True)
        lp, top_v, top_i = lp.float().cpu(), top_v.float().cpu(), top_i.cpu()
        for b, q in enumerate(qs):
            total = (lp[b] * m).sum(1)
            greedy = selector.greedy_from_pass(top_v[b], top_i[b])
            with torch.no_grad():
                text, pick = greedy if greedy is not None else selector.generate(q)
            rows.append(
                {
                    "scores": total / m.sum(1),
                    "p_gen": total.double().exp(),
                    "constrained_pick": selector.constrained_pick(lp[b]),
                    "completion": text,
                    "generation_pick": int(pick),
                    "from_pass": greedy is not None,
                }
            )
    return rows


def dev_row(evs: list[dict], rewards, correct, n_tools: int = 4) -> dict:
    """FGPO's dev fields (:func:`fgpo_core.evaluation.picks.evaluate_dev`) of evaluated rows."""
    import torch

    from ..evaluation.picks import scoring_summary, summarise_picks

    row = scoring_summary(torch.stack([e["scores"] for e in evs]), rewards, correct, n_tools)
    gen = summarise_picks(np.array([e["generation_pick"] for e in evs], dtype=int), correct, n_tools)
    return {
        **row,
        "gen_accuracy": gen["accuracy"],
        "gen_format_failures": gen["format_failures"],
        "gen_tools": gen["tools"],
    }


def eval_frame(questions, evs: list[dict]):
    """An ``eval/<suite>.parquet`` frame, built as the cpu runs build theirs
    (:func:`fgpo_core.evaluation.picks.evaluation_frame`)."""
    from ..evaluation.picks import evaluation_frame

    return evaluation_frame(questions, evs)
