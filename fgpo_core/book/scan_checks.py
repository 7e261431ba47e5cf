"""The page checks of :mod:`fgpo_core.book.scan`, one function per check, each reading one rendered
chapter as a reader sees it (a :class:`Page`) and returning what it finds there.

Reading time counts what a reader does (:func:`reading_minutes`): prose at
:data:`WORDS_PER_MINUTE`, visible code at :data:`CODE_LINES_PER_MINUTE` lines, each table by its
cells at :data:`CELLS_PER_MINUTE` and :data:`MINUTES_PER_FIGURE` per figure. Folded content
(``hide-input`` cells, dropdowns) is left out: a reader opens it only when they want it.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "WORDS_PER_MINUTE",
    "CODE_LINES_PER_MINUTE",
    "CELLS_PER_MINUTE",
    "MINUTES_PER_FIGURE",
    "MAX_MINUTES",
    "MAX_BOOK_MINUTES",
    "MIN_SHOWN_SHARE",
    "MAX_CODE_CHARS",
    "COLUMN_PX",
    "FLOAT_COUNT",
    "Page",
    "article",
    "reading_minutes",
    "check_reading_time",
    "check_figure_width",
    "check_figure_text",
    "check_figure_alt",
    "check_code_width",
    "check_chapter_links",
    "check_float_counts",
    "check_external_urls",
]

WORDS_PER_MINUTE = 180
CODE_LINES_PER_MINUTE = 40
CELLS_PER_MINUTE = 60
MINUTES_PER_FIGURE = 0.75
MAX_MINUTES = 15
"""The longest a chapter may take to read."""
MAX_BOOK_MINUTES = 150
"""The longest the whole book may take to read."""
MIN_SHOWN_SHARE = 0.7
"""The least share of its drawn width a figure may be shown at."""
MAX_CODE_CHARS = 88
"""The widest line a visible code block may hold (the text column holds about this many)."""
COLUMN_PX = 688
"""The text column's width in CSS pixels."""
FLOAT_COUNT = re.compile(r"(?<![\d.,])(?:\d{1,3}(?:,\d{3})+|\d{4,})\.0+(?![\d.])")
"""A count printed as a float: ``320000.0``, ``4,096.0``."""
_FOLDED = "details, .toggle-hidden, .dropdown"
_CHROME = "script, style, .headerlink, nav, .bd-sidebar-secondary, .prev-next-area, footer, .bd-footer-article"
_QUOTE = re.compile(r"[“\"]([^”\"\n]{3,90}?)[”\"]")
_IMAGE_NAME = re.compile(r"(?:^|/)[\w.-]+\.(?:png|jpe?g|svg|gif)$", re.I)
_EXTERNAL = re.compile(r"^(?:https?:)?//", re.I)


@dataclass
class Page:
    """A rendered page: its path relative to the book's root, its HTML and, for checks across
    pages, the titles of every chapter (lower case) and the book's root folder."""

    name: str
    html: str
    titles: dict = field(default_factory=dict)
    root: Path | None = None
    path: Path | None = None
    minutes: float | None = None
    """Its reading time, once measured (:func:`reading_minutes`)."""


