"""Glued numbers read as a reader wants them; a failed claim leaves its mark; the book's one rule
for a difference agrees with scipy's tests."""

import math

import nbformat
import numpy as np
import pytest
from IPython.utils.capture import capture_output
from scipy.stats import binomtest, ttest_rel

from fgpo_core.book.claims import CLAIM_FAILED, claim, failed_claims, fmt_number, fmt_p, glue_number, glue_p
from fgpo_core.evaluation.difference import compare


@pytest.mark.parametrize(
    "value, digits, signed, text",
    [
        (51.28, 1, False, "51.3"),
        (-0.04, 1, False, "0.0"),
        (-0.04, 1, True, "+0.0"),
        (2.16, 1, True, "+2.2"),
        (-7.18, 2, True, "−7.18"),
        (1000, 0, False, "1,000"),
        (float("nan"), 1, False, "–"),
        (None, 1, False, "–"),
    ],
)
def test_numbers_read_without_nan_or_negative_zero(value, digits, signed, text):
    assert fmt_number(value, digits, signed) == text


@pytest.mark.parametrize(
    "p, text",
    [
        (0.0, "< 0.001"),
        (0.00049, "< 0.001"),
        (0.0123, "0.012"),
        (0.05, "0.05"),
        (0.4567, "0.46"),
        (1.0, "1.00"),
        (math.nan, "–"),
    ],
)
def test_p_values(p, text):
    assert fmt_p(p) == text


def _outputs(captured):
    return [nbformat.v4.new_output("display_data", data=o.data, metadata=o.metadata) for o in captured.outputs]


def test_glue_stores_the_formatted_text():
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.instance()  # glue displays through the shell, as in a kernel
    with capture_output() as cap:
        glue_number("x", 51.28)
        glue_p("p", 0.00001)
    plain = [o.data["application/papermill.record/text/plain"] for o in cap.outputs]
    assert plain == ["'51.3'", "'< 0.001'"]  # quoted: the glue:text role literal-evals it
    assert all(o.metadata.get("scrapbook", {}).get("name") in ("x", "p") for o in cap.outputs)


def test_a_claim_that_holds_shows_nothing_and_one_that_fails_leaves_its_mark():
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.instance()  # a claim displays through the shell, as in a kernel, whatever ran before
    with capture_output() as ok:
        assert claim("ahead", True, "FGPO is ahead") is None
    assert not ok.outputs
    with capture_output() as bad:
        claim("ahead-id", 1 > 2, "FGPO is ahead <in domain>")
    html = bad.outputs[0].data["text/html"]
    assert CLAIM_FAILED in html and "&lt;in domain&gt;" in html
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("", outputs=_outputs(ok)),
            nbformat.v4.new_code_cell("", outputs=_outputs(bad)),
        ]
    )
    assert failed_claims(nb) == ["ahead-id"]


def _vectors(rng, n, p_a, p_b, seeds):
    return ([rng.random(n) < p_a for _ in range(seeds)], [rng.random(n) < p_b for _ in range(seeds)])


def test_compare_agrees_with_scipy():
    rng = np.random.default_rng(0)
    a, b = _vectors(rng, 400, 0.6, 0.5, 5)
    v = compare(a, b)
    acc_a, acc_b = [100 * x.mean() for x in a], [100 * x.mean() for x in b]
    assert v.gap == pytest.approx(np.mean(acc_a) - np.mean(acc_b))
    assert v.p_seeds == pytest.approx(ttest_rel(acc_a, acc_b).pvalue)
    for x, y, p in zip(a, b, v.p_mcnemar):
        k, m = int((x & ~y).sum()), int((x ^ y).sum())
        assert p == pytest.approx(binomtest(k, m, 0.5).pvalue)
    assert v.is_difference and v.a_better and not v.b_better


def test_seeds_that_agree_exactly_need_mcnemar_too():
    # a deterministic method: every seed the same vectors; a gap of 2 questions in 400
    a = np.zeros(400, bool)
    a[:2] = True
    b = np.zeros(400, bool)
    v = compare([a] * 5, [b] * 5)
    assert v.p_seeds == 0.0  # the t-test alone would call it a difference
    assert not v.is_difference


def test_one_seed_is_mcnemar_alone_and_bad_input_is_refused():
    rng = np.random.default_rng(1)
    a, b = _vectors(rng, 300, 0.7, 0.4, 1)
    assert compare(a, b).is_difference and math.isnan(compare(a, b).p_seeds)
    with pytest.raises(ValueError):
        compare(a, b * 2)
    with pytest.raises(ValueError):
        compare([np.ones(3, bool)], [np.ones(4, bool)])
