"""Stage 1 of FGPO: the exhaustive reward table, built once.

For every question the tools run once; the ``2**n`` evidence texts are rendered
by the library and answered by the frozen reasoner; each (question, subset) row
stores the answer, its correctness, the letter log-probabilities, the prompt's
token count, the Eq. 1 reward and the differential reward.

The build is sharded (``shard=(i, N)`` takes the i-th of N contiguous question
ranges; shards merge) and resumable: rows are written in chunks, each chunk
atomically with a checksum beside it, and a restarted build skips the chunks that
pass their checksum (a truncated or altered chunk is built again, and the merge
refuses one), so a build killed at any moment loses at most its current chunk and
ends identical to an uninterrupted one. One live builder may write a shard at a
time (a lock file per shard). A manifest (questions' hash, tools and versions,
each tool's code digest, the labelled references' sha256, reasoner id and weights
fingerprint, prompt-template hash, lambda, seed, chunk size, package versions) is
written first; a build or a reader whose manifest differs is refused.

A table can also *extend* a finished table of the same questions and reasoner by
one more tool (``extend_from``): the subsets without the new tool render exactly
the prompts the smaller library rendered, so their rows are copied and only the
``2**(n-1)`` subsets that hold the new tool are answered, half the reasoner calls.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core.rewards import LAMBDA, differential_reward, eq1_reward
from ..core.subsets import ActionSpace
from ..env import package_versions
from ..genomics.benchmarks.schema import LETTERS, Question
from ..genomics.tools.provenance import library_provenance
from ..io import (
    FILES_KEY,
    atomic_file,
    file_digest,
    manifest_field,
    pid_lock,
    read_manifest,
    with_digests,
    write_json,
    write_text,
)
from ..reasoners.prompt import template_hash
from .files import MANIFEST, TABLE, ManifestMismatch, check_table_manifest

__all__ = [
    "table_manifest",
    "build_table",
    "merge_table",
    "cost_accounting",
    "BuildLocked",
    "chunk_ok",
    "check_manifest",
    "file_digest",
    "shard_lock",
    "commit_table",
    "COMMIT_KEYS",
    "COSTS",
    "record_cost",
    "build_cost",
]

COMMIT_KEYS = (FILES_KEY, "shards", "build")
"""Manifest fields the merge adds (the merged file's sha256, the shard layout it was merged from,
what the build cost): not inputs, so a build resumed after a merge ignores them."""

COSTS = "build-costs.jsonl"
"""Beside the chunks, one JSON line per build run: the reasoner calls it made and its seconds."""


def record_cost(out: Path, calls: int, seconds: float, **extra) -> None:
    """Append one build run's cost to ``out/COSTS`` (a run that made no call records nothing)."""
    if calls > 0:
        path = Path(out) / COSTS
        line = json.dumps({"calls": int(calls), "seconds": round(float(seconds), 3), **extra}, sort_keys=True)
        with open(path, "a+b") as fh:  # a line torn by a killed run is closed first, not joined to this one
            torn = fh.tell() > 0 and (fh.seek(-1, 2) or fh.read(1)) != b"\n"
            fh.write((b"\n" if torn else b"") + line.encode() + b"\n")


def build_cost(out: Path) -> dict | None:
    """What building ``out`` cost over all its runs (``None`` when none was recorded): reasoner
    calls, seconds (summed over runs, so shards run side by side each count) and calls per second;
    a torn line (a run killed mid-write) is skipped."""
    path = Path(out) / COSTS
    runs = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            d = json.loads(line)
            runs.append((int(d["calls"]), float(d["seconds"])))
        except (ValueError, KeyError, TypeError):
            continue
    if not runs:
        return None
    calls, seconds = sum(c for c, _ in runs), sum(t for _, t in runs)
    return {
        "reasoner_calls": calls,
        "seconds": round(seconds, 3),
        "calls_per_second": round(calls / max(seconds, 1e-9), 2),
        "runs": len(runs),
    }


class BuildLocked(FileExistsError):
    """Another live builder is writing the same shard of a table folder."""


