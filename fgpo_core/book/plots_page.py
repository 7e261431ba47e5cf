"""How a figure reaches the page: drawn at the text column's width, legible as displayed, with alt
text that says what it shows and a link to its full-resolution picture.

In a chapter's kernel (:func:`install_figure_format`, run by
:func:`fgpo_core.book.palette.set_style`) every matplotlib figure is stored as a PNG at twice the
page's resolution with, in the notebook output's metadata, its width and height as displayed, its
alt text (:func:`set_alt`, or one read off its titles and axis labels) and its legibility
(:func:`legibility`). At render time the Sphinx extension of this module (``setup``, listed in
``_config.yml``) gives each output picture that alt text and that width, so Sphinx links it to the
full picture (click to enlarge, no script, no network).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path

__all__ = [
    "COLUMN_PX",
    "DPI",
    "PAGE_WIDTH",
    "MIN_FONT_PT",
    "SMALL_TEXT_CLASS",
    "set_alt",
    "alt_text",
    "legibility",
    "page_png",
    "install_figure_format",
    "output_images",
    "legend_below",
    "setup",
]

COLUMN_PX = 688
"""The width of the book's text column in CSS pixels (sphinx-book-theme at a desktop width)."""
DPI = 100
"""Figure pixels per inch as displayed (the PNG holds twice as many, for the enlarged view)."""
PAGE_WIDTH = 6.9
"""A figure's width in inches: the text column at :data:`DPI`."""
MIN_FONT_PT = 9.0
"""The smallest text a figure may show, in points as displayed on the page."""
SMALL_TEXT_CLASS = "fgpo-small-text"
"""The class the page gives a picture whose text is below :data:`MIN_FONT_PT` as displayed."""
_ALT = "_fgpo_alt"


def set_alt(fig, text: str):
    """Give ``fig`` the alt text ``text`` (what the figure shows, for a reader who cannot see it)
    and, in a chapter's kernel, make sure figures are stored for the page
    (:func:`install_figure_format`); returns ``fig``."""
    setattr(fig, _ALT, " ".join(str(text).split()))
    install_figure_format()
    return fig


def alt_text(fig) -> str:
    """The alt text of ``fig``: the one :func:`set_alt` gave it, else a description read off the
    figure (its title, and each panel's title and axes)."""
    given = getattr(fig, _ALT, None)
    if given:
        return given
    axes = [ax for ax in fig.axes if ax.get_visible() and (ax.get_title() or ax.get_xlabel() or ax.get_ylabel())]
    sup = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
    parts = []
    for ax in axes:
        what = ax.get_title().replace("\n", " ")
        axes_words = " against ".join(w for w in (ax.get_ylabel(), ax.get_xlabel()) if w)
        parts.append(f"{what} ({axes_words})" if what and axes_words else what or axes_words)
    head = f"{sup}. " if sup else ""
    n = len(axes)
    body = (f"{n} panels: " if n > 1 else "A chart: ") + "; ".join(parts) if parts else "A chart"
    return " ".join((head + body + ".").split())


def _texts(fig):
    """The texts ``fig`` shows: visible, not empty, on a visible panel or on the figure itself."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible()):
            yield t


def legibility(fig, column_px: int = COLUMN_PX, png_width: int | None = None) -> dict:
    """How ``fig`` reads on the page: its drawn width in CSS pixels (``png_width`` at :data:`DPI`
    if given, else its size), the scale the column shows it at (1 when it fits) and the smallest
    text it shows, in points as displayed (a font of ``F`` points at ``DPI`` dots an inch shows at
    ``F * DPI / 96`` CSS points, times the scale)."""
    width = png_width if png_width is not None else fig.get_figwidth() * DPI
    scale = min(1.0, column_px / max(width, 1))
    sizes = [t.get_fontsize() for t in _texts(fig)]
    smallest = min(sizes) * DPI / 96 * scale if sizes else float("inf")
    return {"width_px": int(round(width)), "scale": round(scale, 3), "min_font_pt": round(smallest, 2)}


def page_png(fig) -> tuple[str, dict]:
    """``(base64 PNG, metadata)`` of ``fig`` as a chapter stores it: the PNG at twice :data:`DPI`
    (tight around what is drawn), the metadata its displayed ``width`` and ``height`` in CSS
    pixels, its ``alt`` text and its legibility (:func:`legibility`) under ``fgpo``."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=2 * DPI, bbox_inches="tight", facecolor="white")
    data = buf.getvalue()
    from PIL import Image

    w, h = Image.open(io.BytesIO(data)).size
    meta = {"width": w // 2, "height": h // 2, "alt": alt_text(fig), "fgpo": legibility(fig, png_width=w // 2)}
    return base64.b64encode(data).decode("ascii"), meta


def install_figure_format() -> bool:
    """In an IPython kernel, display every matplotlib figure through :func:`page_png`; False
    outside one."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the book extra
        return False
    shell = get_ipython()
    if shell is None:
        return False
    from matplotlib.figure import Figure

    shell.display_formatter.formatters["image/png"].for_type(Figure, page_png)
    shell.display_formatter.formatters["image/png"].enabled = True
    return True


def output_images(notebook: Path) -> dict[str, dict]:
    """SHA-256 of each PNG a notebook's outputs hold -> its output metadata and pixel size, as
    MyST-NB names the picture it writes (the hash of its bytes)."""
    from PIL import Image

    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    out = {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            data = o.get("data", {}).get("image/png")
            if not data:
                continue
            raw = base64.b64decode("".join(data) if isinstance(data, list) else data)
            meta = dict(o.get("metadata", {}).get("image/png", {}))
            meta["size"] = Image.open(io.BytesIO(raw)).size
            out[hashlib.sha256(raw).hexdigest()] = meta
    return out


def _dress_images(app, doctree) -> None:
    """Give each output picture of a chapter its alt text and displayed width (so Sphinx links it
    to the full picture) and the small-text class where its text reads under 9 points."""
    from docutils import nodes

    src = Path(app.env.doc2path(app.env.docname))
    if src.suffix != ".ipynb" or not src.exists():
        return
    images = output_images(src)
    for node in doctree.findall(nodes.image):
        meta = images.get(Path(str(node.get("uri", ""))).stem)
        if meta is None:
            continue
        if meta.get("alt"):
            node["alt"] = meta["alt"]
        width = meta.get("width") or meta["size"][0]
        node["width"] = f"{int(width)}px"
        node.attributes.pop("height", None)
        if meta.get("fgpo", {}).get("min_font_pt", MIN_FONT_PT) < MIN_FONT_PT:
            node["classes"].append(SMALL_TEXT_CLASS)


def setup(app):
    """The Sphinx extension: :func:`_dress_images` on every chapter read."""
    app.connect("doctree-read", _dress_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def legend_below(fig, handles=None, labels=None, ncol: int | None = None, ax=None):
    """One legend under all the panels of ``fig`` (drawn with ``layout="constrained"``), from
    ``handles`` and ``labels`` or those of ``ax``, whose own legend is removed; two columns unless
    ``ncol`` says otherwise (one when a label is long)."""
    if handles is None:
        handles, labels = (ax or fig.axes[0]).get_legend_handles_labels()
    for a in fig.axes:
        if a.get_legend() is not None:
            a.get_legend().remove()
    if not handles:
        return None
    labels = list(labels)
    if ncol is None:
        ncol = 1 if max(len(str(s)) for s in labels) > 38 else (2 if len(labels) > 1 else 1)
        ncol = 3 if ncol == 2 and max(len(str(s)) for s in labels) <= 18 and len(labels) > 4 else ncol
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol)
