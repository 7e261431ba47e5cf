"""``fgpo table``: build, score, view, merge and summarise reward tables (the command line's table part)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["add_table_parser", "table_command", "set_threads", "build_inputs"]


def set_threads(n: int) -> None:
    if n < 0:
        raise ValueError(f"--threads must be 0 (torch's default) or positive, got {n}")
    if n:
        import torch

        torch.set_num_threads(n)


def _table_inputs(args):
    """The questions and tool library of ``fgpo table build``: a benchmark suite (``--bench``,
    ``--suite``) or a JSONL file of one's own (``--questions``); the built-in four (or five) tools
    or the named ones (``--tools``, with ``--plugin`` files that register more)."""
    import sys

    from .genomics.benchmarks import load_benchmark, read_questions
    from .genomics.tools import (
        library_from_names,
        load_plugin,
        missing_references,
        references_from_file,
        references_from_rows,
    )

    for plugin in args.plugin or []:
        load_plugin(plugin)
    if bool(args.questions) == bool(args.bench):
        raise ValueError("give either --bench FOLDER --suite NAME or --questions FILE.jsonl")
    if args.bench:
        if not args.suite:
            raise ValueError("--bench needs --suite NAME")
        _, suites = load_benchmark(args.bench)
        if args.suite not in suites:
            raise ValueError(f"suite {args.suite!r} not in {args.bench}; suites: {', '.join(suites)}")
        questions = suites[args.suite]
    else:
        questions = read_questions(args.questions)
        if not questions:
            raise ValueError(f"{args.questions} holds no question")
    if args.limit < 0:
        raise ValueError(f"--limit must be 0 (all questions) or a positive number, got {args.limit}")
    questions = questions[: args.limit] if args.limit else questions
    if args.references:
        refs, db = references_from_file(args.references)
    elif args.bench:
        from .genomics.benchmarks.suites import load_references

        refs, db = references_from_rows(load_references(Path(args.bench) / "references.jsonl"))
    else:
        refs, db = {}, None
    names = (
        args.tools.split(",")
        if args.tools
        else ["composition", "motif_scan", "splice", "expert"] + (["homology"] if args.five else [])
    )
    library = library_from_names(names, references=refs, database=db)
    lacking = missing_references(library, [q.family for q in questions])
    if lacking:
        print(
            f"fgpo table {args.action}: warning: the genomic expert has no labelled reference set for "
            f"{', '.join(lacking)} and will answer 'No labelled reference set' there; give --references FILE "
            "(labelled rows, or your training questions in schema v1)",
            file=sys.stderr,
        )
    return questions, library


def build_inputs(args):
    """``(questions, library, reasoner)`` of ``fgpo table build``'s arguments, with torch's threads
    set: what each Ray worker of ``--executor ray`` loads (:mod:`fgpo_core.distributed`)."""
    from .reasoners import get_reasoner

    questions, library = _table_inputs(args)
    set_threads(args.threads)
    return questions, library, get_reasoner(args.reasoner)


def _build_on_ray(args, shard: tuple[int, int]) -> None:
    from functools import partial

    from .distributed import build_table_ray

    build_table_ray(
        partial(build_inputs, args),
        args.out,
        shard=shard,
        chunk_size=args.chunk_size,
        extend_from=args.extend,
        address=args.address,
        num_cpus=max(args.threads, 1),
        num_gpus=1 if args.reasoner.startswith("vllm:") else 0,
    )


def table_command(args) -> int:
    from .table import load_table
    from .table.build import cost_accounting, merge_table

    if args.action == "build":
        from .reasoners import get_reasoner
        from .table.build import build_table

        try:
            i, n = (int(x) for x in args.shard.split("/"))
        except ValueError:
            raise ValueError(f"--shard must look like i/N, got {args.shard!r}") from None
        if not 0 <= i < n:  # refused before the inputs are read
            raise ValueError(f"--shard i/N needs N >= 1 and 0 <= i < N, got {args.shard!r}")
        if args.chunk_size < 1:  # refused before the reasoner is loaded
            raise ValueError(f"--chunk-size must be a positive number of questions, got {args.chunk_size}")
        from .distributed import check_executor

        check_executor(args.executor, args.address)
        questions, library = _table_inputs(args)
        set_threads(args.threads)
        if args.executor == "ray":  # each Ray worker loads the inputs and the reasoner itself
            _build_on_ray(args, (i, n))
        else:
            build_table(
                questions,
                library,
                get_reasoner(args.reasoner),
                args.out,
                shard=(i, n),
                chunk_size=args.chunk_size,
                extend_from=args.extend,
            )
        if n == 1:
            print(f"merged: {merge_table(args.out)}")
        return 0
    if args.action == "blocks":
        from .reasoners import get_reasoner
        from .table.fusion import score_blocks

        questions, library = _table_inputs(args)
        set_threads(args.threads)
        print(
            f"block scores: {score_blocks(questions, library, get_reasoner(args.reasoner), args.out, args.chunk_size)}"
        )
        return 0
    if args.action == "view":
        from .table.fusion import write_view

        out = write_view(args.out, args.blocks, [t.strip() for t in args.tools.split(",") if t.strip()])
        print(f"view: {out} ({load_table(out).n_questions} questions)")
        return 0
    if args.action == "merge":
        print(f"merged: {merge_table(args.dir)}")
        return 0
    table = load_table(args.dir)
    manifest = table.manifest
    print(
        f"reasoner {manifest['reasoner']}, {table.n_questions} questions x {table.n_actions} subsets, "
        f"tools {', '.join(n for n, _ in manifest['tools'])}"
    )
    print(table.ceilings().to_string())
    print(table.fixed_subset_accuracy().round(2).to_string())
    cost = cost_accounting(table.n_tools, table.n_questions)
    print(f"cost: {cost['table_calls']:,} table calls vs {cost['grpo_calls']:,} for GRPO's 200 x 64 x 6 schedule")
    return 0


def add_table_parser(sub) -> None:
    """The ``table`` subcommand and its actions, on the top-level parser's subparsers ``sub``."""
    table = sub.add_parser("table", help="build, merge or summarise an exhaustive reward table")
    tsub = table.add_subparsers(dest="action", required=True)
    tb = tsub.add_parser("build", help="build (or resume) a reward table")
    tk = tsub.add_parser(
        "blocks",
        help="score every tool block of a late-fusion reader once (resumable): every "
        "subset's table row follows, for libraries too large to enumerate prompt by prompt",
    )
    for p in (tb, tk):
        p.add_argument("--bench", help="a built benchmark folder (with --suite)")
        p.add_argument("--suite", help="suite name inside it (train, dev, core, ...)")
        p.add_argument("--questions", metavar="FILE", help="instead of --bench: a JSONL file of questions in schema v1")
        p.add_argument(
            "--tools",
            help="comma-separated tool names for the slots, in order (default: composition,"
            "motif_scan,splice,expert; with --five also homology); see --plugin",
        )
        p.add_argument(
            "--plugin",
            action="append",
            metavar="FILE.py",
            help="a Python file that registers tools with fgpo_core.genomics.tools.register_tool (repeatable)",
        )
        p.add_argument(
            "--references",
            metavar="FILE",
            help="labelled sequences for the expert and homology tools: "
            "rows {id, family, seq, label}, or training questions in schema v1 (default: the benchmark's "
            "references.jsonl)",
        )
        p.add_argument("--out", required=True, help="output folder (chunks, manifest, merged file)")
        p.add_argument("--five", action="store_true", help="the five-tool library (32 subsets)")
        p.add_argument("--limit", type=int, default=0, help="only the first N questions (0: all)")
        p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    tb.add_argument(
        "--reasoner",
        default="reader",
        help="reader (the trained evidence reader, the default), minilm "
        "(zero-shot), smollm2, reader:<folder>, hf:<folder> or vllm:<folder>",
    )
    tb.add_argument("--shard", default="0/1", help="i/N: build the i-th of N question ranges")
    tb.add_argument(
        "--extend",
        metavar="FOLDER",
        help="a merged table of the same questions and reasoner whose "
        "library lacks only the last tool: its rows are reused, only the new subsets are answered",
    )
    tb.add_argument("--chunk-size", type=int, default=16, help="questions per atomically written chunk")
    add_executor_args(tb, "each chunk of questions (by every subset) a Ray call")
    tk.add_argument(
        "--reasoner",
        default="reader",
        help="a late-fusion reader: reader (the trained evidence reader) or reader:<folder>",
    )
    tk.add_argument("--chunk-size", type=int, default=32, help="questions per atomically written chunk")
    tv = tsub.add_parser("view", help="the table of some of a block-score folder's tools (a manifest only)")
    tv.add_argument("--blocks", required=True, metavar="DIR", help="a folder written by `fgpo table blocks`")
    tv.add_argument("--tools", required=True, help="comma-separated tool names, in slot order")
    tv.add_argument("--out", required=True, help="the view folder (load it like any table folder)")
    tm = tsub.add_parser("merge", help="merge finished shards into table.parquet")
    tm.add_argument("dir")
    ts = tsub.add_parser("summary", help="ceilings and cost accounting of a merged table")
    ts.add_argument("dir")
    table.set_defaults(func=table_command)


def add_executor_args(parser, unit: str) -> None:
    """``--executor`` and ``--address`` (:mod:`fgpo_core.distributed`) on a command's parser."""
    parser.add_argument(
        "--executor",
        default="local",
        metavar="{local,ray}",
        help=f"local (this process, the default) or ray: {unit}, writing the same files as local",
    )
    parser.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="with --executor ray: the Ray cluster (HOST:PORT, ray://HOST:PORT or auto; default: a Ray "
        "started on this machine)",
    )
