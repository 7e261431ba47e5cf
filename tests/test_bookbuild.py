"""`fgpo book` reports a failing chapter by name and cell, and filters profile parameters."""
import textwrap

import pytest

from fgpo_core.book import build as bookbuild
from fgpo_core.cli import main

FAILING = textwrap.dedent('''\
    # %% [markdown]
    # # A chapter that fails

    # %% tags=["parameters"]
    profile = "cpu"
    n_questions = 10

    # %%
    x = n_questions * 2

    # %%
    raise RuntimeError(f"boom at {x}")
    ''')


@pytest.fixture
def fake_root(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "broken.py").write_text(FAILING)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: executed/broken\n")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "ci.yaml").write_text("profile: ci\nn_questions: 3\nepochs: 1\n")
    return tmp_path


def test_failure_names_chapter_and_cell(fake_root):
    res = bookbuild.execute_chapter("broken", {"n_questions": 3, "epochs": 1, "profile": "ci"},
                                    fake_root / "executed", fake_root)
    assert not res.ok
    assert "chapter 'broken'" in res.message and "RuntimeError" in res.message and "boom at 6" in res.message
    assert "cell" in res.message and 'raise RuntimeError' in res.message


def test_build_returns_nonzero_and_reports(fake_root, capsys):
    code = bookbuild.build_book("ci", root=fake_root, html=False)
    assert code == 1
    assert "chapter 'broken' failed" in capsys.readouterr().err


def test_unknown_profile_and_chapter(fake_root):
    with pytest.raises(ValueError, match="unknown profile"):
        bookbuild.load_profile("tpu", fake_root)
    with pytest.raises(SystemExit, match="unknown chapter"):
        bookbuild.build_book("ci", only=["nope"], root=fake_root, html=False)


def test_cli_parses_book_arguments(monkeypatch):
    called = {}
    monkeypatch.setattr(bookbuild, "build_book", lambda *a, **k: called.setdefault("args", (a, k)) and 0)
    assert main(["book", "--profile", "ci", "--chapter", "dead_groups", "--no-html"]) == 0
    (profile, only), kw = called["args"]
    assert profile == "ci" and only == ["dead_groups"] and kw == {"execute": True, "html": False, "cache": True}


GOOD = textwrap.dedent('''\
    # %% [markdown]
    # # A chapter that reads a data file

    # %% tags=["parameters"]
    profile = "cpu"
    data_file = "../data/x.txt"

    # %%
    print(open(data_file).read())
    ''')


def test_cache_skips_unchanged_chapters_and_reexecutes_changed_ones(fake_root, capsys):
    (fake_root / "notebooks" / "good.py").write_text(GOOD)
    (fake_root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: executed/good\n")
    (fake_root / "data").mkdir()
    data = fake_root / "data" / "x.txt"
    data.write_text("first")
    assert bookbuild.build_book("ci", root=fake_root, html=False) == 0
    assert "executing good" in capsys.readouterr().out
    assert (fake_root / "book" / "cache" / "ci" / "good.ipynb").exists()
    (fake_root / "executed" / "good.ipynb").unlink()
    assert bookbuild.build_book("ci", root=fake_root, html=False) == 0
    out = capsys.readouterr().out
    assert "taken from" in out and "executing" not in out
    assert (fake_root / "executed" / "good.ipynb").exists()  # copied from the cache
    data.write_text("second")  # an input changed: the chapter runs again and shows the new data
    assert bookbuild.build_book("ci", root=fake_root, html=False) == 0
    assert "executing good" in capsys.readouterr().out
    assert "second" in (fake_root / "executed" / "good.ipynb").read_text()
    (fake_root / "notebooks" / "good.py").write_text(GOOD + "\n# %%\nprint(1)\n")  # the source changed
    assert bookbuild.build_book("ci", root=fake_root, html=False) == 0
    assert "executing good" in capsys.readouterr().out
    assert bookbuild.build_book("ci", root=fake_root, html=False, cache=False) == 0  # --no-cache
    assert "executing good" in capsys.readouterr().out


def test_chapter_inputs_follow_parameters(fake_root):
    (fake_root / "notebooks" / "good.py").write_text(GOOD)
    (fake_root / "data").mkdir()
    (fake_root / "data" / "x.txt").write_text("a")
    a = bookbuild.chapter_inputs("good", {"data_file": "../data/x.txt", "unrelated": 1}, fake_root)
    b = bookbuild.chapter_inputs("good", {"data_file": "../data/x.txt"}, fake_root)
    assert a == b  # a parameter the chapter does not declare changes nothing
    assert "data_file" in a["data"]
    c = bookbuild.chapter_inputs("good", {"data_file": "../data/x.txt", "profile": "ci"}, fake_root)
    assert bookbuild.chapter_key(c) != bookbuild.chapter_key(a)
