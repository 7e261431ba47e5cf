"""Reward tables of large libraries from block scores: the late-fusion reader's exact answers
for every subset, from one scoring per tool block.

The evidence reader (:mod:`fgpo_core.reasoners.reader`) is a product of experts: a subset's
logit for letter L is ``h(a_L, "") + sum over its tools t of h(a_L, b_t,L)``, and a block's
score does not depend on which other blocks are present. So one pass over a question's
``n + 1`` (option, block) pairs per letter gives the reader's answer for all ``2**n``
subsets: :func:`score_blocks` stores those scores (and each block's input tokens) per
question, resumably in checksummed chunks like a table build, and :class:`BlockScores`
turns them into the :class:`~fgpo_core.table.reward_table.RewardTable` that
:func:`~fgpo_core.table.build.build_table` would have built with the same reader, for the
whole library or any sub-library of its slots. The tests check that equality row by row.

This is a property of this book's reader, not of the paper's: its frozen 7B reasoner reads
the whole prompt, so each (question, subset) costs one call. The chapter "Past enumeration"
therefore charges every method the (question, subset) pairs it asks for, as such a reasoner
would bill them, and uses the fused table only as the ground truth those methods are
measured against.

A *view* folder holds only a manifest naming a block-score folder and the slots it keeps
(:func:`write_view`); :func:`~fgpo_core.table.io.load_table` materialises it, so a study,
a chapter or ``fgpo study --table-dir`` reads an 8- or 12-tool table like any other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core.rewards import LAMBDA, differential_reward, eq1_reward
from ..core.subsets import ActionSpace
from ..genomics.benchmarks.schema import LETTERS, Question
from ..io import atomic_path, write_json, write_text
from .build import check_manifest, chunk_ok, file_digest, shard_lock, table_manifest
from .files import MANIFEST
from .reward_table import RewardTable

__all__ = [
    "BlockScores",
    "score_blocks",
    "merge_blocks",
    "load_blocks",
    "write_view",
    "BLOCKS",
    "BLOCKS_FORMAT",
    "VIEW_FORMAT",
]

BLOCKS = "blocks.parquet"
BLOCKS_FORMAT = "blocks-1"
VIEW_FORMAT = "fused-view-1"


@dataclass
class BlockScores:
    """One suite's block scores: ``base [N, 4]`` (the no-evidence pair of each letter),
    ``blocks [N, n, 4]`` (each tool's block), ``base_tokens [N]`` (the prompt without
    evidence) and ``block_tokens [N, n]`` (what a block adds to a prompt that already has
    evidence), with the questions' ids, families and answers."""

    question_ids: np.ndarray
    family: np.ndarray
    answers: np.ndarray
    base: np.ndarray
    blocks: np.ndarray
    base_tokens: np.ndarray
    block_tokens: np.ndarray
    header_tokens: int
    tie: np.ndarray
    tool_names: tuple
    manifest: dict = field(default_factory=dict)

    @property
    def n_tools(self) -> int:
        return self.blocks.shape[1]

    def restrict(self, slots: Sequence[int]) -> "BlockScores":
        """The block scores of a sub-library: only ``slots``, in that order."""
        slots = list(slots)
        if not slots or len(set(slots)) != len(slots) or not all(0 <= s < self.n_tools for s in slots):
            raise ValueError(f"slots must be distinct indices in 0..{self.n_tools - 1}, got {slots}")
        return BlockScores(
            self.question_ids,
            self.family,
            self.answers,
            self.base,
            self.blocks[:, slots],
            self.base_tokens,
            self.block_tokens[:, slots],
            self.header_tokens,
            self.tie,
            tuple(self.tool_names[s] for s in slots),
            dict(self.manifest),
        )

    def logprobs(self, masks: Sequence[int] | None = None) -> np.ndarray:
        """``[N, M, 4]`` letter log-probabilities of each subset in ``masks`` (default: all),
        summed in slot order as the reader sums them, with its tie-break jitter."""
        space = ActionSpace(self.n_tools)
        masks = np.arange(space.n_actions) if masks is None else np.asarray(masks, dtype=int)
        s = np.repeat(self.base[:, None, :], len(masks), axis=1)
        for t in range(self.n_tools):
            on = ((masks >> t) & 1).astype(bool)
            s[:, on] = s[:, on] + self.blocks[:, None, t]
        s = s + self.tie[:, None, :]
        return s - np.logaddexp.reduce(s, axis=-1, keepdims=True)

    def tokens(self, masks: Sequence[int] | None = None) -> np.ndarray:
        """``[N, M]`` input tokens of each subset's prompt (the reader's tokenizer splits on
        whitespace first, so the blank lines between blocks add none and blocks add up)."""
        space = ActionSpace(self.n_tools)
        masks = np.arange(space.n_actions) if masks is None else np.asarray(masks, dtype=int)
        bits = (masks[:, None] >> np.arange(self.n_tools)[None, :]) & 1
        return self.base_tokens[:, None] + (masks > 0)[None, :] * self.header_tokens + self.block_tokens @ bits.T

    def table(self, lam: float = LAMBDA) -> RewardTable:
        """The reward table of every subset (what ``build_table`` builds with the same reader)."""
        lp = self.logprobs()
        letters = np.array(LETTERS)
        # ties go to the earliest letter, as letter_from_logprobs breaks them
        pred = letters[np.argmax(lp, axis=-1)]
        correct = pred == self.answers[:, None]
        space = ActionSpace(self.n_tools)
        sizes = space.sizes[None, :]
        built = {
            "eq1": eq1_reward(correct, sizes, self.n_tools, lam),
            "differential": differential_reward(correct, np.repeat(correct[:, :1], space.n_actions, 1)),
        }
        return RewardTable(
            correct,
            self.n_tools,
            self.family,
            self.tool_names,
            lam,
            question_ids=self.question_ids,
            tokens=self.tokens(),
            predictions=pred,
            letter_logprobs=lp,
            built_rewards=built,
            manifest=dict(self.manifest),
        )


