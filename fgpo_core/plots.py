"""One house style for every figure of the book."""
from __future__ import annotations

import matplotlib as mpl
import seaborn as sns

__all__ = ["set_style", "METHOD_COLORS", "color"]

METHOD_COLORS = {
    "FGPO": "#1b7f79",
    "GRPO": "#c8553d",
    "GRPO (differential)": "#e59a52",
    "k-subset": "#5b6c9a",
    "Uniform": "#8a8a8a",
    "SFT": "#9c6fb6",
    "paper": "#444444",
}


def color(name: str) -> str:
    """Colour of a method; names starting with a known method share its colour."""
    for key in sorted(METHOD_COLORS, key=len, reverse=True):
        if name.startswith(key):
            return METHOD_COLORS[key]
    return "#333333"


def set_style() -> None:
    """Seaborn's white grid, a readable size, and crisp figures in HTML."""
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
