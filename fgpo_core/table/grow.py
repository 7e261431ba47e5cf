"""Grow a finished reward table by questions appended to its suite.

A training pool that grows by appending (the benchmark's ``later`` families) keeps its
first questions byte-identical, so the rows of a finished table of those questions are
still right: only the appended questions need the reasoner. :func:`grow_table` checks
that the finished table was made of exactly the first questions (same reasoner, tools,
prompt template and lambda), builds the appended questions' table in a work folder
(sharded chunks, resumable like any build), shifts their question indices past the
finished ones, and writes the concatenation with the manifest a whole build of every
question would write: the result equals a whole build (``tests/test_tablebuild.py``).

A table that extends a smaller one by a tool (``--five --extend``) grows the same way:
``extend_from`` names the grown smaller table, whose appended rows are cut out for the
appended questions' build.

    python -m fgpo_core.table.grow --bench data/benchmarks/cpu --suite train \\
        --base data/tables/cpu/reader/train --out data/tables/cpu/reader/train --work /tmp/grow
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..core.rewards import LAMBDA
from ..io import atomic_path, read_manifest, verify_files, write_json
from .build import build_table, commit_table, merge_table, questions_hash, table_manifest
from .files import MANIFEST, TABLE, ManifestMismatch

__all__ = ["grow_table", "grow_blocks", "whole_manifest", "main"]

_SAME = ("reasoner", "reasoner_fingerprint", "prompt_template", "lambda", "n_tools", "tools")


def _check_base(base: dict, first, library, reasoner, lam: float, seed: int, where: Path) -> None:
    mine = table_manifest(first, library, reasoner, lam, seed)
    diff = [k for k in ("questions_sha256",) + _SAME if json.dumps(base.get(k)) != json.dumps(mine[k])]
    if diff:
        raise ManifestMismatch(
            f"{where} is not a table of this suite's first {len(first)} questions under this "
            f"library and reasoner: it differs in {', '.join(diff)}"
        )


def _slice_extend(extend_from: Path, n0: int, new, work: Path) -> Path:
    """The appended questions' rows of the grown smaller table, as a table folder of their own."""
    manifest = json.loads((extend_from / MANIFEST).read_text())
    if manifest.get("n_questions") != n0 + len(new):
        raise ValueError(
            f"{extend_from} holds {manifest.get('n_questions')} questions; grow it to {n0 + len(new)} first"
        )
    df = pd.read_parquet(extend_from / TABLE)
    part = df[df.q_index >= n0].copy()
    part["q_index"] -= n0
    if part.question_id.drop_duplicates().tolist() != [q.id for q in new]:
        raise ValueError(f"{extend_from}'s appended rows are not this suite's appended questions")
    out = work / "extend"
    commit_table(
        out, part.reset_index(drop=True), {**manifest, "n_questions": len(new), "questions_sha256": questions_hash(new)}
    )
    return out


def whole_manifest(
    questions,
    library,
    reasoner,
    lam: float = LAMBDA,
    seed: int = 0,
    extend_from: dict | None = None,
    chunk_size: int = 16,
) -> dict:
    """The manifest :func:`~fgpo_core.table.build.build_table` writes for a whole build of
    ``questions`` (with the library's provenance where the builder records it)."""
    manifest = table_manifest(questions, library, reasoner, lam, seed, extend_from, chunk_size)
    try:
        from ..genomics.tools.provenance import library_provenance
    except ImportError:  # a builder that does not record it
        return manifest
    return manifest | library_provenance(library)


def grow_table(
    questions: Sequence,
    library,
    reasoner,
    base_dir,
    out_dir,
    work_dir,
    chunk_size: int = 16,
    lam: float = LAMBDA,
    seed: int = 0,
    extend_from=None,
    progress: bool = True,
) -> Path:
    """The table of all ``questions``: the finished table in ``base_dir`` (of the first ones)
    and a new build of the rest (in ``work_dir``, resumable), written to ``out_dir`` (which may
    be ``base_dir``) with a whole build's manifest. Returns ``out_dir``."""
    base_dir, out_dir, work = Path(base_dir), Path(out_dir), Path(work_dir)
    base = read_manifest(base_dir / MANIFEST, "table manifest")
    verify_files(base_dir, base, "table", redo="merge or build it again")
    n0 = int(base["n_questions"])
    if not 0 < n0 < len(questions):
        raise ValueError(f"{base_dir} holds {n0} questions; there are {len(questions)}: nothing to grow")
    first, new = list(questions[:n0]), list(questions[n0:])
    _check_base(base, first, library, reasoner, lam, seed, base_dir)
    whole_extend = None
    part_extend = None
    if extend_from is not None:
        extend_from = Path(extend_from)
        whole_extend = json.loads((extend_from / MANIFEST).read_text())
        if whole_extend.get("questions_sha256") != questions_hash(questions):
            raise ManifestMismatch(f"{extend_from} is not a table of these {len(questions)} questions")
        part_extend = _slice_extend(extend_from, n0, new, work)
    part = work / "appended"
    build_table(
        new,
        library,
        reasoner,
        part,
        chunk_size=chunk_size,
        lam=lam,
        seed=seed,
        progress=progress,
        extend_from=part_extend,
    )
    merge_table(part)
    old = pd.read_parquet(base_dir / TABLE)
    add = pd.read_parquet(part / TABLE)
    add["q_index"] += n0
    if list(old.columns) != list(add.columns):
        raise ValueError(
            f"{base_dir}'s columns differ from the new build's: {list(old.columns)} vs {list(add.columns)}"
        )
    df = pd.concat([old, add.astype(old.dtypes.to_dict())], ignore_index=True)
    df = df.sort_values(["q_index", "mask"]).reset_index(drop=True)
    commit_table(
        out_dir, df, whole_manifest(questions, library, reasoner, lam, seed, whole_extend, chunk_size), shards=1
    )  # as a whole build merged from one shard
    return out_dir