def chunk_ok(path: Path) -> bool:
    """Whether a chunk file is whole: it exists and matches the checksum written beside it
    (``<chunk>.sha256``, written after the chunk). A truncated, altered or unverified chunk
    is not."""
    side = path.with_name(path.name + ".sha256")
    return path.exists() and side.exists() and side.read_text().strip() == file_digest(path)


@contextmanager
def shard_lock(out: Path, shard: tuple[int, int]):
    """One live builder per shard of a folder (:func:`fgpo_core.io.pid_lock`)."""
    lock = out / f".shard{shard[0]:03d}of{shard[1]:03d}.lock"
    with pid_lock(
        lock,
        lambda pid: (
            f"another builder (pid {pid}) is writing shard {shard[0]}/{shard[1]} of {out}; "
            f"wait for it, or delete {lock} if that process is gone"
        ),
        BuildLocked,
    ):
        yield


PROVENANCE_KEYS = ("tool_code", "references_sha256")
"""Fields a build's manifest records beyond :func:`table_manifest`: each tool's code digest and the
labelled references' sha256 (:func:`~fgpo_core.genomics.tools.provenance.library_provenance`). A
folder begun before they were recorded is not resumed."""


def questions_hash(questions: Sequence[Question]) -> str:
    h = hashlib.sha256()
    for q in questions:
        h.update(q.to_json().encode())
        h.update(b"\n")
    return h.hexdigest()


def table_manifest(
    questions,
    library,
    reasoner,
    lam: float = LAMBDA,
    seed: int = 0,
    extend_from: dict | None = None,
    chunk_size: int | None = None,
) -> dict:
    """What a table is made of; a resumed build must match it exactly. ``chunk_size`` (how the
    build splits questions into files) and the package versions are recorded by builds."""
    extra = (
        {}
        if extend_from is None
        else {"extended_from": {"tools": extend_from["tools"], "questions_sha256": extend_from["questions_sha256"]}}
    )
    if chunk_size is not None:
        extra |= {"chunk_size": chunk_size, "versions": package_versions()}
    return {
        **extra,
        "format": 1,
        "n_questions": len(questions),
        "questions_sha256": questions_hash(questions),
        "tools": [[n, v] for n, v in library.versions().items()],
        "n_tools": library.n_tools,
        "reasoner": reasoner.id,
        "reasoner_fingerprint": getattr(reasoner, "fingerprint", "unknown"),
        "prompt_template": template_hash(),
        "lambda": lam,
        "seed": seed,
    }


def check_manifest(path: Path, manifest: dict) -> None:
    if path.exists():
        old = read_manifest(path, "table manifest")
        diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k) and k not in COMMIT_KEYS)
        unrecorded = [k for k in PROVENANCE_KEYS if k in manifest and k not in old]
        if unrecorded and set(diff) <= set(unrecorded):
            raise ManifestMismatch(
                f"{path} was made before a table's manifest recorded {', '.join(unrecorded)}, "
                "so its rows cannot be checked against this build; use another folder or "
                "remove it to build again"
            )
        if diff:
            raise ManifestMismatch(
                f"{path} was made under different inputs ({', '.join(diff)}); use another folder or remove it"
            )
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
        rows.append(
            {
                "q_index": qi,
                "question_id": q.id,
                "family": q.family,
                "shape": q.shape,
                "mask": m,
                "n_tools_used": int(sizes[m]),
                "answer": q.answer,
                "prediction": o.letter,
                "correct": bool(correct[m]),
                **{f"logprob_{L}": float(o.logprobs[L]) for L in LETTERS},
                "prompt_tokens": int(o.prompt_tokens),
                "generated": o.generated,
                "is_letter": bool(o.is_letter),
                "reward_eq1": float(r1[m]),
                "reward_differential": float(rd[m]),
            }
        )
    return rows


