"""Small helpers the chapters share: quoting library code, and paper-versus-book tables."""

from __future__ import annotations

import inspect
import textwrap

import pandas as pd

__all__ = ["show_source", "paper_vs_book", "quiet_page", "MISSING"]

MISSING = "–"
"""How a missing value reads on a page (never NaN)."""


def show_source(obj, drop_docstring: bool = False):
    """Display the source of a library function or class as highlighted code.

    The book quotes ``fgpo_core`` itself, never a copy, so what a reader sees is
    what runs.
    """
    from IPython.display import Markdown

    src = textwrap.dedent(inspect.getsource(obj))
    if drop_docstring and obj.__doc__:
        doc = inspect.getdoc(obj)
        first = src.find('"""')
        end = src.find('"""', first + 3)
        if first != -1 and end != -1 and doc.splitlines()[0] in src[first:end]:
            line_start = src.rfind("\n", 0, first) + 1
            src = src[:line_start] + src[end + 3 :].lstrip("\n")
    module = getattr(obj, "__module__", "")
    return Markdown(f"`{module}.{obj.__qualname__}`\n\n```python\n{src.rstrip()}\n```")


def paper_vs_book(
    rows: dict[str, tuple], paper_label: str = "paper", book_label: str = "this book", digits: int = 1
) -> pd.DataFrame:
    """A two-column comparison: ``rows`` maps a quantity to ``(paper, ours)``.

    ``None`` shows as an empty cell (a quantity one side does not have).
    """
    df = pd.DataFrame.from_dict(rows, orient="index", columns=[paper_label, book_label])
    return df.apply(pd.to_numeric, errors="coerce").round(digits)


def quiet_page() -> None:
    """What a rendered page must not show, turned off for the kernel a chapter runs in: NaN in
    tables (a dash instead, in plain DataFrames and Stylers alike), progress bars, and the
    FutureWarnings and DeprecationWarnings of the libraries underneath."""
    import os
    import warnings

    os.environ["TQDM_DISABLE"] = "1"
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message="IProgress not found")
    pd.set_option("styler.format.na_rep", MISSING)
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the book extra
        return
    shell = get_ipython()
    if shell is None:
        return
    html = shell.display_formatter.formatters["text/html"]
    html.for_type(
        pd.DataFrame,
        lambda df: df.to_html(
            na_rep=MISSING,
            notebook=True,
            max_rows=pd.get_option("display.max_rows"),
            max_cols=pd.get_option("display.max_columns"),
        ),
    )
