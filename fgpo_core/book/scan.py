"""Scan the rendered book as a reader sees it: what must never reach a page, and what makes a page
hard to read.

The scan reads each rendered chapter (``_build/html/executed/*.html`` and ``book/*.html``) and runs
its checks, each by name (:data:`CHECKS`), each switchable:

- ``text``: NaN, machine paths, progress bars, Python warnings, generated plurals such as
  ``epoch(s)``, run bookkeeping, stray return values and failed claims
  (:data:`fgpo_core.book.claims.CLAIM_FAILED`) in the visible text (code inputs left out);
- ``reading-time``: a chapter over 15 minutes, the book over 150, by what a reader does
  (:func:`fgpo_core.book.scan_checks.reading_minutes`);
- ``figure-width``: a figure shown below 70% of its drawn width in the 688-px column;
- ``figure-text``: a figure whose text reads under 9 points as shown;
- ``figure-alt``: a figure whose alt text is only its file name;
- ``code-width``: a visible code block wider than the column (88 characters);
- ``chapter-links``: a quoted chapter title that is not a link, a quoted chapter that does not
  exist, a link to no page;
- ``float-counts``: a count printed as a float (``320000.0``, ``4,096.0``);
- ``external-urls``: anything a page loads from the network.

``python -m fgpo_core.book.scan [HTML] [--only a,b] [--skip a,b] [--times]`` prints one line per
problem and exits 1 when anything is found, 2 on bad input (no book, an unknown check).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .claims import CLAIM_FAILED
from .scan_checks import (
    MAX_BOOK_MINUTES,
    MAX_MINUTES,
    Page,
    article,
    check_chapter_links,
    check_code_width,
    check_external_urls,
    check_figure_alt,
    check_figure_text,
    check_figure_width,
    check_float_counts,
    check_reading_time,
    reading_minutes,
)

__all__ = [
    "PROBLEMS",
    "CHECKS",
    "MAX_MINUTES",
    "MAX_BOOK_MINUTES",
    "page_text",
    "reading_minutes",
    "scan_text",
    "check_text",
    "chapter_pages",
    "chapter_titles",
    "scan_book",
    "reading_times",
    "long_reads",
    "main",
]

PROBLEMS = {
    "NaN": re.compile(r"(?<![\w.])(?:NaN|nan)(?![\w(])"),
    "a machine path": re.compile(r"(?:/tmp/|/work/|/home/|/root/|site-packages)"),
    "a progress bar": re.compile(r"\d+it/s|\d+/\d+ \[\d|\|[█▉▊▋▌▍▎▏ ]{3,}\|"),
    "a Python warning": re.compile(r"\b\w*Warning: |warnings\.warn\("),
    "a generated plural": re.compile(
        r"\b(?:epoch|step|seed|question|run|visit|tool|subset|method|point|cell|"
        r"chapter|call|rank|family|famil(?:y|ie))\(s\)"
    ),
    "run bookkeeping": re.compile(r"has not landed|not yet (?:run|executed|landed)"),
    "a stray return value": re.compile(
        r"\b(?:np|numpy)\.(?:float|int|bool_)\w*\("
        r"|<(?:pandas|matplotlib)\.[\w.]+ object at "
    ),
    "a failed claim": re.compile(re.escape("A claim on this page no longer holds")),
}
"""What a rendered page must not show, by name (the ``text`` check)."""


def page_text(html: str) -> tuple[str, bool]:
    """The visible text of a rendered page less its code inputs, and whether a failed claim's
    box is in it."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    failed = bool(soup.select(f".{CLAIM_FAILED}"))
    main = soup.select_one("main") or soup
    # code inputs, and library code a chapter quotes (show_source renders it as highlighted python)
    for node in main.select(
        "div.cell_input, div.highlight-python, div.highlight-bash, div.highlight-default, "
        "script, style, .headerlink, nav, .bd-sidebar-secondary"
    ):
        node.decompose()
    return main.get_text(" "), failed


def scan_text(text: str) -> list[str]:
    """The names of the problems found in a page's visible text, each with its first match."""
    out = []
    for name, rx in PROBLEMS.items():
        m = rx.search(text)
        if m:
            lo, hi = max(0, m.start() - 40), min(len(text), m.end() + 40)
            out.append(f"{name}: …{' '.join(text[lo:hi].split())}…")
    return out


def check_text(page: Page) -> list[str]:
    """The ``text`` check: :data:`PROBLEMS` in the visible text, and a failed claim's box."""
    text, failed = page_text(page.html)
    problems = scan_text(text) + stray_values(page.html)
    if failed and not any(p.startswith("a failed claim") for p in problems):
        problems.append("a failed claim")
    return problems


_BARE_VALUE = re.compile(r"^\s*[-+]?(?:\d[\d,]*\.?\d*(?:e[-+]?\d+)?|True|False|None)\s*$")