def article(html: str, unfolded: bool = False):
    """The content of a page as a reader sees it: the article (or ``main``) without the site's
    chrome and code inputs a reader has not opened (and without folded content unless ``unfolded``)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    main = soup.select_one("article") or soup.select_one("main") or soup
    for node in main.select(_CHROME if unfolded else f"{_CHROME}, {_FOLDED}, div.tag_remove-input div.cell_input"):
        node.decompose()
    return main


def _code_blocks(main) -> list[str]:
    """The text of each visible code block (code inputs, quoted source, text outputs)."""
    return [pre.get_text() for pre in main.select("div.highlight pre") if not pre.find_parent("table")]


def reading_minutes(html: str) -> float:
    """About how long a page takes to read (see the module's docstring)."""
    main = article(html)
    figures = len([img for img in main.select("img") if not img.find_parent("table")])
    cells = sum(len(t.select("td, th")) for t in main.select("table") if not t.find_parent("table"))
    code = sum(len([ln for ln in block.splitlines() if ln.strip()]) for block in _code_blocks(main))
    for node in main.select("table, div.highlight, img, .math, mjx-container"):
        node.decompose()
    words = len(main.get_text(" ").split())
    return (
        words / WORDS_PER_MINUTE
        + code / CODE_LINES_PER_MINUTE
        + cells / CELLS_PER_MINUTE
        + MINUTES_PER_FIGURE * figures
    )


def check_reading_time(page: Page) -> list[str]:
    """A chapter that takes more than :data:`MAX_MINUTES` to read."""
    if page.minutes is None:
        page.minutes = reading_minutes(page.html)
    m = page.minutes
    return [f"reads in about {m:.0f} minutes, over {MAX_MINUTES}"] if m > MAX_MINUTES else []


def _drawn_width(img, page: Page) -> float | None:
    """The width an image is drawn at (CSS px): its width attribute or style, else its file's."""
    for raw in (img.get("width"), *re.findall(r"width:\s*([\d.]+)px", img.get("style", ""))):
        if raw and re.fullmatch(r"[\d.]+(?:px)?", str(raw)):
            return float(str(raw).removesuffix("px"))
    src = img.get("src", "")
    if page.path is None or not src or _EXTERNAL.match(src) or src.startswith("data:"):
        return None
    f = (page.path.parent / src.split("?")[0]).resolve()
    if not f.exists():
        return None
    from PIL import Image

    with Image.open(io.BytesIO(f.read_bytes())) as im:
        return float(im.size[0])


def check_figure_width(page: Page, column_px: int = COLUMN_PX) -> list[str]:
    """A figure the column shows below :data:`MIN_SHOWN_SHARE` of the width it is drawn at."""
    out = []
    for img in article(page.html, unfolded=True).select("img"):
        width = _drawn_width(img, page)
        if width and column_px / width < MIN_SHOWN_SHARE:
            out.append(
                f"a figure drawn {width:.0f} px wide is shown at {100 * column_px / width:.0f}% "
                f"({img.get('src', '').rsplit('/', 1)[-1][:16]}…)"
            )
    return out


def check_figure_text(page: Page) -> list[str]:
    """A figure whose text reads under 9 points as displayed (marked by
    :func:`fgpo_core.book.plots_page.setup` from the figure's own fonts)."""
    from .plots_page import SMALL_TEXT_CLASS

    return [
        f"a figure with text under 9 points as shown ({img.get('src', '').rsplit('/', 1)[-1][:16]}…)"
        for img in article(page.html, unfolded=True).select(f"img.{SMALL_TEXT_CLASS}")
    ]


def check_figure_alt(page: Page) -> list[str]:
    """A figure whose alt text is missing or only its file name."""
    return [
        f"a figure with no alt text but its file name ({img.get('src', '').rsplit('/', 1)[-1][:16]}…)"
        for img in article(page.html, unfolded=True).select("div.cell_output img, figure img")
        if not (img.get("alt") or "").strip() or _IMAGE_NAME.search((img.get("alt") or "").strip())
    ]


def check_code_width(page: Page, max_chars: int = MAX_CODE_CHARS) -> list[str]:
    """A visible code input with a line wider than the column (:data:`MAX_CODE_CHARS` characters).
    Text outputs, quoted source and commands in the prose wrap at the column instead
    (``white-space: pre-wrap`` in ``book/_static/fgpo.css``), so only code a reader reads as code
    must fit."""
    out = []
    main = article(page.html)
    inputs = [pre.get_text() for pre in main.select("div.cell_input div.highlight pre") if not pre.find_parent("table")]
    for block in inputs:
        widest = max((len(ln.rstrip()) for ln in block.splitlines()), default=0)
        if widest > max_chars:
            line = max(block.splitlines(), key=lambda ln: len(ln.rstrip())).strip()
            out.append(f"a visible code line of {widest} characters (over {max_chars}): {line[:50]}…")
    return out


def _norm(title: str) -> str:
    return " ".join(title.replace("#", " ").replace("¶", " ").split()).strip(" .,:;").lower()


def check_chapter_links(page: Page) -> list[str]:
    """A quoted chapter title in the prose that is not a link, a quoted title after the word
    "chapter" that names no chapter, and a link to a page that does not exist."""
    main = article(page.html)
    for node in main.select("table, div.highlight, pre, code, .math"):
        node.decompose()
    titles = page.titles or {}
    out = []
    for block in main.select("p, li, dd, figcaption"):
        linked = " ".join(_norm(a.get_text(" ")) for a in block.select("a"))
        text = block.get_text(" ")
        for m in _QUOTE.finditer(text):
            quoted = _norm(m.group(1))
            before = text[max(0, m.start() - 25) : m.start()].lower()
            if quoted in titles and quoted not in linked:
                out.append(f"a chapter named but not linked: “{m.group(1).strip()}”")
            elif (
                quoted not in titles
                and re.search(r"\bchapters?\b[^.]{0,12}$", before)
                and not any(t.startswith(quoted) for t in titles)
            ):
                out.append(f"a quoted chapter that does not exist: “{m.group(1).strip()}”")
    if page.path is not None:
        for a in main.select("a[href]"):
            href = a["href"].split("#")[0]
            if (
                href
                and not _EXTERNAL.match(href)
                and not href.startswith(("mailto:", "data:"))
                and href.endswith(".html")
                and not (page.path.parent / href).exists()
            ):
                out.append(f"a link to a page that does not exist: {a['href']}")
    return list(dict.fromkeys(out))


def check_float_counts(page: Page) -> list[str]:
    """A count printed as a float (``320000.0``, ``4,096.0``) in prose or a table."""
    main = article(page.html)
    for node in main.select("div.highlight, pre, code"):
        node.decompose()
    return [f"a count printed as a float: {m}" for m in dict.fromkeys(FLOAT_COUNT.findall(main.get_text(" ")))]


def check_external_urls(page: Page) -> list[str]:
    """Anything the page loads from the network: a script, stylesheet, image or frame with an
    absolute URL, or an inline script naming one (links a reader may follow are fine)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page.html, "html.parser")
    out = []
    for tag, attr in (
        ("script", "src"),
        ("link", "href"),
        ("img", "src"),
        ("iframe", "src"),
        ("source", "src"),
        ("video", "src"),
        ("audio", "src"),
        ("embed", "src"),
        ("object", "data"),
    ):
        for node in soup.find_all(tag):
            url = node.get(attr) or ""
            if tag == "link" and not set(node.get("rel") or []) & {
                "stylesheet",
                "preload",
                "icon",
                "modulepreload",
                "prefetch",
                "manifest",
            }:
                continue
            if _EXTERNAL.match(url):
                out.append(f"loads {url}")
    for node in soup.find_all("script", src=False):
        out += [
            f"an inline script names {url}"
            for url in re.findall(r"https?://[^\s\"'<>)]+", node.get_text())
            if "w3.org" not in url
        ]
    return list(dict.fromkeys(out))
