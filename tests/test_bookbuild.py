"""`fgpo book` reports a failing chapter by name and cell, filters profile parameters, and keys its cache
on each chapter's import closure."""

import hashlib
import json
import shutil
import textwrap

import pytest

from fgpo_core.book import build as bookbuild
from fgpo_core.cli import main

FAILING = textwrap.dedent("""\
    # %% [markdown]
    # # A chapter that fails

    # %% tags=["parameters"]
    profile = "cpu"
    n_questions = 10

    # %%
    x = n_questions * 2

    # %%
    raise RuntimeError(f"boom at {x}")
    """)


@pytest.fixture
def fake_root(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "broken.py").write_text(FAILING)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: executed/broken\n")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "ci.yaml").write_text("profile: ci\nn_questions: 3\nepochs: 1\n")
    return tmp_path


def test_failure_names_chapter_and_cell(fake_root):
    res = bookbuild.execute_chapter(
        "broken", {"n_questions": 3, "epochs": 1, "profile": "ci"}, fake_root / "executed", fake_root
    )
    assert not res.ok
    assert "chapter 'broken'" in res.message and "RuntimeError" in res.message and "boom at 6" in res.message
    assert "cell" in res.message and "raise RuntimeError" in res.message
    # the failing notebook is kept, with its error, and nothing half-written beside it
    assert [p.name for p in (fake_root / "executed").iterdir()] == ["broken.ipynb"]
    assert "boom at 6" in (fake_root / "executed" / "broken.ipynb").read_text()


def test_build_returns_nonzero_and_reports(fake_root, capsys):
    code = bookbuild.build_book("ci", root=fake_root, html=False)
    assert code == 1
    assert "chapter 'broken' failed" in capsys.readouterr().err


def test_unknown_profile_and_chapter(fake_root):
    with pytest.raises(ValueError, match="unknown profile"):
        bookbuild.load_profile("tpu", fake_root)
    with pytest.raises(ValueError, match="unknown chapter"):
        bookbuild.build_book("ci", only=["nope"], root=fake_root, html=False)


def test_cli_parses_book_arguments(monkeypatch):
    called = {}
    monkeypatch.setattr(bookbuild, "build_book", lambda *a, **k: called.setdefault("args", (a, k)) and 0)
    assert main(["book", "--profile", "ci", "--chapter", "dead_groups", "--no-html"]) == 0
    (profile, only), kw = called["args"]
    assert profile == "ci" and only == ["dead_groups"] and kw == {"execute": True, "html": False, "cache": True}


GOOD = textwrap.dedent("""\
    # %% [markdown]
    # # A chapter that reads a data file

    # %% tags=["parameters"]
    profile = "cpu"
    data_file = "../data/x.txt"

    # %%
    print(open(data_file).read())
    """)


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


def _package(root, files: dict) -> None:
    """Write ``files`` (path under ``root`` -> source) as a fake library."""
    for rel, src in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(src))


