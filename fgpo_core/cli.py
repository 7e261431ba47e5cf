"""The ``fgpo`` command line: one entry point per long job."""
from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _book(args) -> int:
    from .bookbuild import build_book

    return build_book(args.profile, args.chapter or None, execute=not args.no_execute, html=not args.no_html)


def _read_fasta_arg(path: str) -> list[tuple[str, str]]:
    from .data import _read_fasta
    from pathlib import Path

    recs = _read_fasta(Path(path))
    if not recs:
        raise SystemExit(f"{path}: no FASTA record found")
    return recs


def _tools(args) -> int:
    import json

    from .tools import SequenceError, ToolInput, ToolLibrary, render_block

    seqs = list(args.sequence or [])
    if args.fasta:
        seqs += [s for _, s in _read_fasta_arg(args.fasta)]
    if not seqs:
        raise SystemExit("give --sequence SEQ (repeatable) or --fasta FILE")
    if len(seqs) > 26:
        raise SystemExit("at most 26 sequences (labelled A-Z)")
    labelled = {"": seqs[0]} if len(seqs) == 1 else {chr(65 + i): s for i, s in enumerate(seqs)}
    lib = ToolLibrary.five() if "homology" in (args.tool or []) else ToolLibrary.main()
    chosen = args.tool or [n for n in lib.names if n != "homology"]
    unknown = [t for t in chosen if t not in lib.names]
    if unknown:
        raise SystemExit(f"unknown tool(s) {', '.join(unknown)}; tools are: {', '.join(lib.names)}")
    inp = ToolInput(labelled, task=args.task)
    out = []
    try:
        for tool in lib.tools:
            if tool.name in chosen:
                out.append(tool.run(inp))
    except SequenceError as exc:
        print(f"fgpo tools: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([{"tool": e.tool, "title": e.title, "records": e.records} for e in out], indent=2))
    else:
        print("\n\n".join(render_block(e) for e in out))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fgpo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    book = sub.add_parser("book", help="execute the chapters with papermill and render the book")
    book.add_argument("--profile", default="cpu",
                      help="ci, cpu (default: the rendered book) or gpu, or a path to a profile YAML")
    book.add_argument("--chapter", action="append", metavar="NAME",
                      help="execute only this chapter (repeatable); the others must have been executed before")
    book.add_argument("--no-execute", action="store_true", help="render the already executed chapters")
    book.add_argument("--no-html", action="store_true", help="execute only; skip Jupyter Book")
    book.set_defaults(func=_book)

    tools = sub.add_parser("tools", help="print the evidence the tools give for a sequence")
    tools.add_argument("--sequence", action="append", metavar="SEQ",
                       help="a DNA sequence (repeat for a question whose options are sequences: A, B, ...)")
    tools.add_argument("--fasta", metavar="FILE", help="read the sequence(s) from a FASTA file")
    tools.add_argument("--tool", action="append", metavar="NAME",
                       help="composition, motif_scan, splice, expert or homology (repeatable; default: the main four)")
    tools.add_argument("--task", help="task name for the genomic expert's reference set")
    tools.add_argument("--json", action="store_true", help="print the structured records instead of the text blocks")
    tools.set_defaults(func=_tools)

    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
