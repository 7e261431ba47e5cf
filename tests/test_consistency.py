"""The cross-page check: a number two pages state is the same on both."""

import json
from pathlib import Path

from fgpo_core.book.consistency import SAME_QUANTITY, glued_values, inconsistencies

ROOT = Path(__file__).resolve().parent.parent


def _notebook(path: Path, glues: dict[str, str]) -> None:
    outputs = [
        {
            "output_type": "display_data",
            "metadata": {"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}},
            "data": {"application/papermill.record/text/plain": repr(value)},
        }
        for name, value in glues.items()
    ]
    cell = {"cell_type": "code", "source": "", "metadata": {}, "outputs": outputs, "execution_count": 1}
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_a_glue_name_two_chapters_share_must_agree(tmp_path):
    _notebook(tmp_path / "a.ipynb", {"gap": "+4.4", "own": "3"})
    _notebook(tmp_path / "b.ipynb", {"gap": "+4.4"})
    assert glued_values(tmp_path)["gap"] == {"a": "'+4.4'", "b": "'+4.4'"}
    assert inconsistencies(tmp_path, same={}) == []
    _notebook(tmp_path / "b.ipynb", {"gap": "+4.3"})
    (line,) = inconsistencies(tmp_path, same={})
    assert "'gap'" in line and "+4.3" in line and "+4.4" in line


def test_a_listed_quantity_must_agree_under_its_names(tmp_path):
    _notebook(tmp_path / "a.ipynb", {"lift": "+4.4"})
    _notebook(tmp_path / "b.ipynb", {"b_lift": "+4.4"})
    same = {"the lift": ("a:lift", "b:b_lift")}
    assert inconsistencies(tmp_path, same=same) == []
    _notebook(tmp_path / "b.ipynb", {"b_lift": "+4.5"})
    assert inconsistencies(tmp_path, same=same) == ["the lift differs between pages (a:lift: '+4.4'; b:b_lift: '+4.5')"]
    # a listed glue gone from its chapter is reported; a chapter not executed is not
    _notebook(tmp_path / "b.ipynb", {})
    assert inconsistencies(tmp_path, same=same) == ["the lift: b:b_lift is glued by no executed chapter"]
    assert inconsistencies(tmp_path, same={"x": ("a:lift", "c:lift")}) == []


def test_the_committed_book_states_each_shared_number_once():
    folder = ROOT / "book" / "cache" / "cpu"
    assert SAME_QUANTITY and inconsistencies(folder) == []
