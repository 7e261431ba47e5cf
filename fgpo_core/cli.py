"""The ``fgpo`` command line: one entry point per long job."""

from __future__ import annotations

import argparse
import sys

from .cli_errors import USER_ERRORS, one_line
from .cli_errors import run_command as _run
from .cli_runs import add_run_parsers
from .cli_table import add_executor_args, add_table_parser
from .cli_tools import DEFAULT_BENCH
from .cli_tools import tools_command as _tools

__all__ = ["main", "USER_ERRORS"]


def _book(args) -> int:
    import yaml

    from .book.build import build_book

    try:
        return build_book(
            args.profile,
            args.chapter or None,
            execute=not args.no_execute,
            html=not args.no_html,
            cache=not args.no_cache,
        )
    except yaml.YAMLError as exc:  # a profile (or the book's own YAML) with a syntax error
        raise ValueError(f"--profile {args.profile}: {one_line(exc)}") from None


def _benchmark(args) -> int:
    from .genomics.benchmarks import QuestionError, build_all, read_questions

    if args.action == "build":
        suites = None if args.suite == "all" else [args.suite]
        manifest = build_all(args.out, args.profile, args.seed, suites, progress=True)
        for name, info in manifest["suites"].items():
            print(f"{name}: {info['n']} questions -> {args.out}/{info['file']}")
        return 0
    status = 0
    for path in args.files:
        try:
            qs = read_questions(path)
        except (QuestionError, OSError) as exc:
            print(f"{path}: INVALID: {exc}", file=sys.stderr)
            status = 1
            continue
        if not qs:
            print(f"{path}: INVALID: no questions (the file is empty)", file=sys.stderr)
            status = 1
            continue
        fams = sorted({q.family for q in qs})
        print(f"{path}: {len(qs)} valid questions (schema v1); families: {', '.join(fams)}")
    return status


def _reader(args) -> int:
    import json

    from .configs import dataclass_from_args
    from .reasoners.train_reader import ReaderConfig, train_reader

    manifest = train_reader(dataclass_from_args(ReaderConfig, args))
    print(
        json.dumps(
            {k: manifest[k] for k in ("history", "best_val_decisive", "adapter_hash", "train_seconds")}, indent=1
        )
    )
    return 0


def _lm(args) -> int:
    from .configs import dataclass_from_args
    from .experiments.lm_grid import LMGridConfig, run_lm_grid

    for name, folder in run_lm_grid(dataclass_from_args(LMGridConfig, args), isolate=True).items():
        print(f"{name}: {folder}")
    return 0


def _lm_companion(args) -> int:
    from .configs import dataclass_from_args
    from .experiments.lm_companion import LMCompanionConfig, run_lm_companion

    print(run_lm_companion(dataclass_from_args(LMCompanionConfig, args), isolate=True))
    return 0


def _train_main(argv: list[str]) -> int:
    """``fgpo train --objective X [flags]``: the flags are the shared RunSetup's and X's config's
    (:data:`fgpo_core.algorithms.objectives.OBJECTIVES`)."""
    import json

    from .algorithms.objectives import OBJECTIVES
    from .configs import add_dataclass_args, dataclass_from_args
    from .experiments.run import RunSetup, train_run

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--objective", choices=list(OBJECTIVES), default="fgpo")
    known, _ = pre.parse_known_args(argv)
    cfg_cls = OBJECTIVES[known.objective].config_class()
    ap = argparse.ArgumentParser(
        prog="fgpo train", description="train an LM selector against a reward table", parents=[pre]
    )
    add_dataclass_args(ap.add_argument_group("run"), RunSetup)
    add_dataclass_args(ap.add_argument_group(known.objective), cfg_cls)
    args = ap.parse_args(argv)
    manifest = train_run(known.objective, dataclass_from_args(RunSetup, args), dataclass_from_args(cfg_cls, args))
    print(json.dumps({k: manifest[k] for k in ("objective", "n_train", "train_seconds", "adapter_hash")}, indent=1))
    return 0


