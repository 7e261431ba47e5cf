"""The book's colours and the style of its figures: one colour per method, from the estimator
registry (:data:`fgpo_core.core.registry.ESTIMATORS`), and line styles and markers that tell apart
variants of one method drawn in its colour."""
from __future__ import annotations

import matplotlib as mpl
import seaborn as sns

from ..core.method_names import parse_stages
from ..core.registry import ESTIMATORS

__all__ = ["METHOD_COLORS", "color", "set_style", "race_palette", "study_palette", "MARKERS", "LINESTYLES",
           "variant_styles", "FAMILY_STYLE", "family_style"]

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
LINESTYLES = ("-", "--", "-.", (0, (1, 1.2)))


def color(name: str) -> str:
    """Colour of a method; names starting with a known method share its colour."""
    for key in sorted(METHOD_COLORS, key=len, reverse=True):
        if name.startswith(key):
            return METHOD_COLORS[key]
    return "#333333"


def set_style() -> None:
    """Seaborn's white grid, a readable size, and crisp figures in HTML."""
    from .chapter import quiet_page

    quiet_page()
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.95)
    mpl.rcParams.update({
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "figure.figsize": (7.5, 4.2),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titleweight": "bold",
        "legend.frameon": False,
    })


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
    for n in (n for n in order if n.startswith("GRPO")):
        c = ESTIMATORS["grpo-eq1"].colour if "Eq. 1" in n else ESTIMATORS["grpo"].colour
        out[n] = c if c not in used else next(spare)
        used.add(out[n])
    return out


def study_palette(methods: list[str]) -> dict[str, str]:
    """Colours of a study's methods, from the estimator registry: FGPO teal, the sampled methods in
    reds and oranges, the offline ones in purple and ochre, and each dial (the coverage dial, the
    shortlists) in shades of its palette, darker for a larger number. A name with modifiers takes
    its estimator's colour (a pipeline, its last stage's); a name that is no method raises."""
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


FAMILY_STYLE = {"fgpo": ("FGPO, every subset", ESTIMATORS["fgpo"].colour, "*"),
                "shortlist-top": ("Shortlist (top)", _dial_shade("shortlist-top"), "o"),
                "shortlist-grow": ("Shortlist (grow)", _dial_shade("shortlist-grow"), "s"),
                "dial": ("Coverage dial", _dial_shade("fgpo-k"), "^"),
                "grpo": ("GRPO (G = 6)", ESTIMATORS["grpo"].colour, "D")}
"""How the chapter "Past enumeration" draws each family of methods: its name, its registry
colour (a dial's middle shade) and its marker."""


def family_style(method: str) -> tuple:
    """The :data:`FAMILY_STYLE` entry of a method name (the coverage dial's ``fgpo-k`` is "dial")."""
    fam = parse_stages(method)[-1].family
    return FAMILY_STYLE.get("dial" if fam == "fgpo-k" else fam, (fam, color(fam), "o"))
