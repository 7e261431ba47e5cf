"""How a table reads on a page: words instead of identifiers, integers as integers, one header
row and no index column of row numbers (:func:`show`; :func:`plain` is the frame it shows)."""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd

from ..book.chapter import MISSING

__all__ = ["MISSING", "words", "plain", "show", "settings_table"]

_IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def words(text):
    """``text`` with every snake_case identifier spelled as words (``motif_scan`` reads "motif
    scan", ``input_tokens`` "input tokens"); anything that is not a string comes back as it is."""
    if not isinstance(text, str):
        return text
    return _IDENTIFIER.sub(lambda m: m.group(0).replace("_", " "), text)


def settings_table(config, prefix: str = "") -> pd.DataFrame:
    """A dataclass's settings (a class or an instance) as a table: each field with its default (or
    its value, for an instance), a nested dataclass's fields spelled ``outer.inner``; the code
    around them (validation, derived values) is left out. Show it with ``verbatim=["setting"]``."""
    import dataclasses

    rows = []
    for f in dataclasses.fields(config):
        if not isinstance(config, type):
            value = getattr(config, f.name)
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            value = None
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            rows += settings_table(value, f"{prefix}{f.name}.").to_dict("records")
        else:
            rows.append({"setting": prefix + f.name, "value": MISSING if value is None else repr(value)})
    return pd.DataFrame(rows)


_COUNT = re.compile(
    r"(^|\b)(n|questions?|visits|calls|seeds?|steps?|evaluations|tokens|count|matrices|length"
    r"|size|epochs?|subsets picked|trials|violations|bp)(\b|$)",
    re.IGNORECASE,
)


def _count(col: pd.Series, header: str) -> bool:
    """A column of counts stored as floats: whole numbers that are large (a thousand or more) or
    headed as a count ("questions", "visits", "n", ...), never a percentage."""
    if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
        return False
    if pd.api.types.is_integer_dtype(col):
        return True
    v = col.dropna().to_numpy(dtype=float)
    if not (len(v) and np.all(np.isfinite(v)) and np.all(v == np.round(v))):
        return False
    return bool(np.abs(v).max() >= 1000) or ("%" not in header and bool(_COUNT.search(header)))


def _counted(col: pd.Series, header: str) -> bool:
    """A numeric column headed as a count (calls, visits, ...) whose values are not all whole."""
    return (
        pd.api.types.is_numeric_dtype(col)
        and not pd.api.types.is_bool_dtype(col)
        and "%" not in header
        and bool(_COUNT.search(header))
    )


def _decimals(col: pd.Series, digits: int) -> int:
    """The decimals a float column needs, at least one and at most ``digits`` (as pandas shows a
    rounded column: ``[76.0, 0.533]`` needs three, ``[76.0, 65.5]`` one)."""
    need = 1
    for v in col.dropna().to_numpy(dtype=float):
        if np.isfinite(v):
            need = max(need, len(f"{v:.{digits}f}".rstrip("0").split(".")[1]))
    return need


def _header(key) -> str:
    """One header cell from a column key (a MultiIndex key's levels joined, blanks dropped)."""
    parts = key if isinstance(key, tuple) else (key,)
    return words(" ".join(str(p) for p in parts if p is not None and str(p) != "").strip())


def plain(df: pd.DataFrame | pd.Series, verbatim: Sequence[str] = ()) -> pd.DataFrame:
    """``df`` as a reader sees it: its row labels (not row numbers) become ordinary first columns,
    every header is one row of words, and identifiers inside cells read as words (except in the
    ``verbatim`` columns, named as they read: code a reader types)."""
    if isinstance(df, pd.Series):
        df = df.to_frame(df.name if df.name is not None else "")
    out = df.copy()
    numbered = isinstance(out.index, pd.RangeIndex) and out.index.name is None
    if not numbered:
        names = [n if n is not None else "" for n in out.index.names]
        if isinstance(out.columns, pd.MultiIndex):
            new = [tuple([n] + [""] * (out.columns.nlevels - 1)) for n in names]
            out.index = out.index.set_names([f"__level{i}" for i in range(len(names))])
            out = out.reset_index()
            out.columns = pd.MultiIndex.from_tuples(new + list(out.columns[len(names) :]))
        else:
            out.index = out.index.set_names([f"__level{i}" for i in range(len(names))])
            out = out.reset_index()
            out.columns = names + list(out.columns[len(names) :])
    else:
        out = out.reset_index(drop=True)
    headers = [_header(c) for c in out.columns]
    # two columns may read alike once flattened (an empty index name beside an empty header)
    seen: dict[str, int] = {}
    for i, h in enumerate(headers):
        seen[h] = seen.get(h, 0) + 1
        if seen[h] > 1:
            headers[i] = h + " " * (seen[h] - 1)
    out.columns = headers
    for c in out.columns:
        if c in verbatim:
            continue
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            out[c] = out[c].map(words)
    return out


def show(
    df: pd.DataFrame | pd.Series, digits: int = 1, caption: str | None = None, verbatim: Sequence[str] = (), **formats
) -> None:
    """Display a table as a reader sees it (:func:`plain`): numbers rounded to ``digits`` (a column
    with fewer significant decimals shows as many as it needs, at least one), counts
    (:func:`_count`) as integers with thousands separators, a dash where a value is missing, no
    index column. ``formats`` maps a column (as it reads, or by its identifier) to a format string
    or function, overriding the rest; ``caption`` is shown above the table; ``verbatim`` columns keep
    their identifiers."""
    from IPython.display import display

    frame = plain(df, verbatim)
    formatter = {}
    for c in frame.columns:
        if pd.api.types.is_bool_dtype(frame[c]):
            continue
        if _count(frame[c], c):
            formatter[c] = lambda v: MISSING if pd.isna(v) else f"{int(round(v)):,d}"
        elif _counted(frame[c], c):  # a mean of counts: whole values as integers, the rest rounded
            formatter[c] = lambda v, d=digits: (
                MISSING if pd.isna(v) else f"{int(v):,d}" if float(v).is_integer() else f"{v:,.{d}f}"
            )
        elif digits > 1 and pd.api.types.is_float_dtype(frame[c]):  # as many decimals as the column needs
            d = _decimals(frame[c], digits)
            formatter[c] = lambda v, d=d: MISSING if pd.isna(v) else f"{v:,.{d}f}"
    for key, fmt in formats.items():
        formatter[words(key)] = fmt
    styler = (
        frame.style.format(precision=digits, na_rep=MISSING, thousands=",", formatter=formatter or None)
        .hide(axis="index")
        .set_table_styles([{"selector": "th, td", "props": "padding: 0.1em 0.7em"}])
    )
    display(styler.set_caption(caption) if caption else styler)