def _features(args) -> int:
    from .genomics.benchmarks import load_benchmark
    from .io import plain_name
    from .selectors.features import build_features, check_prompt_settings

    check_prompt_settings(args.n_tools, args.keep)

    if args.questions:  # NAME=FILE.jsonl: one's own questions, no benchmark folder
        from .genomics.benchmarks import read_questions

        suites = {}
        for item in args.questions:
            name, sep, path = item.partition("=")
            if not sep or not name or not path:
                raise ValueError(f"--questions takes NAME=FILE.jsonl, got {item!r}")
            if name in suites:
                raise ValueError(f"--questions names the suite {name!r} twice")
            suites[plain_name(name, "--questions suite name")] = read_questions(path)
    else:
        _, suites = load_benchmark(args.bench)
    names = args.suite or list(suites)
    unknown = [n for n in names if n not in suites]
    if unknown:
        where = "the --questions files" if args.questions else args.bench
        raise ValueError(f"{where} hold no suite {unknown[0]!r}; suites: {', '.join(sorted(suites))}")
    if len(set(names)) < len(names):
        raise ValueError(f"--suite names {next(n for n in names if names.count(n) > 1)!r} twice")
    out = build_features({n: suites[n] for n in names}, args.out, args.encoder, n_tools=args.n_tools, keep=args.keep)
    print(f"features of {', '.join(names)} in {out}")
    return 0


def _study(args) -> int:
    from .configs import dataclass_from_args
    from .distributed import check_executor
    from .experiments.study import StudyConfig, run_study

    check_executor(args.executor, args.address)
    cfg = dataclass_from_args(StudyConfig, args)
    cfg = StudyConfig(**{**cfg.__dict__, "beta": args.beta})
    if args.executor == "ray":
        from .distributed import run_study_ray

        out = run_study_ray(cfg, args.address)
    else:
        out = run_study(cfg)
    if out is not None:
        print(f"study written to {out}")
    return 0


