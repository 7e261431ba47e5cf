"""Chapters: Jupytext pairs in sync, one parameters cell, profiles that fit, and headless execution."""

import os
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml
from jupytext.compare import compare_notebooks

from fgpo_core.book.build import PROFILES, REPO_ROOT, chapters, declared_parameters, execute_chapter, load_profile
from fgpo_core.book.claims import failed_claims

NB = REPO_ROOT / "notebooks"
SOURCES = sorted(NB.glob("*.py"))


def test_every_toc_chapter_has_a_source_and_every_source_is_in_the_toc():
    assert chapters(), "the table of contents lists no chapter"
    assert sorted(chapters()) == sorted(p.stem for p in SOURCES)


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_pair_is_in_sync(py):
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.exists(), f"{py.name} has no paired .ipynb"
    compare_notebooks(jupytext.read(ipynb), jupytext.read(py), fmt="py:percent")
    nb = nbformat.read(ipynb, as_version=4)
    assert nb.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the pair without outputs"


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_every_claim_sits_where_its_warning_would_show(py):
    # a claim's warning box is its cell's output: a cell whose output is removed would hide it
    hidden = [
        i
        for i, c in enumerate(jupytext.read(py).cells)
        if c.cell_type == "code"
        and "claim(" in c.source
        and {"remove-cell", "remove-output"} & set(c.metadata.get("tags", []))
    ]
    assert not hidden, f"{py.stem}: claims in cells whose output is removed: {hidden}"


@pytest.mark.parametrize("py", SOURCES, ids=lambda p: p.stem)
def test_exactly_one_parameters_cell(py):
    nb = jupytext.read(py)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assert "profile" in declared_parameters(nb)


def test_cpu_profile_equals_the_embedded_defaults():
    cpu = load_profile("cpu")
    for py in SOURCES:
        defaults = declared_parameters(jupytext.read(py))
        for k, v in defaults.items():
            assert cpu.get(k) == v, f"{py.stem}: parameter {k} = {v!r} but profiles/cpu.yaml says {cpu.get(k)!r}"


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_key_is_declared_somewhere(profile):
    declared = set()
    for py in SOURCES:
        declared |= set(declared_parameters(jupytext.read(py)))
    data = yaml.safe_load((REPO_ROOT / "profiles" / f"{profile}.yaml").read_text())
    assert set(data) <= declared, f"{profile}.yaml sets parameters no chapter declares: {set(data) - declared}"
    assert data["profile"] == profile


@pytest.mark.notebook
@pytest.mark.parametrize("name", chapters())
def test_chapter_executes_under_ci(name, tmp_path):
    # with FGPO_EXECUTED_DIR set (CI does), the executed chapters are kept there for rendering
    out = Path(os.environ.get("FGPO_EXECUTED_DIR") or tmp_path)
    res = execute_chapter(name, load_profile("ci"), out)
    assert res.ok, res.message
    nb = nbformat.read(out / f"{name}.ipynb", as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    assert not failed_claims(nb), f"{name}: claims that no longer hold: {failed_claims(nb)}"
    hidden = [c for c in nb.cells if "remove-cell" in c.metadata.get("tags", [])]
    assert any("parameters" in c.metadata["tags"] for c in hidden)
    assert any("injected-parameters" in c.metadata["tags"] for c in hidden)
