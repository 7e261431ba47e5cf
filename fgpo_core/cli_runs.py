"""``fgpo evaluate``, ``fgpo format``, ``fgpo snapshot`` and ``fgpo choose``: what the command line
does with trained LM runs (the command line's run part)."""

from __future__ import annotations

from pathlib import Path

from .cli_table import set_threads

__all__ = ["add_run_parsers"]


def _evaluate(args) -> int:
    from .experiments.run import evaluate_run, reuse_evaluation

    set_threads(args.threads)
    if args.limit < 0:
        raise ValueError(f"--limit must be 0 (all questions) or positive, got {args.limit}")
    if args.keep < 0:
        raise ValueError(f"--keep must be 0 (whole sequences) or positive, got {args.keep}")
    if bool(args.out) == bool(args.into_run):
        raise ValueError("give --out FOLDER, or --into-run to write into the run's own eval/")
    for source in args.reuse_from or ():
        copied = reuse_evaluation(args.run, source, args.out)
        if copied:
            print(f"{', '.join(copied)}: copied from {source} (the same selector)")
    written = evaluate_run(
        args.run,
        args.bench,
        args.suite or None,
        keep=args.keep,
        limit=args.limit,
        out_dir=args.out,
        scoring=not args.generation_only,
        described=args.described,
    )
    for suite, path in written.items():
        print(f"{suite}: {path}")
    if args.table:
        import pandas as pd

        from .evaluation.picks import summarise_picks
        from .table import has_table, load_table

        for suite, path in written.items():
            if not has_table(Path(args.table) / suite):
                print(f"{suite}: no table in {Path(args.table) / suite}")
                continue
            ev = pd.read_parquet(path)
            t = load_table(Path(args.table) / suite)
            have = t.contains(ev.question_id.tolist())
            sel = t.select(ev.question_id[have].tolist())
            s = summarise_picks(ev.generation_pick.to_numpy()[have], sel.correct, sel.n_tools, sel.tokens)
            print(
                f"{suite}: {int(have.sum())} questions in the table: accuracy {s['accuracy']:.1f}%, "
                f"{s['tools']:.2f} tools per question, format failures {s['format_failures']:.1f}%"
            )
    return 0


def _format(args) -> int:
    from .experiments.run import format_run

    set_threads(args.threads)
    if args.samples < 1 or args.limit < 0:
        raise ValueError("--samples must be positive and --limit 0 (all) or positive")
    if args.keep < 0:
        raise ValueError(f"--keep must be 0 (whole sequences) or positive, got {args.keep}")
    f = format_run(
        args.run,
        args.bench,
        args.suite,
        limit=args.limit,
        G=args.samples,
        seed=args.seed,
        keep=args.keep,
        out_path=args.out,
    )
    print(
        f"{args.suite}: {len(f)} questions, {args.samples} samples each at temperature 1: parse rate "
        f"{100 * f.parse_rate.mean():.1f}%, canonical strings {100 * f.canonical_rate.mean():.1f}% "
        f"(exact canonical mass {100 * f.canonical_mass.mean():.1f}%)"
    )
    return 0


def _snapshot(args) -> int:
    from .experiments.snapshots import snapshot_run

    out = snapshot_run(args.run, args.step, args.out, args.init, args.keep)
    print(f"snapshot of {args.run} at step {args.step} written to {out}")
    return 0


def _choose(args) -> int:
    from .experiments.chosen import choose_runs

    candidates = {}
    for item in args.method:
        name, sep, folders = item.partition("=")
        if not sep or not name or not folders:
            raise ValueError(f"--method takes METHOD=FOLDER[,FOLDER...], got {item!r}")
        if name in candidates:
            raise ValueError(f"--method {name} is given twice; give its folders once, comma-separated")
        candidates[name] = [f for f in folders.split(",") if f]
    chosen = choose_runs(args.runs_dir, candidates)
    for method, folder in chosen.items():
        print(f"{method}: {folder}")
    return 0