def _add_study_parser(sub) -> None:
    """``fgpo study``: StudyConfig's fields (its estimator settings' among them) as flags; the
    method-name grammar (every estimator, regularizer and modifier, from the registries) as the
    help's epilog."""
    from .configs import add_dataclass_args
    from .core.method_names import grammar_help
    from .experiments.study import StudyConfig

    st = sub.add_parser(
        "study",
        help="train and evaluate methods x seeds of the policy-head selector (resumable)",
        epilog=grammar_help().replace("%", "%%"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dataclass_args(st, StudyConfig)
    st.add_argument(
        "--beta",
        type=float,
        default=None,
        help="the entropy bonus's weight for every method, as -beta in a name (default: each estimator's own)",
    )
    add_executor_args(st, "each (method, rate, seed) run a Ray task")
    st.set_defaults(func=_study)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:
        return _run("train", _train_main, argv[1:])
    parser = argparse.ArgumentParser(prog="fgpo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    book = sub.add_parser("book", help="execute the chapters with papermill and render the book")
    book.add_argument(
        "--profile", default="cpu", help="ci, cpu (default: the rendered book) or gpu, or a path to a profile YAML"
    )
    book.add_argument(
        "--chapter",
        action="append",
        metavar="NAME",
        help="execute only this chapter (repeatable); the others must have been executed before",
    )
    book.add_argument("--no-execute", action="store_true", help="render the already executed chapters")
    book.add_argument("--no-html", action="store_true", help="execute only; skip Jupyter Book")
    book.add_argument(
        "--no-cache",
        action="store_true",
        help="execute every chapter even when book/cache holds it executed on the same inputs",
    )
    book.set_defaults(func=_book)

    from .genomics.tools.validate import MAX_LENGTH

    tools = sub.add_parser(
        "tools",
        help="print the evidence the tools give for a sequence",
        description=f"Run the tools on DNA sequences of at most {MAX_LENGTH:,} bp each (A, C, G, "
        "T and IUPAC codes; longer sequences are refused).",
    )
    tools.add_argument(
        "--sequence",
        action="append",
        metavar="SEQ",
        help=f"a DNA sequence of at most {MAX_LENGTH:,} bp (repeat for a question whose options are "
        "sequences: A, B, ...)",
    )
    tools.add_argument("--fasta", metavar="FILE", help="read the sequence(s) from a FASTA file")
    tools.add_argument(
        "--tool",
        action="append",
        metavar="NAME",
        help="composition, motif_scan, splice, expert or homology (repeatable; default: the main four)",
    )
    tools.add_argument(
        "--task",
        help="the question family whose labelled references the genomic expert and "
        "homology search compare against (cpg, promoter, repeat, splice, ...)",
    )
    tools.add_argument(
        "--bench",
        default=DEFAULT_BENCH,
        help=f"a built benchmark folder whose references.jsonl holds those references (default {DEFAULT_BENCH})",
    )
    tools.add_argument("--json", action="store_true", help="print the structured records instead of the text blocks")
    tools.set_defaults(func=_tools)

    bench = sub.add_parser("benchmark", help="build or validate benchmark suites (question schema v1)")
    bsub = bench.add_subparsers(dest="action", required=True)
    build = bsub.add_parser("build", help="build suites deterministically from a seed")
    build.add_argument("--suite", default="all", help="train, dev, core, microbe, mosaic or all (default)")
    build.add_argument("--profile", default="cpu", choices=["ci", "cpu", "gpu"], help="sizes (default cpu)")
    build.add_argument("--out", required=True, help="output folder (JSONL files, references, manifest)")
    build.add_argument("--seed", type=int, default=0)
    val = bsub.add_parser("validate", help="check JSONL files against question schema v1")
    val.add_argument("files", nargs="+")
    bench.set_defaults(func=_benchmark)

    add_table_parser(sub)

    reader = sub.add_parser("reader", help="train the evidence reader on the curriculum")
    rsub = reader.add_subparsers(dest="action", required=True)
    rt = rsub.add_parser("train", help="draw the curriculum, train, write the adapter and its manifest")
    from .configs import add_dataclass_args
    from .reasoners.train_reader import ReaderConfig

    add_dataclass_args(rt, ReaderConfig)
    reader.set_defaults(func=_reader)

    sub.add_parser("train", help="train an LM selector: fgpo train --objective fgpo|grpo|sft|dpo|warmup --help")
    from .experiments.lm_grid import LMGridConfig

    lg = sub.add_parser(
        "lm",
        help="the LM selector's main table: format warm-up, every method from it, evaluations "
        "and chosen.json (resumable; hours)",
    )
    add_dataclass_args(lg, LMGridConfig)
    lg.set_defaults(func=_lm)
    from .experiments.lm_companion import LMCompanionConfig

    lc = sub.add_parser(
        "lm-companion",
        help="the post-training study on the LM selector: SFT, FGPO and 20%% SFT "
        "then FGPO at one budget, over LoRA ranks (resumable; hours)",
    )
    add_dataclass_args(lc, LMCompanionConfig)
    lc.set_defaults(func=_lm_companion)
    add_run_parsers(sub)

    from .selectors.features import ENCODERS

    ft = sub.add_parser("features", help="cache frozen features of the selector's prompt (policy-head selector)")
    ft.add_argument("--bench", default="data/benchmarks/cpu", help="a built benchmark folder")
    ft.add_argument(
        "--questions",
        action="append",
        metavar="NAME=FILE",
        help="instead of --bench: a suite NAME of questions read from a schema-v1 JSONL FILE (repeatable)",
    )
    ft.add_argument("--encoder", default="minilm", choices=list(ENCODERS))
    ft.add_argument("--suite", action="append", help="suite(s) (default: every suite of the benchmark)")
    ft.add_argument("--keep", type=int, default=40, help="bases kept at each end of a long sequence")
    ft.add_argument(
        "--n-tools", type=int, default=4, help="anonymous tool slots in the prompt (5: the five-tool library)"
    )
    ft.add_argument("--out", required=True, help="cache folder (one .npz per suite and a manifest)")
    ft.set_defaults(func=_features)
    _add_study_parser(sub)

    args = parser.parse_args(argv)
    if args.command == "evaluate" and not args.suite:
        args.suite = ["core", "microbe", "mosaic"]
    return _run(args.command, args.func, args)


if __name__ == "__main__":
    sys.exit(main())