def test_import_closure_follows_imports_parents_lazy_names_and_dynamic_imports(tmp_path):
    from fgpo_core.import_closure import import_closure

    lib = tmp_path / "fgpo_core"
    _package(
        tmp_path,
        {
            "fgpo_core/__init__.py": "",
            "fgpo_core/a/__init__.py": """\
            import importlib
            _LAZY = {"Big": ".big"}
            def __getattr__(name):
                from .never import x  # not an import of its own: only _LAZY's names count
                return getattr(importlib.import_module(_LAZY[name], __name__), name)
            """,
            "fgpo_core/a/small.py": "from ..b import helper\n",
            "fgpo_core/a/big.py": "import fgpo_core.c.heavy\n",
            "fgpo_core/a/never.py": "",
            "fgpo_core/b.py": "def helper():\n    from .c import inner  # a function's import counts\n",
            "fgpo_core/c/__init__.py": "",
            "fgpo_core/c/heavy.py": "",
            "fgpo_core/c/inner.py": "",
            "fgpo_core/d/__init__.py": "",
            "fgpo_core/d/plug.py": "import importlib\ndef load(n):\n    return importlib.import_module(n)\n",
            "fgpo_core/d/other.py": "",
            "fgpo_core/e.py": "CONFIG = 'fgpo_core.d.other:Thing'\n",
            "fgpo_core/unused.py": "",
        },
    )

    def short(mods):
        return {m.replace("fgpo_core.", "") for m in mods}

    assert short(import_closure(["fgpo_core.a.small"], lib_root=lib)) == {
        "fgpo_core",
        "a",
        "a.small",
        "b",
        "c",
        "c.inner",
    }  # the parents' __init__ too, not a's lazy .big
    chapter = tmp_path / "chapter.py"
    chapter.write_text("import numpy\nfrom fgpo_core.a import Big\n")
    assert short(import_closure(sources=[chapter], lib_root=lib)) == {"fgpo_core", "a", "a.big", "c", "c.heavy"}
    chapter.write_text("import fgpo_core.a\n")  # the package as a name: its lazy names may be asked for
    assert "a.big" in short(import_closure(sources=[chapter], lib_root=lib))
    # a name only known when it runs: the whole package; a string naming a module: that module
    assert short(import_closure(["fgpo_core.d.plug"], lib_root=lib)) == {"fgpo_core", "d", "d.plug", "d.other"}
    assert short(import_closure(["fgpo_core.e"], lib_root=lib)) == {"fgpo_core", "e", "d", "d.other"}
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "broken.py").write_text("from fgpo_core.b import helper\nif\n")
    assert len(bookbuild.chapter_modules("broken", tmp_path)) == 14  # does not parse: every module


def test_the_real_lazy_packages_still_give_their_names():
    from fgpo_core.reasoners import REASONER_LABELS, get_reasoner
    from fgpo_core.selectors import LMSelector, selector_messages, shorten_sequences

    assert LMSelector.__module__ == "fgpo_core.selectors.lm" and callable(selector_messages)
    assert callable(shorten_sequences) and callable(get_reasoner) and "reader" in REASONER_LABELS
    with pytest.raises(ValueError, match="unknown reasoner"):
        get_reasoner("nosuch")


HEAD_CHAPTERS = ("dead_groups", "exact_vs_sampled", "head_study", "appendix", "past_enumeration")
"""Chapters of the policy head and the bandit: no LM selector in their import closure."""


def _edit_docstring(path) -> None:
    src = path.read_text()
    assert src.lstrip().startswith('"""'), f"{path} has no module docstring to edit"
    path.write_text(src.replace('"""', '"""An edited docstring. ', 1))