def _question_row(q: Question, qi: int, library, reader) -> dict:
    from ..reasoners.base import tie_break

    evs = library.run(q.tool_input(), key=q.id)
    full = library.render(evs, library.space.n_actions - 1)
    scores = reader.pair_scores(q, full)  # [4, 1 + n]
    n = library.n_tools
    if scores.shape != (4, 1 + n):
        raise ValueError(
            f"question {q.id}: the evidence split into {scores.shape[1] - 1} blocks for {n} tools "
            "(a tool's text holds a blank line before '[': the reader would mis-split it)"
        )
    base = reader.prompt_tokens(q, "")
    singles = [reader.prompt_tokens(q, library.render(evs, 1 << t)) for t in range(n)]
    # what any evidence adds once (the header line): t({0}) + t({1}) - t({0, 1}) - t({})
    header = singles[0] + singles[1] - reader.prompt_tokens(q, library.render(evs, 3)) - base if n > 1 else 0
    row = {
        "q_index": qi,
        "question_id": q.id,
        "family": q.family,
        "shape": q.shape,
        "answer": q.answer,
        "base_tokens": base,
        "header_tokens": header,
    }
    for j, L in enumerate(LETTERS):
        row[f"base_{L}"] = float(scores[j, 0])
        row[f"tie_{L}"] = float(tie_break(q.id, 1e-7)[j])
        for t in range(n):
            row[f"block{t}_{L}"] = float(scores[j, 1 + t])
    for t in range(n):
        row[f"tokens{t}"] = singles[t] - base - header
    return row