def _base_rows(extend_from, questions, library, reasoner, lam: float, seed: int):
    """The finished smaller table a build extends: its manifest (checked against this build)
    and its rows per question index."""
    base_dir = Path(extend_from)
    if not (base_dir / TABLE).exists():
        raise FileNotFoundError(f"{base_dir} holds no merged table to extend")
    base = read_manifest(base_dir / MANIFEST, "table manifest")
    mine = table_manifest(questions, library, reasoner, lam, seed)
    diff = [
        k
        for k in ("questions_sha256", "reasoner", "reasoner_fingerprint", "prompt_template", "lambda")
        if base.get(k) != mine[k]
    ]
    if base.get("n_tools") != library.n_tools - 1 or [list(t) for t in base["tools"]] != mine["tools"][:-1]:
        diff.append("tools (the extended table must hold the same tools, one fewer)")
    if diff:
        raise ManifestMismatch(f"{base_dir} cannot be extended to this build: it differs in {', '.join(diff)}")
    df = pd.read_parquet(base_dir / TABLE)
    return base, {qi: g for qi, g in df.groupby("q_index")}


class _Reused:
    """A row of the extended table, read back as a reasoner's output."""

    def __init__(self, row):
        self.letter = row.prediction
        self.logprobs = {L: getattr(row, f"logprob_{L}") for L in LETTERS}
        self.prompt_tokens, self.generated, self.is_letter = row.prompt_tokens, row.generated, row.is_letter


def build_table(
    questions: Sequence[Question],
    library,
    reasoner,
    out_dir,
    shard: tuple[int, int] = (0, 1),
    chunk_size: int = 16,
    lam: float = LAMBDA,
    seed: int = 0,
    progress: bool = True,
    max_chunks: int | None = None,
    extend_from=None,
) -> Path:
    """Build (or resume) one shard of the reward table in ``out_dir``; returns the folder.

    ``extend_from``: a merged table of the same questions, reasoner and library less its last
    tool; its rows are reused for the subsets without that tool (see the module docstring).
    ``max_chunks`` stops after that many new chunks (to test interruption).
    """
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive whole number, got {chunk_size!r}")
    _shard_range(len(questions), shard)  # refuse a bad shard before touching the folder
    base, base_rows = (
        (None, None) if extend_from is None else _base_rows(extend_from, questions, library, reasoner, lam, seed)
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    check_manifest(
        out / MANIFEST,
        table_manifest(questions, library, reasoner, lam, seed, base, chunk_size) | library_provenance(library),
    )
    with shard_lock(out, shard):
        return _build_chunks(
            questions, library, reasoner, out, shard, chunk_size, lam, progress, max_chunks, base, base_rows
        )


def _build_chunks(
    questions,
    library,
    reasoner,
    out: Path,
    shard,
    chunk_size: int,
    lam: float,
    progress: bool,
    max_chunks,
    base,
    base_rows,
) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm import tqdm

    space = library.space
    half = space.n_actions // 2
    answered = range(half, space.n_actions) if base is not None else range(space.n_actions)
    idx = _shard_range(len(questions), shard)
    chunks = [idx[i : i + chunk_size] for i in range(0, len(idx), chunk_size)]
    done = 0
    bar = tqdm(
        total=len(idx) * len(answered), desc=f"table shard {shard[0]}/{shard[1]}", unit="call", disable=not progress
    )
    t0, calls = time.time(), 0
    try:  # the bar ends its line even when a tool or the reasoner fails, so an error prints on its own
        for j, rng in enumerate(chunks):
            path = out / f"shard{shard[0]:03d}of{shard[1]:03d}-chunk{j:05d}.parquet"
            if chunk_ok(path):
                bar.update(len(rng) * len(answered))
                continue
            if path.exists():
                bar.write(f"{path.name} is truncated, altered or unverified: building it again")
            if max_chunks is not None and done >= max_chunks:
                break
            rows = []
            for qi in rng:
                q = questions[qi]
                evs = library.run(q.tool_input(), key=q.id)
                outs = reasoner.answer([(q, library.render(evs, m)) for m in answered])
                if base is not None:
                    outs = [_Reused(r) for r in base_rows[qi].sort_values("mask").itertuples()] + list(outs)
                rows += _rows(q, qi, outs, space, lam)
                calls += len(answered)
                bar.update(len(answered))
                bar.set_postfix(calls_per_s=f"{calls / max(time.time() - t0, 1e-9):.1f}")
            with atomic_file(path) as fh:
                pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), fh)
            write_text(path.with_name(path.name + ".sha256"), file_digest(path) + "\n")
            done += 1
    finally:  # the calls are paid even when the run is interrupted
        bar.close()
        record_cost(out, calls, time.time() - t0)
    return out