@pytest.fixture(scope="module")
def library_copy(tmp_path_factory):
    """A copy of the library and the chapters' sources, to edit."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(bookbuild.REPO_ROOT / "fgpo_core", root / "fgpo_core", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "notebooks").mkdir()
    for name in (*HEAD_CHAPTERS, "fgpo_vs_grpo"):
        shutil.copy(bookbuild.REPO_ROOT / "notebooks" / f"{name}.py", root / "notebooks")
    return root


def _keys(root) -> dict:
    from fgpo_core.experiments.study_inputs import training_code_digest

    keys = {n: bookbuild.chapter_key(bookbuild.chapter_inputs(n, {}, root)) for n in (*HEAD_CHAPTERS, "fgpo_vs_grpo")}
    return {**keys, "study": training_code_digest(root / "fgpo_core")}


def test_an_lm_only_docstring_edit_keeps_every_head_chapter_and_the_study_fingerprint(library_copy):
    from fgpo_core.experiments.study_inputs import training_modules

    lib = library_copy / "fgpo_core"
    for name in HEAD_CHAPTERS:
        modules = bookbuild.chapter_modules(name, library_copy)
        assert "fgpo_core.core.subsets" in modules and "fgpo_core.selectors.lm" not in modules, name
    assert "fgpo_core.selectors.lm" in bookbuild.chapter_modules("fgpo_vs_grpo", library_copy)
    study = training_modules(lib)
    assert "fgpo_core.core.estimators" in study and "fgpo_core.algorithms.head" in study
    assert not {"fgpo_core.selectors.lm", "fgpo_core.reasoners.causal_lm", "fgpo_core.algorithms.grpo"} & set(study)

    before = _keys(library_copy)
    _edit_docstring(lib / "selectors" / "lm.py")  # the LM selector: only the LM chapter re-executes
    after = _keys(library_copy)
    assert {n: after[n] for n in (*HEAD_CHAPTERS, "study")} == {n: before[n] for n in (*HEAD_CHAPTERS, "study")}
    assert after["fgpo_vs_grpo"] != before["fgpo_vs_grpo"]
    _edit_docstring(lib / "reasoners" / "causal_lm.py")  # the causal-LM reasoner: no study part retrains
    assert _keys(library_copy)["study"] == before["study"]

    _edit_docstring(lib / "core" / "estimators.py")  # the estimators: every head chapter and the study
    edited = _keys(library_copy)
    assert all(edited[n] != after[n] for n in (*HEAD_CHAPTERS, "study"))


def test_a_torn_cached_notebook_is_executed_again(fake_root, capsys):
    (fake_root / "notebooks" / "good.py").write_text(GOOD)
    (fake_root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: executed/good\n")
    (fake_root / "data").mkdir()
    (fake_root / "data" / "x.txt").write_text("first")
    assert bookbuild.build_book("ci", root=fake_root, html=False) == 0
    cached = fake_root / "book" / "cache" / "ci" / "good.ipynb"
    key = json.loads(cached.with_name("good.key.json").read_text())
    assert key["notebook_sha256"] == hashlib.sha256(cached.read_bytes()).hexdigest()
    capsys.readouterr()
    whole = cached.read_bytes()
    cached.write_bytes(whole[: len(whole) // 2])  # torn: the key still matches the inputs
    assert bookbuild.build_book("ci", root=fake_root, html=False) == 0
    captured = capsys.readouterr()
    assert "executing good" in captured.out and "does not match its key file" in captured.err
    assert "first" in (fake_root / "executed" / "good.ipynb").read_text()  # a whole notebook, not the torn one
    assert (
        hashlib.sha256(cached.read_bytes()).hexdigest()
        == json.loads(cached.with_name("good.key.json").read_text())["notebook_sha256"]
    )  # the cache was written again
    cached.with_name("good.key.json").write_text("[1, 2")  # a torn key file: a miss as well
    assert bookbuild.build_book("ci", root=fake_root, html=False) == 0
    assert "executing good" in capsys.readouterr().out


def test_a_profile_file_outside_profiles_never_writes_a_named_profiles_cache(fake_root, tmp_path_factory, capsys):
    (fake_root / "notebooks" / "good.py").write_text(GOOD)
    (fake_root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: executed/good\n")
    (fake_root / "data").mkdir()
    (fake_root / "data" / "x.txt").write_text("x")
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "ci.yaml"
    elsewhere.write_text("profile: ci\n")
    assert bookbuild.cache_name("ci", fake_root) == "ci"
    assert bookbuild.cache_name(str(fake_root / "profiles" / "ci.yaml"), fake_root) == "ci"  # the named profile's file
    name = bookbuild.cache_name(str(elsewhere), fake_root)
    assert name.startswith("file-") and name != bookbuild.cache_name(str(elsewhere.with_name("cpu.yaml")), fake_root)
    assert bookbuild.build_book(str(elsewhere), root=fake_root, html=False) == 0
    cache = fake_root / "book" / "cache"
    assert not (cache / "ci").exists() and (cache / name / "good.ipynb").exists()
    assert bookbuild.build_book(str(elsewhere), root=fake_root, html=False) == 0
    assert "taken from" in capsys.readouterr().out


def test_every_test_named_to_start_first_exists():
    # tests/conftest.py orders the slowest tests first under pytest-xdist; a renamed test would silently
    # fall back to its file's place and leave a long test for the end
    from conftest import SLOW_FIRST

    tests = bookbuild.REPO_ROOT / "tests"
    for key in SLOW_FIRST:
        file, func = key.split("::")
        func, _, param = func.partition("[")
        assert f"def {func}(" in (tests / file).read_text(), key
        assert not param or param[:-1] in bookbuild.chapters(), key