def add_run_parsers(sub) -> None:
    """The parsers of ``fgpo evaluate``, ``format``, ``snapshot`` and ``choose``."""
    ev = sub.add_parser("evaluate", help="free generation, controlled scoring and p_gen of a trained selector")
    ev.add_argument(
        "--run",
        required=True,
        help="a run folder, 'untrained' (the bare selector) or 'tools-with-descriptions' "
        "(the bare selector with named tools: the tools' real names and descriptions in its prompt)",
    )
    ev.add_argument("--bench", default="data/benchmarks/cpu")
    ev.add_argument("--out", help="output folder for <suite>.parquet (required unless --into-run)")
    ev.add_argument(
        "--into-run",
        action="store_true",
        help="write into the run folder's own eval/ (what the "
        "chapters read; a committed run's evaluations are replaced only when its adapter or questions "
        "changed)",
    )
    ev.add_argument(
        "--reuse-from",
        action="append",
        metavar="RUN",
        help="a finished run whose evaluations are copied first when it holds the same selector (adapter "
        "and prompt), as a run whose dev kept its starting adapter holds its start's (repeatable)",
    )
    ev.add_argument(
        "--generation-only",
        action="store_true",
        help="free generation only: skip controlled scoring, "
        "constrained decoding and p_gen (about two thirds of the time)",
    )
    ev.add_argument(
        "--described",
        action="store_true",
        help="named tools: tell the run's selector the tools' real "
        "names and descriptions instead of anonymous slots (the prompted baseline from a warm-up adapter)",
    )
    ev.add_argument("--suite", action="append", help="suite(s) to evaluate (default: core, microbe, mosaic)")
    ev.add_argument("--keep", type=int, default=40)
    ev.add_argument("--limit", type=int, default=0, help="only the first N questions of each suite")
    ev.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ev.add_argument(
        "--table",
        metavar="DIR",
        help="a folder of reward tables (one subfolder per suite): print "
        "each suite's accuracy, tools per question and format failures of the free-generation picks",
    )
    ev.set_defaults(func=_evaluate)
    fm = sub.add_parser("format", help="free generation's format by sampling, beside p_gen's canonical mass")
    fm.add_argument("--run", required=True, help="a run folder or 'untrained'")
    fm.add_argument("--bench", default="data/benchmarks/cpu")
    fm.add_argument("--suite", default="dev")
    fm.add_argument("--limit", type=int, default=0, help="only the first N questions (0: all)")
    fm.add_argument("--samples", type=int, default=8, help="completions per question at temperature 1")
    fm.add_argument("--seed", type=int, default=0)
    fm.add_argument("--keep", type=int, default=40)
    fm.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    fm.add_argument("--out", help="output parquet (default <run>/format-<suite>.parquet; required for 'untrained')")
    fm.set_defaults(func=_format)

    sn = sub.add_parser(
        "snapshot",
        help="an LM run's dev-evaluation snapshot as a run folder of its own "
        "(to evaluate it at equal visits or equal time)",
    )
    sn.add_argument("--run", required=True, help="the run folder (trained with --snapshots)")
    sn.add_argument("--step", type=int, required=True, help="the step of one of its dev evaluations")
    sn.add_argument("--init", required=True, help="the run folder it started from (--init-adapter)")
    sn.add_argument("--out", required=True, help="the new run folder")
    sn.add_argument("--keep", type=int, default=40, help="bases kept at each end of a long sequence (default 40)")
    sn.set_defaults(func=_snapshot)

    ch = sub.add_parser("choose", help="record which run of each method a chapter uses (<runs-dir>/chosen.json)")
    ch.add_argument("--runs-dir", default="runs/cpu")
    ch.add_argument(
        "--method",
        action="append",
        required=True,
        metavar="METHOD=FOLDER[,FOLDER...]",
        help="a method (fgpo, fgpo-format, grpo, sft, dpo, tools-with-descriptions: the untrained "
        "selector with named tools, untrained, warmup, fgpo-named: FGPO trained with named tools) "
        "and its run folder relative to --runs-dir; several finished FGPO runs: the one best on dev",
    )
    ch.set_defaults(func=_choose)
