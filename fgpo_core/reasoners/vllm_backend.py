"""vLLM backend for the GPU profile: greedy, letter log-probabilities, automatic prefix caching.

vLLM is imported only when this reasoner is built (``pip install -e ".[gpu]"``, in an
environment of its own: vLLM pins its own CUDA torch). Prefix caching lets the
``2**n`` prompts of one question share the question's key-value cache.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..genomics.benchmarks.schema import LETTERS, Question
from .base import ReasonerOutput, letter_from_logprobs
from .prompt import messages

__all__ = ["VLLMReasoner"]


class VLLMReasoner:
    def __init__(self, model: str, top_logprobs: int = 20, gpu_memory_utilization: float = 0.85, **kwargs):
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:  # pragma: no cover - needs a GPU machine
            raise ImportError("the vLLM reasoner needs vllm (pip install -e '.[gpu]' on a GPU machine)") from exc
        self.llm = LLM(model=model, enable_prefix_caching=True, gpu_memory_utilization=gpu_memory_utilization, **kwargs)
        self.params = SamplingParams(temperature=0.0, max_tokens=1, logprobs=top_logprobs)
        self.tokenizer = self.llm.get_tokenizer()
        self.id = f"vllm:{model}"
        self.fingerprint = model

    def answer(self, batch: Sequence[tuple[Question, str]]) -> list[ReasonerOutput]:  # pragma: no cover
        prompts = [
            self.tokenizer.apply_chat_template(
                messages(q.question, q.options_block(), ev), tokenize=False, add_generation_prompt=True
            )
            for q, ev in batch
        ]
        outs = []
        for res in self.llm.generate(prompts, self.params, use_tqdm=False):
            comp = res.outputs[0]
            top = comp.logprobs[0]
            lp = {L: -math.inf for L in LETTERS}
            for tok in top.values():
                text = (tok.decoded_token or "").strip()
                if text in LETTERS:
                    lp[text] = float(math.log(math.exp(lp[text]) + math.exp(tok.logprob)))
            generated = comp.text
            outs.append(
                ReasonerOutput(
                    letter_from_logprobs(lp), lp, len(res.prompt_token_ids), generated, generated.strip() in LETTERS
                )
            )
        return outs