def stray_values(html: str) -> list[str]:
    """A cell's bare return value on the page (a number or a truth value a cell's last line
    returned, rendered as its ``text/plain`` result): what a reader cannot place."""
    from bs4 import BeautifulSoup

    out = []
    for node in BeautifulSoup(html, "html.parser").select("div.cell_output div.output.text_plain"):
        value = node.get_text()
        if _BARE_VALUE.match(value):
            out.append(f"a stray return value: …{value.strip()}…")
    return out


CHECKS = {
    "text": check_text,
    "reading-time": check_reading_time,
    "figure-width": check_figure_width,
    "figure-text": check_figure_text,
    "figure-alt": check_figure_alt,
    "code-width": check_code_width,
    "chapter-links": check_chapter_links,
    "float-counts": check_float_counts,
    "external-urls": check_external_urls,
}
"""Every check of a rendered page, by the name ``--only`` and ``--skip`` take."""


def chapter_pages(html_dir: Path) -> list[Path]:
    """The rendered chapters under ``html_dir`` (``executed/`` and ``book/``); none is an error."""
    html_dir = Path(html_dir)
    pages = sorted(p for p in html_dir.rglob("*.html") if p.parent.name in ("executed", "book"))
    if not pages:
        raise FileNotFoundError(f"{html_dir} holds no rendered chapter: run `fgpo book` first")
    return pages


def chapter_titles(pages: list[Path]) -> dict[str, str]:
    """Each chapter's title (its first heading, lower case, as prose quotes it) -> its page."""
    from bs4 import BeautifulSoup

    out = {}
    for p in pages:
        h1 = (article(p.read_text(encoding="utf-8")) or BeautifulSoup("", "html.parser")).find("h1")
        if h1 is not None:
            out[" ".join(h1.get_text(" ").replace("#", " ").split()).strip(" .").lower()] = p.name
    return out


def reading_times(html_dir: Path) -> dict[str, float]:
    """Page -> about how many minutes it takes to read, for every rendered chapter."""
    return {
        str(p.relative_to(html_dir)): reading_minutes(p.read_text(encoding="utf-8")) for p in chapter_pages(html_dir)
    }


def long_reads(html_dir: Path) -> dict[str, float]:
    """Page -> estimated minutes, for the rendered chapters that read longer than :data:`MAX_MINUTES`."""
    return {k: v for k, v in reading_times(Path(html_dir)).items() if v > MAX_MINUTES}


def scan_book(html_dir: Path, checks: list[str] | None = None) -> dict[str, list[str]]:
    """Page -> problems, for every rendered chapter under ``html_dir``, by the named ``checks``
    (default: all of :data:`CHECKS`); with ``reading-time``, the whole book over
    :data:`MAX_BOOK_MINUTES` is a problem of the page ``book``."""
    html_dir = Path(html_dir)
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [c for c in names if c not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {', '.join(unknown)}; the checks are: {', '.join(CHECKS)}")
    pages = chapter_pages(html_dir)
    titles = chapter_titles(pages) if "chapter-links" in names else {}
    found, total = {}, 0.0
    for path in pages:
        page = Page(str(path.relative_to(html_dir)), path.read_text(encoding="utf-8"), titles, html_dir, path)
        problems = [f"{name}: {p}" if name != "text" else p for name in names for p in CHECKS[name](page)]
        total += page.minutes or 0.0
        if problems:
            found[page.name] = problems
    if "reading-time" in names:
        if total > MAX_BOOK_MINUTES:
            found["book"] = [f"reading-time: the book reads in about {total:.0f} minutes, over {MAX_BOOK_MINUTES}"]
    return found


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fgpo_core.book.scan", description=__doc__.split("\n\n")[0])
    parser.add_argument("html", nargs="?", default="_build/html", help="the rendered book (default: _build/html)")
    parser.add_argument("--only", help=f"run only these checks (comma-separated: {', '.join(CHECKS)})")
    parser.add_argument("--skip", help="run every check but these (comma-separated)")
    parser.add_argument("--times", action="store_true", help="also print each chapter's reading time")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    html_dir = Path(args.html)
    checks = _names(args.only) or list(CHECKS)
    checks = [c for c in checks if c not in _names(args.skip)]
    try:
        unknown = [c for c in _names(args.only) + _names(args.skip) if c not in CHECKS]
        if unknown:
            raise ValueError(f"unknown check(s) {', '.join(unknown)}; the checks are: {', '.join(CHECKS)}")
        found = scan_book(html_dir, checks)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for page, problems in found.items():
        for p in problems:
            print(f"{page}: {p}")
    if args.times:
        times = reading_times(html_dir)
        for page, minutes in times.items():
            print(f"{page}: about {minutes:.1f} minutes to read")
        print(f"the book: about {sum(times.values()):.0f} minutes to read")
    print(
        f"scanned the rendered pages of {html_dir} ({', '.join(checks)}): "
        f"{'clean' if not found else f'{len(found)} with problems'}"
    )
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