def grow_blocks(
    questions: Sequence, library, reader, base_dir, out_dir, work_dir, chunk_size: int = 32, progress: bool = True
) -> Path:
    """Grow a block-score folder (:func:`~fgpo_core.table.fusion.score_blocks`) of the first
    questions to all ``questions``: only the appended ones are scored (in ``work_dir``,
    resumable); the result, with a whole run's manifest, equals a whole run. Views of the
    folder (:func:`~fgpo_core.table.fusion.write_view`) read the grown scores unchanged."""
    from .fusion import BLOCKS, BLOCKS_FORMAT, score_blocks

    base_dir, out_dir, work = Path(base_dir), Path(out_dir), Path(work_dir)
    base = json.loads((base_dir / MANIFEST).read_text())
    n0 = int(base["n_questions"])
    if base.get("format") != BLOCKS_FORMAT or not 0 < n0 < len(questions):
        raise ValueError(f"{base_dir} is not a block-score folder of fewer than {len(questions)} questions")
    _check_base(base, list(questions[:n0]), library, reader, base.get("lambda", LAMBDA), base.get("seed", 0), base_dir)
    part = work / "appended"
    score_blocks(list(questions[n0:]), library, reader, part, chunk_size=chunk_size, progress=progress)
    old = pd.read_parquet(base_dir / BLOCKS)
    add = pd.read_parquet(part / BLOCKS)
    add["q_index"] += n0
    if list(old.columns) != list(add.columns):
        raise ValueError(f"{base_dir}'s columns differ from the new scores'")
    df = pd.concat([old, add], ignore_index=True).sort_values("q_index")
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / BLOCKS) as tmp:
        df.to_parquet(tmp, index=False)
    write_json(
        out_dir / MANIFEST,
        {**table_manifest(questions, library, reader, chunk_size=chunk_size), "format": BLOCKS_FORMAT},
        sort_keys=True,
    )
    return out_dir


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fgpo_core.table.grow", description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True, help="a built benchmark folder")
    ap.add_argument("--suite", required=True, help="the suite whose questions were appended (train)")
    ap.add_argument("--base", help="the finished table of the suite's first questions")
    ap.add_argument("--out", help="where the grown table goes (may be --base)")
    ap.add_argument("--work", help="a work folder for the appended questions' build (resumable)")
    ap.add_argument("--reasoner", default="reader")
    ap.add_argument("--five", action="store_true", help="the five-tool library")
    ap.add_argument("--extend", help="the grown table of the same questions with one tool fewer")
    ap.add_argument("--chunk-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument(
        "--blocks",
        metavar="TOOLS",
        help="instead of a table: grow a block-score folder of these comma-separated tools (`fgpo table blocks`)",
    )
    ap.add_argument("--features", metavar="DIR", help="instead of a table: grow this feature cache's suite")
    args = ap.parse_args(argv)
    from ..genomics.benchmarks import load_benchmark, tool_library_for
    from ..reasoners import get_reasoner

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    _, suites = load_benchmark(args.bench)
    if args.features:
        from ..selectors.features import grow_features

        print(f"grown: {grow_features(suites[args.suite], args.features, args.suite)}")
        return 0
    if not (args.base and args.out and args.work):
        ap.error("a table needs --base, --out and --work")
    if args.blocks:
        from ..genomics.benchmarks.suites import load_references
        from ..genomics.tools import library_from_names, references_from_rows

        refs, db = references_from_rows(load_references(Path(args.bench) / "references.jsonl"))
        library = library_from_names(args.blocks.split(","), references=refs, database=db)
        out = grow_blocks(
            suites[args.suite],
            library,
            get_reasoner(args.reasoner),
            args.base,
            args.out,
            args.work,
            chunk_size=args.chunk_size if args.chunk_size != 16 else 32,
        )
        print(f"grown: {out} ({len(suites[args.suite])} questions)")
        return 0
    out = grow_table(
        suites[args.suite],
        tool_library_for(args.bench, five=args.five),
        get_reasoner(args.reasoner),
        args.base,
        args.out,
        args.work,
        chunk_size=args.chunk_size,
        extend_from=args.extend,
    )
    print(f"grown: {out / TABLE} ({len(suites[args.suite])} questions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