_CHUNK = re.compile(r"shard(\d{3})of(\d{3})-chunk\d{5}\.parquet")


def _layout_rows(out: Path, parts: list[Path], n: int, A: int):
    """The rows of one shard layout's chunks and the question indices they lack."""
    bad = [p.name for p in parts if not chunk_ok(p)]
    if bad:
        raise ValueError(
            f"{len(bad)} chunk(s) of {out} fail their checksum (e.g. {bad[0]}): run the build again, which redoes them"
        )
    df = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    df = df.sort_values(["q_index", "mask"]).reset_index(drop=True)
    have = df.groupby("q_index")["mask"].nunique()
    missing = sorted(set(range(n)) - set(have[have == A].index))
    if not missing and len(df) != n * A:
        missing = sorted(set(df.q_index[df.duplicated(["q_index", "mask"], keep=False)]))[:3] or [-1]
    return df, missing


def merge_table(out_dir) -> Path:
    """Merge every shard's chunks into ``table.parquet`` once all questions are present. Chunks of
    several shard layouts (a build begun as ``--shard 0/1`` and finished as ``0/2`` and ``1/2``)
    are never mixed: the layout whose shards cover every question is merged, and recorded in the
    manifest (``shards``) with the merged file's sha256 (:func:`commit_table`)."""
    out = Path(out_dir)
    manifest = read_manifest(out / MANIFEST, "table manifest")
    where = f"{out / MANIFEST}"
    check_table_manifest(manifest, where)
    n = manifest_field(manifest, "n_questions", int, where)
    A = 1 << manifest_field(manifest, "n_tools", int, where, positive=True)
    layouts: dict[int, list[Path]] = {}
    for p in sorted(out.glob("shard*-chunk*.parquet")):
        m = _CHUNK.fullmatch(p.name)
        if m:
            layouts.setdefault(int(m.group(2)), []).append(p)
    if not layouts:
        raise FileNotFoundError(f"{out} holds no table chunks")
    tried = []
    for N in sorted(layouts, key=lambda N: -len(layouts[N])):
        df, missing = _layout_rows(out, layouts[N], n, A)
        if not missing:
            return commit_table(out, df, manifest, shards=N)
        tried.append(f"{len(missing)} of {n} questions missing from the {N}-shard chunks (e.g. index {missing[:3]})")
    raise ValueError(f"the table is incomplete: {'; '.join(tried)}; finish every shard of one layout first")


def commit_table(out: Path, df: pd.DataFrame, manifest: dict, shards: int | None = None) -> Path:
    """Write ``table.parquet`` and then (its commit point) the manifest naming its sha256 (and the
    shard layout it was merged from): a reader refuses a table torn or altered since."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    with atomic_file(out / TABLE) as fh:
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), fh)
    extra = {} if shards is None else {"shards": shards}
    if (cost := build_cost(out)) is not None:
        extra["build"] = cost
    write_json(
        out / MANIFEST,
        with_digests({k: v for k, v in manifest.items() if k not in COMMIT_KEYS} | extra, out, [TABLE]),
        sort_keys=True,
    )
    return out / TABLE


def cost_accounting(n_tools: int, n_questions: int, steps: int = 200, prompts: int = 64, G: int = 6) -> dict:
    """Reasoner calls of the exhaustive table (2**n x |D|) against an on-demand GRPO schedule
    (steps x prompts x G), and their ratio."""
    table = (1 << n_tools) * n_questions
    grpo = steps * prompts * G
    return {"table_calls": table, "grpo_calls": grpo, "grpo_over_table": grpo / table}
