"""Scan the rendered book as a reader sees it: what must never reach a page.

The scan reads each rendered chapter (``_build/html/**.html``) without its code inputs (the
reader sees those only when unfolding them) and reports NaN, machine paths, progress bars,
Python warnings, generated plurals such as ``epoch(s)`` and failed claims
(:data:`fgpo_core.book.claims.CLAIM_FAILED`). ``python -m fgpo_core.book.scan _build/html``
exits 1 when anything is found, listing each page and problem.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from .claims import CLAIM_FAILED

__all__ = ["PROBLEMS", "WORDS_PER_MINUTE", "MAX_MINUTES", "page_text", "reading_minutes", "scan_text", "scan_book",
           "long_reads", "main"]

WORDS_PER_MINUTE = 200
"""A reader's pace through prose; a table or figure counts as half a minute."""
MAX_MINUTES = 15

PROBLEMS = {
    "NaN": re.compile(r"(?<![\w.])(?:NaN|nan)(?![\w(])"),
    "a machine path": re.compile(r"(?:/tmp/|/work/|/home/|/root/|site-packages)"),
    "a progress bar": re.compile(r"\d+it/s|\d+/\d+ \[\d|\|[█▉▊▋▌▍▎▏ ]{3,}\|"),
    "a Python warning": re.compile(r"\b\w*Warning: |warnings\.warn\("),
    "a generated plural": re.compile(r"\b(?:epoch|step|seed|question|run|visit|tool|subset|method|point|cell|"
                                     r"chapter|call|rank|family|famil(?:y|ie))\(s\)"),
    "run bookkeeping": re.compile(r"has not landed|not yet (?:run|executed|landed)"),
    "a stray return value": re.compile(r"\b(?:np|numpy)\.(?:float|int|bool_)\w*\(|<(?:pandas|matplotlib)\.[\w.]+ object at "),
    "a failed claim": re.compile(re.escape("A claim on this page no longer holds")),
}
"""What a rendered page must not show, by name."""


def page_text(html: str) -> tuple[str, bool]:
    """The visible text of a rendered page less its code inputs, and whether a failed claim's
    box is in it."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    failed = bool(soup.select(f".{CLAIM_FAILED}"))
    main = soup.select_one("main") or soup
    # code inputs, and library code a chapter quotes (show_source renders it as highlighted python)
    for node in main.select("div.cell_input, div.highlight-python, div.highlight-bash, div.highlight-default, "
                            "script, style, .headerlink, nav, .bd-sidebar-secondary"):
        node.decompose()
    return main.get_text(" "), failed


def reading_minutes(html: str) -> float:
    """About how long a page takes to read: its prose at :data:`WORDS_PER_MINUTE` words a
    minute, half a minute per table or figure and a quarter per block of quoted code (code
    inputs, folded away, are left out)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    main = soup.select_one("main") or soup
    for node in main.select("div.cell_input, script, style, .headerlink, nav, .bd-sidebar-secondary"):
        node.decompose()
    exhibits = len(main.select("table")) + len(main.select("img"))
    code = len(main.select("div.highlight"))
    for node in main.select("table, div.highlight, pre"):
        node.decompose()
    return len(main.get_text(" ").split()) / WORDS_PER_MINUTE + 0.5 * exhibits + 0.25 * code


def scan_text(text: str) -> list[str]:
    """The names of the problems found in a page's visible text, each with its first match."""
    out = []
    for name, rx in PROBLEMS.items():
        m = rx.search(text)
        if m:
            lo, hi = max(0, m.start() - 40), min(len(text), m.end() + 40)
            out.append(f"{name}: …{' '.join(text[lo:hi].split())}…")
    return out


def scan_book(html_dir: Path) -> dict[str, list[str]]:
    """Page -> problems, for every rendered chapter page under ``html_dir``."""
    html_dir = Path(html_dir)
    pages = sorted(p for p in html_dir.rglob("*.html") if p.parent.name in ("executed", "book"))
    if not pages:
        raise FileNotFoundError(f"{html_dir} holds no rendered chapter: run `fgpo book` first")
    found = {}
    for page in pages:
        html = page.read_text(encoding="utf-8")
        text, failed = page_text(html)
        problems = scan_text(text)

        if failed and not any(p.startswith("a failed claim") for p in problems):
            problems.append("a failed claim")
        if problems:
            found[str(page.relative_to(html_dir))] = problems
    return found


def long_reads(html_dir: Path) -> dict[str, float]:
    """Page -> estimated minutes, for the rendered chapters that read longer than
    :data:`MAX_MINUTES` (reported beside the scan; not a failure)."""
    pages = sorted(p for p in Path(html_dir).rglob("*.html") if p.parent.name in ("executed", "book"))
    minutes = {str(p.relative_to(html_dir)): reading_minutes(p.read_text(encoding="utf-8")) for p in pages}
    return {k: v for k, v in minutes.items() if v > MAX_MINUTES}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    html_dir = Path(args[0] if args else "_build/html")
    try:
        found = scan_book(html_dir)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for page, problems in found.items():
        for p in problems:
            print(f"{page}: {p}")
    for page, minutes in long_reads(html_dir).items():
        print(f"{page}: note: a long read, about {minutes:.0f} minutes (the book aims at {MAX_MINUTES} at most)")
    print(f"scanned the rendered pages of {html_dir}: {'clean' if not found else f'{len(found)} with problems'}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
