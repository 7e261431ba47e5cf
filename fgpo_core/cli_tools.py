"""``fgpo tools``: print the evidence the tools give for a sequence (the command line's tools part)."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["tools_command", "DEFAULT_BENCH"]

DEFAULT_BENCH = "data/benchmarks/cpu"


def _read_fasta_arg(path: str) -> list[tuple[str, str]]:
    from .genomics.data import FastaError, read_fasta

    try:
        recs = read_fasta(path)
    except FastaError as exc:
        raise ValueError(str(exc)) from None
    if not recs:
        raise ValueError(f"{path}: no FASTA record found")
    return recs


def tools_command(args) -> int:
    """``fgpo tools``: the evidence the tools give for one or several sequences."""
    import json

    from .genomics.tools import SequenceError, ToolInput, ToolLibrary, render_block

    seqs = list(args.sequence or [])
    if args.fasta:
        seqs += [s for _, s in _read_fasta_arg(args.fasta)]
    if not seqs:
        raise ValueError("give --sequence SEQ (repeatable) or --fasta FILE")
    if len(seqs) > 26:
        raise ValueError("at most 26 sequences (labelled A-Z)")
    labelled = {"": seqs[0]} if len(seqs) == 1 else {chr(65 + i): s for i, s in enumerate(seqs)}
    five = "homology" in (args.tool or [])
    if args.bench and (Path(args.bench) / "references.jsonl").exists():
        from .genomics.benchmarks import tool_library_for

        lib = tool_library_for(args.bench, five=five)  # the expert's and homology's labelled references
    elif args.bench and args.bench != DEFAULT_BENCH:
        raise ValueError(f"{args.bench} holds no references.jsonl (a built benchmark folder has one)")
    else:
        lib = ToolLibrary.five() if five else ToolLibrary.main()
    refs = next((t.references for t in lib.tools if t.name == "expert"), {})
    if args.task and refs and args.task not in refs:
        raise ValueError(f"no reference set for task {args.task!r}; the benchmark has {', '.join(sorted(refs))}")
    chosen = args.tool or [n for n in lib.names if n != "homology"]
    unknown = [t for t in chosen if t not in lib.names]
    if unknown:
        raise ValueError(f"unknown tool(s) {', '.join(unknown)}; tools are: {', '.join(lib.names)}")
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
        from .io import finite_json

        print(
            json.dumps(
                finite_json([{"tool": e.tool, "title": e.title, "records": e.records} for e in out]),
                indent=2,
                allow_nan=False,
            )
        )
    else:
        print("\n\n".join(render_block(e) for e in out))
    return 0
