"""The book's colours and the style of its figures: one colour per method, from the estimator
registry (:data:`fgpo_core.core.registry.ESTIMATORS`), and line styles and markers that tell apart
variants of one method drawn in its colour."""

from __future__ import annotations

import matplotlib as mpl
import seaborn as sns

from ..core.method_names import parse_stages
from ..core.registry import ESTIMATORS
from .palette_check import MIN_DELTA_E, check_distinct
from .plots_page import DPI, PAGE_WIDTH, install_figure_format

__all__ = [
    "METHOD_COLORS",
    "color",
    "set_style",
    "race_palette",
    "study_palette",
    "MARKERS",
    "LINESTYLES",
    "variant_styles",
    "FAMILY_STYLE",
    "family_style",
    "check_distinct",
    "MIN_DELTA_E",
    "FONT_SIZES",
    "checked_study_palette",
    "SPARE_COLOURS",
    "spare_colour",
]

METHOD_COLORS = {
    **{e.label: e.colour for e in ESTIMATORS.values() if not e.dial},
    "k-subset": "#5b6c9a",
    "Uniform": "#8a8a8a",
    "Tools w/ Desc": "#6b8e23",
    "Warm-up": "#7f8c8d",
    "Untrained": "#b0b0b0",
    "paper": "#444444",
}
"""Colour of each method by its display label: every estimator of the registry (its label and
colour) and the book's other rows."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", (0, (1, 1.2)), (0, (5, 1.5, 1, 1.5, 1, 1.5)))


def color(name: str) -> str:
    """Colour of a method; names starting with a known method share its colour (a bandit arm's
    ``GRPO (clipped ratio; differential, G=6)`` is ``GRPO (clipped ratio)``'s)."""
    for key in sorted(METHOD_COLORS, key=len, reverse=True):
        if name.startswith(key) or (key.endswith(")") and name.startswith(key[:-1] + ";")):
            return METHOD_COLORS[key]
    return "#333333"


FONT_SIZES = {
    "font.size": 10,
    "axes.titlesize": 10.5,
    "axes.labelsize": 10,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "legend.fontsize": 9.5,
    "legend.title_fontsize": 9.5,
    "figure.titlesize": 11,
}
"""Text sizes of every figure (points at :data:`~fgpo_core.book.plots_page.DPI`): none under 9, so
that a figure drawn at the column's width reads at 9 points or more."""


def set_style() -> None:
    """Seaborn's white grid, figures at the text column's width
    (:data:`~fgpo_core.book.plots_page.PAGE_WIDTH` inches at
    :data:`~fgpo_core.book.plots_page.DPI`) with text of at least 9 points, and, in a chapter's kernel,
    figures stored for the page with their alt text and a full-size picture to enlarge
    (:func:`~fgpo_core.book.plots_page.install_figure_format`)."""
    from .chapter import quiet_page

    quiet_page()
    sns.set_theme(style="whitegrid", context="notebook")
    mpl.rcParams.update(
        {
            "figure.dpi": DPI,
            "savefig.dpi": 2 * DPI,
            "figure.figsize": (PAGE_WIDTH, 4.0),
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.titleweight": "bold",
            "legend.frameon": False,
            **FONT_SIZES,
        }
    )
    install_figure_format()


SPARE_COLOURS = (
    "#4477aa",
    "#66a61e",
    "#e7298a",
    "#8e0152",
    "#56b4e9",
    "#bcbd22",
    "#6a3d9a",
    "#000000",
    "#a6761d",
    "#17becf",
    "#ff9da7",
    "#4d4d4d",
)
"""Colours for series that are no method of the registry, tried in order (:func:`spare_colour`)."""


def spare_colour(used) -> str:
    """The first of :data:`SPARE_COLOURS` at least :data:`MIN_DELTA_E` from every colour in ``used``
    (the one farthest from them when none is)."""
    from .palette_check import delta_e

    used = list(used)
    if not used:
        return SPARE_COLOURS[0]
    gaps = [(min(delta_e(c, u) for u in used), c) for c in SPARE_COLOURS]
    far = [c for gap, c in gaps if gap >= MIN_DELTA_E]
    return far[0] if far else max(gaps)[1]


def race_palette(order: list[str]) -> dict[str, str]:
    """Colours for the arms of a bandit race: FGPO teal, k-subset arms in blues (darker for
    larger k), a GRPO arm in its estimator's registry colour (on Eq. 1's reward: GRPO (Eq. 1)'s
    dark red; on the differential reward: GRPO's red), other GRPO arms in further reds."""
    ks = [n for n in order if n.startswith("k-subset")]
    blues = sns.color_palette("Blues", len(ks) + 2).as_hex()[2:] if ks else []
    out = {n: color(n) for n in order}
    out.update(zip(ks, blues))
    spare = iter(["#e07b67", "#5e1f14", "#f2a48f", "#a33a26"])
    used: set = set()
    plain = (ESTIMATORS["grpo"].colour, ESTIMATORS["grpo-eq1"].colour)
    for n in (n for n in order if n.startswith("GRPO") and color(n) in plain):
        c = ESTIMATORS["grpo-eq1"].colour if "Eq. 1" in n else ESTIMATORS["grpo"].colour
        out[n] = c if c not in used else next(spare)
        used.add(out[n])
    return out


def study_palette(methods: list[str]) -> dict[str, str]:
    """Colours of a study's methods, from the estimator registry: FGPO teal, the sampled methods in
    reds and oranges, the offline ones in purple and ochre, and each dial (the coverage dial, the
    shortlists) in shades of its palette, darker for a larger number. A name with modifiers takes
    its estimator's colour (a pipeline, its last stage's); a name that is no method raises. A figure
    takes :func:`checked_study_palette`, which also checks that its colours stay apart."""
    specs = {m: parse_stages(m)[-1] for m in methods}  # ValueError for an unknown method
    out = {}
    for fam in dict.fromkeys(sp.family for sp in specs.values()):
        est = ESTIMATORS[fam]
        ms = [m for m, sp in specs.items() if sp.family == fam]
        if est.dial:
            ks = sorted(dict.fromkeys(specs[m].k for m in ms))
            shades = dict(zip(ks, sns.color_palette(est.colour, len(ks) + 2).as_hex()[2:]))
            out.update({m: shades[specs[m].k] for m in ms})
        else:
            out.update({m: est.colour for m in ms})
    return {m: out[m] for m in methods}


def checked_study_palette(methods: list[str], what: str = "a study's figure") -> dict[str, str]:
    """:func:`study_palette` of the methods one figure draws together, after checking that their
    estimators' colours (a dial's middle shade) are at least :data:`MIN_DELTA_E` apart (CIEDE2000):
    two look-alike registry colours on one figure raise a ValueError naming them."""
    pal = study_palette(methods)
    fams = dict.fromkeys(parse_stages(m)[-1].family for m in methods)
    check_distinct(
        {ESTIMATORS[f].label: _dial_shade(f) if ESTIMATORS[f].dial else ESTIMATORS[f].colour for f in fams}, what=what
    )
    return pal


def variant_styles(colours: dict) -> dict:
    """``name -> (linestyle, marker)``: the first name of each colour solid with circles, the next
    ones of the same colour dashed with squares, dash-dotted with triangles and so on, so that
    variants of one method keep its colour and stay apart."""
    seen: dict = {}
    out = {}
    for name, c in colours.items():
        i = seen.get(c, 0)
        seen[c] = i + 1
        out[name] = (LINESTYLES[i % len(LINESTYLES)], MARKERS[i % len(MARKERS)])
    return out


def _dial_shade(base: str) -> str:
    """The middle shade of a dial's palette (its registry colour)."""
    return sns.color_palette(ESTIMATORS[base].colour, 5).as_hex()[3]


FAMILY_STYLE = {
    "fgpo": ("FGPO, every subset", ESTIMATORS["fgpo"].colour, "*"),
    "shortlist-top": ("Shortlist (top)", _dial_shade("shortlist-top"), "o"),
    "shortlist-grow": ("Shortlist (grow)", _dial_shade("shortlist-grow"), "s"),
    "dial": ("Coverage dial", _dial_shade("fgpo-k"), "^"),
    "grpo": ("GRPO (G = 6)", ESTIMATORS["grpo"].colour, "D"),
}
"""How the chapter "Past enumeration" draws each family of methods: its name, its registry
colour (a dial's middle shade) and its marker."""


def family_style(method: str) -> tuple:
    """The :data:`FAMILY_STYLE` entry of a method name (the coverage dial's ``fgpo-k`` is "dial")."""
    fam = parse_stages(method)[-1].family
    return FAMILY_STYLE.get("dial" if fam == "fgpo-k" else fam, (fam, color(fam), "o"))
