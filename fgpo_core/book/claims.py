"""Numbers glued into the chapters' prose, and the claims the prose makes about them.

The prose of a chapter is written by hand; the numbers in it are glued from code (MyST-NB's
``glue``, written in the prose as ``{glue:text}`name```), never typed. A sentence whose truth
depends on a result ("FGPO is ahead of GRPO in domain") is a *claim*: a hidden cell beside it
calls :func:`claim` with the condition that makes it true. While it holds the cell shows
nothing; when the numbers turn it shows a warning box on the page, marked with
:data:`CLAIM_FAILED`, which fails ``fgpo book`` and the chapter's test
(:func:`failed_claims` finds it in an executed notebook).
"""

from __future__ import annotations

import html
import math
from typing import Iterable

__all__ = [
    "CLAIM_FAILED",
    "Shown",
    "fmt_number",
    "fmt_p",
    "glue_number",
    "glue_p",
    "glue_text",
    "claim",
    "failed_claims",
]

CLAIM_FAILED = "fgpo-claim-failed"
"""The class of the warning box a failed claim leaves in its page."""


class Shown:
    """A value glued as the text it should read as. The ``{glue:text}`` role reads the glued
    ``text/plain`` through ``ast.literal_eval`` (which would turn ``2,000`` into a tuple and drop
    the sign of ``+6.1``), so ``repr`` is the text as a quoted literal."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return repr(self.text)

    def __str__(self) -> str:
        return self.text


def fmt_number(value: float, digits: int = 1, signed: bool = False) -> str:
    """``value`` to ``digits`` decimals (a sign always when ``signed``); no NaN reaches a page:
    a missing value reads as an en dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (int,)) and not isinstance(value, bool) and digits == 0:
        text = f"{value:,d}"
    else:
        text = f"{float(value):,.{digits}f}"
    if text.startswith("-") and float(text.replace(",", "")) == 0:
        text = text[1:]  # no "-0.0"
    if signed and not text.startswith("-"):
        text = "+" + text
    return text.replace("-", "−")


def fmt_p(p: float) -> str:
    """A p-value as a reader wants it: two significant figures, ``< 0.001`` below that."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.2g}" if p < 0.1 else f"{p:.2f}"


def _glue(name: str, value) -> None:
    from myst_nb import glue

    glue(name, value, display=False)


def glue_number(name: str, value: float, digits: int = 1, signed: bool = False) -> float:
    """Glue ``value`` under ``name`` as formatted text; returns ``value`` for the claim beside it."""
    _glue(name, Shown(fmt_number(value, digits, signed)))
    return value


def glue_p(name: str, p: float) -> float:
    """Glue a p-value (:func:`fmt_p`); returns it."""
    _glue(name, Shown(fmt_p(p)))
    return p


def glue_text(name: str, text: str) -> str:
    """Glue a short value that is a name, not a number (a subset such as ``T3+T4``)."""
    _glue(name, Shown(str(text)))
    return text


def claim(name: str, holds: bool, statement: str) -> None:
    """Check one claim of the prose. When ``holds`` is false, display a warning box quoting
    ``statement`` (the prose's sentence in short) in place of silence. Returns nothing, so a
    cell that ends with a claim shows nothing while it holds."""
    from IPython.display import HTML, display

    holds = bool(holds)
    if not holds:
        display(
            HTML(
                f'<div class="admonition warning {CLAIM_FAILED}" data-claim="{html.escape(name)}">'
                '<p class="admonition-title">A claim on this page no longer holds</p>'
                f"<p>The text says: {html.escape(statement)}. The numbers computed above no longer "
                "support it; the prose needs rewriting.</p></div>"
            )
        )


def failed_claims(nb) -> list[str]:
    """The names of the claims that failed in an executed notebook (an ``nbformat`` node)."""
    import re

    out: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            text = o.get("data", {}).get("text/html", "")
            text = "".join(text) if isinstance(text, Iterable) and not isinstance(text, str) else text
            if CLAIM_FAILED in text:
                out += re.findall(r'data-claim="([^"]*)"', text) or ["?"]
    return out
