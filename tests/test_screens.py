"""The screenshot check: a blank drawing is caught, a missing browser or book is one line and exit 2."""

import shutil

import numpy as np
import pytest
from PIL import Image

from fgpo_core.book import screens


def test_a_blank_page_is_caught_and_a_drawn_one_is_not(tmp_path):
    blank, drawn = tmp_path / "blank.png", tmp_path / "drawn.png"
    Image.fromarray(np.full((60, 80), 255, np.uint8)).save(blank)
    stripes = np.full((60, 80), 255, np.uint8)
    stripes[::6] = 0  # lines of text
    Image.fromarray(stripes).save(drawn)
    assert screens.is_blank(blank) and not screens.is_blank(drawn)


def test_no_browser_or_no_book_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "html" / "executed").mkdir(parents=True)
    if shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome"):
        assert screens.main([str(tmp_path / "html"), str(tmp_path / "out")]) == 2  # a book with no chapters
        assert "no rendered chapters" in capsys.readouterr().err
    monkeypatch.setattr(screens.shutil, "which", lambda name: None)
    assert screens.main([str(tmp_path / "html"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Chromium" in err


@pytest.mark.skipif(not shutil.which("chromium"), reason="needs a Chromium")
def test_a_rendered_page_is_drawn(tmp_path):
    page = tmp_path / "html" / "executed" / "page.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html><body><h1>Dead groups</h1>" + "<p>text of a chapter</p>" * 40 + "</body></html>")
    assert screens.main([str(tmp_path / "html"), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "page.png").exists()
