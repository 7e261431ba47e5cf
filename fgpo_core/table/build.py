"""Stage 1 of FGPO: the exhaustive reward table, built once.

For every question the tools run once; the ``2**n`` evidence texts are rendered
by the library and answered by the frozen reasoner; each (question, subset) row
stores the answer, its correctness, the letter log-probabilities, the prompt's
token count, the Eq. 1 reward and the differential reward.

The build is sharded (``shard=(i, N)`` takes the i-th of N contiguous question
ranges; shards merge) and resumable: rows are written in chunks, each chunk
atomically, and a restarted build skips the chunks already on disk, so a build
killed at any moment loses at most its current chunk and ends identical to an
uninterrupted one. A manifest (questions' hash, tools and versions, reasoner id
and weights fingerprint, prompt-template hash, lambda, seed) is written first;
a build or a reader whose manifest differs is refused.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..genomics.benchmarks.schema import LETTERS, Question
from ..reasoners.prompt import template_hash
from ..core.rewards import LAMBDA, differential_reward, eq1_reward
from ..core.subsets import ActionSpace
from ..io import atomic_path, write_json
from .io import MANIFEST, TABLE, ManifestMismatch

__all__ = ["table_manifest", "build_table", "merge_table", "cost_accounting"]

def questions_hash(questions: Sequence[Question]) -> str:
    h = hashlib.sha256()
    for q in questions:
        h.update(q.to_json().encode())
        h.update(b"\n")
    return h.hexdigest()


def table_manifest(questions, library, reasoner, lam: float = LAMBDA, seed: int = 0) -> dict:
    return {"format": 1, "n_questions": len(questions), "questions_sha256": questions_hash(questions),
            "tools": [[n, v] for n, v in library.versions().items()], "n_tools": library.n_tools,
            "reasoner": reasoner.id, "reasoner_fingerprint": getattr(reasoner, "fingerprint", "unknown"),
            "prompt_template": template_hash(), "lambda": lam, "seed": seed}


def _check_manifest(path: Path, manifest: dict) -> None:
    if path.exists():
        old = json.loads(path.read_text())
        diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
        if diff:
            raise ManifestMismatch(f"{path} was made under different inputs ({', '.join(diff)}); "
                                   "use another folder or remove it")
    else:
        write_json(path, manifest, sort_keys=True)


def _shard_range(n: int, shard: tuple[int, int]) -> range:
    i, N = shard
    if not (isinstance(i, int) and isinstance(N, int) and N >= 1 and 0 <= i < N):
        raise ValueError(f"shard must be (i, N) with 0 <= i < N, got {shard}")
    return range(i * n // N, (i + 1) * n // N)


def _rows(q: Question, qi: int, outs, space: ActionSpace, lam: float) -> list[dict]:
    correct = np.array([o.letter == q.answer for o in outs])
    sizes = space.sizes
    r1 = eq1_reward(correct, sizes, space.n_tools, lam)
    rd = differential_reward(correct, np.repeat(correct[0], len(correct)))
    rows = []
    for m, o in enumerate(outs):
        rows.append({"q_index": qi, "question_id": q.id, "family": q.family, "shape": q.shape, "mask": m,
                     "n_tools_used": int(sizes[m]), "answer": q.answer, "prediction": o.letter,
                     "correct": bool(correct[m]), **{f"logprob_{L}": float(o.logprobs[L]) for L in LETTERS},
                     "prompt_tokens": int(o.prompt_tokens), "generated": o.generated, "is_letter": bool(o.is_letter),
                     "reward_eq1": float(r1[m]), "reward_differential": float(rd[m])})
    return rows


def build_table(questions: Sequence[Question], library, reasoner, out_dir, shard: tuple[int, int] = (0, 1),
                chunk_size: int = 16, lam: float = LAMBDA, seed: int = 0, progress: bool = True,
                max_chunks: int | None = None) -> Path:
    """Build (or resume) one shard of the reward table in ``out_dir``; returns the folder.

    ``max_chunks`` stops after that many new chunks (to test interruption).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm import tqdm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _check_manifest(out / MANIFEST, table_manifest(questions, library, reasoner, lam, seed))
    space = library.space
    idx = _shard_range(len(questions), shard)
    chunks = [idx[i:i + chunk_size] for i in range(0, len(idx), chunk_size)]
    done = 0
    bar = tqdm(total=len(idx) * space.n_actions, desc=f"table shard {shard[0]}/{shard[1]}", unit="call",
               disable=not progress)
    t0 = time.time()
    calls = 0
    for j, rng in enumerate(chunks):
        path = out / f"shard{shard[0]:03d}of{shard[1]:03d}-chunk{j:05d}.parquet"
        if path.exists():
            bar.update(len(rng) * space.n_actions)
            continue
        if max_chunks is not None and done >= max_chunks:
            break
        rows = []
        for qi in rng:
            q = questions[qi]
            evs = library.run(q.tool_input(), key=q.id)
            outs = reasoner.answer([(q, library.render(evs, m)) for m in range(space.n_actions)])
            rows += _rows(q, qi, outs, space, lam)
            calls += space.n_actions
            bar.update(space.n_actions)
            bar.set_postfix(calls_per_s=f"{calls / max(time.time() - t0, 1e-9):.1f}")
        with atomic_path(path) as tmp:
            pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), tmp)
        done += 1
    bar.close()
    return out


def merge_table(out_dir) -> Path:
    """Merge every shard's chunks into ``table.parquet`` once all questions are present."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    manifest = json.loads((out / MANIFEST).read_text())
    parts = sorted(out.glob("shard*-chunk*.parquet"))
    if not parts:
        raise FileNotFoundError(f"{out} holds no table chunks")
    df = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    df = df.sort_values(["q_index", "mask"]).reset_index(drop=True)
    n, A = manifest["n_questions"], 1 << manifest["n_tools"]
    have = df.groupby("q_index")["mask"].nunique()
    missing = sorted(set(range(n)) - set(have[have == A].index))
    if missing or len(df) != n * A:
        raise ValueError(f"the table is incomplete: {len(missing)} of {n} questions missing (e.g. index "
                         f"{missing[:3]}); finish every shard first")
    with atomic_path(out / TABLE) as tmp:
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp)
    return out / TABLE


def cost_accounting(n_tools: int, n_questions: int, steps: int = 200, prompts: int = 64, G: int = 6) -> dict:
    """Reasoner calls of the exhaustive table (2**n x |D|) against an on-demand GRPO schedule
    (steps x prompts x G), and their ratio."""
    table = (1 << n_tools) * n_questions
    grpo = steps * prompts * G
    return {"table_calls": table, "grpo_calls": grpo, "grpo_over_table": grpo / table}
