"""The rendered-page scan finds what must not reach a reader, and leaves code inputs alone."""

import pytest

from fgpo_core.book.claims import CLAIM_FAILED
from fgpo_core.book.scan import main, page_text, scan_text

PAGE = """<html><body><main><p>FGPO scores 51.3%.</p>
<div class="cell docutils container"><div class="cell_input docutils container">
<pre>x = np.nan  # /tmp/study warnings.warn("x")</pre></div>
<div class="cell_output docutils container"><pre>{out}</pre></div></div></main></body></html>"""


@pytest.mark.parametrize("out, problem", [
    ("accuracy NaN", "NaN"), ("1.0 nan 2.0", "NaN"), ("written to /tmp/fgpo-study-x1", "a machine path"),
    ("fgpo: 45%|████▌     | 9/20 [00:03<00:04, 2.9it/s]", "a progress bar"),
    ("UserWarning: IProgress not found", "a Python warning"), ("after 1 epoch(s)", "a generated plural"),
    ("GRPO's run has not landed yet.", "run bookkeeping"), ("np.float64(1.561)", "a stray return value"),
    ("&lt;pandas.io.formats.style.Styler object at 0x7f11&gt;", "a stray return value")])
def test_each_problem_is_found_in_outputs(out, problem):
    text, failed = page_text(PAGE.format(out=out))
    assert not failed
    assert [p.split(":")[0] for p in scan_text(text)] == [problem]


def test_code_inputs_and_ordinary_words_are_not_problems():
    text, _ = page_text(PAGE.format(out="nanometre-scale? No: Nancy's financial scan, np.nanmean, 3 tools, f(s)")
                        + '<main><div class="highlight-python"><pre>x = float("nan")</pre></div></main>')
    assert scan_text(text) == []


def test_a_failed_claim_fails_the_scan(tmp_path):
    page = PAGE.format(out="") .replace("</main>", f'<div class="admonition warning {CLAIM_FAILED}"><p>'
                                                 "A claim on this page no longer holds</p></div></main>")
    (tmp_path / "executed").mkdir()
    (tmp_path / "executed" / "x.html").write_text(page)
    assert main([str(tmp_path)]) == 1
    (tmp_path / "executed" / "x.html").write_text(PAGE.format(out="fine"))
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path / "nowhere")]) == 2