def score_blocks(
    questions: Sequence[Question],
    library,
    reader,
    out_dir,
    chunk_size: int = 32,
    progress: bool = True,
    max_chunks: int | None = None,
) -> Path:
    """Score every question's tool blocks with a late-fusion ``reader`` (one with
    ``pair_scores`` and ``prompt_tokens``, e.g. :class:`~fgpo_core.reasoners.reader.EvidenceReader`)
    into ``out_dir``, in checksummed chunks that a restarted call skips, then merge them into
    ``blocks.parquet``. The manifest is a table manifest marked ``format: blocks-1``."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm.auto import tqdm

    if not hasattr(reader, "pair_scores"):
        raise TypeError(
            f"{type(reader).__name__} is not a late-fusion reader (no pair_scores): build its table "
            "with build_table, which asks it about every subset"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {**table_manifest(questions, library, reader, chunk_size=chunk_size), "format": BLOCKS_FORMAT}
    check_manifest(out / MANIFEST, manifest)
    chunks = [range(i, min(i + chunk_size, len(questions))) for i in range(0, len(questions), chunk_size)]
    done = 0
    with shard_lock(out, (0, 1)):
        for j, rng in enumerate(tqdm(chunks, desc="block scores", unit="chunk", disable=not progress)):
            path = out / f"chunk{j:05d}.parquet"
            if chunk_ok(path):
                continue
            if max_chunks is not None and done >= max_chunks:
                return out
            rows = [_question_row(questions[qi], qi, library, reader) for qi in rng]
            with atomic_path(path) as tmp:
                pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), tmp)
            write_text(path.with_name(path.name + ".sha256"), file_digest(path) + "\n")
            done += 1
    merge_blocks(out)
    return out


def merge_blocks(out_dir) -> Path:
    """Merge the chunks of a finished :func:`score_blocks` into ``blocks.parquet``."""
    out = Path(out_dir)
    manifest = json.loads((out / MANIFEST).read_text())
    parts = sorted(out.glob("chunk*.parquet"))
    bad = [p.name for p in parts if not chunk_ok(p)]
    if not parts or bad:
        raise ValueError(
            f"{out}: {'no chunks' if not parts else f'{len(bad)} chunk(s) fail their checksum'}; run score_blocks again"
        )
    df = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True).sort_values("q_index")
    if df["q_index"].tolist() != list(range(manifest["n_questions"])):
        raise ValueError(f"{out}: the block scores are incomplete; run score_blocks again")
    with atomic_path(out / BLOCKS) as tmp:
        df.to_parquet(tmp, index=False)
    return out / BLOCKS


def load_blocks(folder) -> BlockScores:
    """The merged block scores of a folder written by :func:`score_blocks`."""
    folder = Path(folder)
    if not (folder / BLOCKS).exists():
        raise FileNotFoundError(f"{folder} holds no {BLOCKS}: run `fgpo table blocks` (score_blocks) to make it")
    manifest = json.loads((folder / MANIFEST).read_text())
    if manifest.get("format") != BLOCKS_FORMAT:
        raise ValueError(f"{folder / MANIFEST} is not a block-score manifest (format {manifest.get('format')!r})")
    df = pd.read_parquet(folder / BLOCKS)
    n = manifest["n_tools"]
    grid = lambda cols: df[cols].to_numpy(dtype=float)  # noqa: E731
    return BlockScores(
        df["question_id"].to_numpy(),
        df["family"].to_numpy(),
        df["answer"].to_numpy(),
        grid([f"base_{L}" for L in LETTERS]),
        np.stack([grid([f"block{t}_{L}" for L in LETTERS]) for t in range(n)], 1),
        df["base_tokens"].to_numpy(dtype=int),
        df[[f"tokens{t}" for t in range(n)]].to_numpy(dtype=int),
        int(df["header_tokens"].iloc[0]),
        grid([f"tie_{L}" for L in LETTERS]),
        tuple(name for name, _ in manifest["tools"]),
        manifest,
    )


def write_view(out_dir, blocks_dir, tools: Sequence[str]) -> Path:
    """A view folder: the reward table of the tools ``tools`` (names, in slot order) read from
    the block scores in ``blocks_dir`` (stored relative to the view, so the pair moves together)."""
    import os

    out, src = Path(out_dir), Path(blocks_dir)
    names = [n for n, _ in json.loads((src / MANIFEST).read_text())["tools"]]
    unknown = [t for t in tools if t not in names]
    if unknown or len(set(tools)) != len(tools) or not tools:
        raise ValueError(f"tools must be distinct names among {', '.join(names)}; got {list(tools)}")
    out.mkdir(parents=True, exist_ok=True)
    write_json(
        out / MANIFEST,
        {"format": VIEW_FORMAT, "blocks": os.path.relpath(src.resolve(), out.resolve()), "tools": list(tools)},
        indent=1,
    )
    return out


def load_view(folder) -> RewardTable:
    """The reward table a view folder names (see :func:`write_view`)."""
    folder = Path(folder)
    view = json.loads((folder / MANIFEST).read_text())
    scores = load_blocks(folder / view["blocks"])
    names = list(scores.tool_names)
    sub = scores.restrict([names.index(t) for t in view["tools"]])
    m = sub.manifest
    tools = dict((n, v) for n, v in m["tools"])
    sub.manifest = {
        **m,
        "format": VIEW_FORMAT,
        "n_tools": len(view["tools"]),
        "tools": [[t, tools[t]] for t in view["tools"]],
        "view_of": view["blocks"],
    }
    return sub.table(m.get("lambda", LAMBDA))
