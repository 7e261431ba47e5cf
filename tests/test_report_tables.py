"""A table as a reader sees it: words for identifiers, integers as integers, one header row, no
column of row numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fgpo_core.reports.tables import plain, show, words


def test_words_spell_identifiers_and_leave_the_rest():
    assert words("-T2 motif_scan") == "-T2 motif scan"
    assert words("input_tokens") == "input tokens"
    assert words("motif_scan+splice") == "motif scan+splice"
    assert words("FGPO (λ=0)") == "FGPO (λ=0)" and words(3.5) == 3.5


def test_plain_moves_row_labels_into_a_column_and_flattens_headers():
    df = pd.DataFrame(
        [[1.0, 2.0], [3.0, 4.0]],
        index=pd.Index(["motif_scan", "splice"], name="tool"),
        columns=pd.MultiIndex.from_tuples([("core", "accuracy"), ("core", "n_questions")]),
    )
    out = plain(df)
    assert list(out.columns) == ["tool", "core accuracy", "core n questions"]
    assert out.tool.tolist() == ["motif scan", "splice"]
    assert isinstance(out.index, pd.RangeIndex)
    numbered = plain(pd.DataFrame({"a": [1, 2]}))
    assert list(numbered.columns) == ["a"]  # row numbers are not a column


def test_show_writes_counts_as_integers_without_an_index(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    df = pd.DataFrame({"calls": [320000.0, 4096.0], "accuracy": [55.123, np.nan]}, index=["FGPO", "GRPO"])
    show(df)
    html = shown[0].to_html()
    assert "320,000" in html and "4,096" in html and "320000.0" not in html and "4,096.0" not in html
    assert "55.1" in html and "–" in html
    assert "row_heading" not in html  # no index column


def test_settings_table_lists_fields_not_code():
    from dataclasses import dataclass, field

    @dataclass
    class Inner:
        G: int = 6

    @dataclass
    class Config:
        method: str = "fgpo"
        inner: Inner = field(default_factory=Inner)
        lr: float = 0.1

        def validate(self):
            raise AssertionError("never called")

    from fgpo_core.reports.tables import settings_table

    t = settings_table(Config)
    assert t.setting.tolist() == ["method", "inner.G", "lr"]
    assert t.value.tolist() == ["'fgpo'", "6", "0.1"]
    assert settings_table(Config(lr=0.5)).value.tolist()[-1] == "0.5"
    assert plain(t, verbatim=["setting"]).setting.tolist() == ["method", "inner.G", "lr"]


def test_show_keeps_percentages_as_decimals_and_whole_means_of_counts_as_integers(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    show(pd.DataFrame({"calls per question": [4096.0, 3.34], "dead (%)": [100.0, 30.0]}))
    cells = [td.split(">")[-1] for td in shown[0].to_html().split("</td>")[:-1]]
    assert cells == ["4,096", "100.0", "3.3", "30.0"]


def test_show_gives_a_column_the_decimals_it_needs_up_to_digits(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    show(pd.DataFrame({"a": [76.0, 0.533], "b": [76.0, 65.5]}), 3)
    cells = [td.split(">")[-1] for td in shown[0].to_html().split("</td>")[:-1]]
    assert cells == ["76.000", "76.0", "0.533", "65.5"]
