"""How far apart two colours look: sRGB to CIELAB (D65) and the CIEDE2000 colour difference, and
the check every figure of the book runs on the colours of the methods it draws together.

CIEDE2000 follows G. Sharma, W. Wu and E. N. Dalal, "The CIEDE2000 color-difference formula:
implementation notes, supplementary test data, and mathematical observations", Color Research
and Application 30 (2005), Eqs. 1-22 (tested against the paper's own test pairs)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
from matplotlib.colors import to_rgb

__all__ = ["MIN_DELTA_E", "hex_to_lab", "ciede2000", "delta_e", "too_close", "check_distinct"]

MIN_DELTA_E = 15.0
"""The least CIEDE2000 difference between two methods drawn on one figure: about the difference
between a red and an orange of one lightness; two colours closer than this read as one at a
legend's marker size."""

_D65 = (0.95047, 1.0, 1.08883)
_SRGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)


def hex_to_lab(colour) -> tuple[float, float, float]:
    """CIELAB (L*, a*, b*) of a matplotlib colour (``"#1b7f79"``, a name, an RGB tuple), by the
    sRGB transfer curve, the sRGB-to-XYZ matrix and the D65 white point (IEC 61966-2-1, CIE 15)."""
    rgb = np.asarray(to_rgb(colour), float)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = _SRGB_TO_XYZ @ lin / np.asarray(_D65)
    eps, kappa = 216 / 24389, 24389 / 27
    f = np.where(xyz > eps, np.cbrt(xyz), (kappa * xyz + 16) / 116)
    return float(116 * f[1] - 16), float(500 * (f[0] - f[1])), float(200 * (f[1] - f[2]))


def ciede2000(lab1, lab2, kl: float = 1.0, kc: float = 1.0, kh: float = 1.0) -> float:
    """The CIEDE2000 difference of two CIELAB colours (Sharma et al. 2005, Eqs. 1-22)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c1, c2 = math.hypot(a1, b1), math.hypot(a2, b2)
    cbar7 = ((c1 + c2) / 2) ** 7
    g = 0.5 * (1 - math.sqrt(cbar7 / (cbar7 + 25**7)))  # Eq. 4
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0  # Eq. 7
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    dl, dc = l2 - l1, c2p - c1p
    if c1p * c2p == 0:  # Eq. 10
        dh = 0.0
    elif abs(h2p - h1p) <= 180:
        dh = h2p - h1p
    else:
        dh = h2p - h1p - 360 if h2p > h1p else h2p - h1p + 360
    dhh = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))  # Eq. 11
    lbar, cbarp = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:  # Eq. 14
        hbar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hbar = (h1p + h2p) / 2
    else:
        hbar = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(hbar - 30))
        + 0.24 * math.cos(math.radians(2 * hbar))
        + 0.32 * math.cos(math.radians(3 * hbar + 6))
        - 0.20 * math.cos(math.radians(4 * hbar - 63))
    )
    d_theta = 30 * math.exp(-(((hbar - 275) / 25) ** 2))
    rc = 2 * math.sqrt(cbarp**7 / (cbarp**7 + 25**7))
    sl = 1 + 0.015 * (lbar - 50) ** 2 / math.sqrt(20 + (lbar - 50) ** 2)
    sc, sh = 1 + 0.045 * cbarp, 1 + 0.015 * cbarp * t
    rt = -math.sin(math.radians(2 * d_theta)) * rc
    return math.sqrt(
        (dl / (kl * sl)) ** 2
        + (dc / (kc * sc)) ** 2
        + (dhh / (kh * sh)) ** 2
        + rt * (dc / (kc * sc)) * (dhh / (kh * sh))
    )


def delta_e(colour1, colour2) -> float:
    """CIEDE2000 difference of two matplotlib colours."""
    return ciede2000(hex_to_lab(colour1), hex_to_lab(colour2))


def too_close(colours: dict, min_delta: float = MIN_DELTA_E) -> list[tuple[str, str, float]]:
    """``(name, name, difference)`` for each pair of differently coloured entries of ``colours``
    (name -> colour) whose CIEDE2000 difference is under ``min_delta``. Entries that share a colour on
    purpose (variants of one method, told apart by marker and dash) are not a pair."""
    out = []
    for (n1, c1), (n2, c2) in combinations(colours.items(), 2):
        if to_rgb(c1) == to_rgb(c2):
            continue
        d = delta_e(c1, c2)
        if d < min_delta:
            out.append((n1, n2, round(d, 1)))
    return out


def check_distinct(colours: dict, min_delta: float = MIN_DELTA_E, what: str = "one figure") -> dict:
    """``colours`` unchanged when every two of its colours are at least ``min_delta`` apart
    (CIEDE2000); otherwise a ValueError naming each pair too close, so a figure that would draw two
    methods in look-alike colours fails where it is drawn."""
    bad = too_close(colours, min_delta)
    if bad:
        pairs = "; ".join(f"{a} and {b} (delta E {d})" for a, b, d in bad)
        raise ValueError(f"colours too close to tell apart on {what} (CIEDE2000 < {min_delta:g}): {pairs}")
    return colours
