"""The rendered-page scan finds what must not reach a reader, and leaves code inputs alone."""

import pytest

from fgpo_core.book.claims import CLAIM_FAILED
from fgpo_core.book.scan import main, page_text, scan_text

PAGE = """<html><body><main><p>FGPO scores 51.3%.</p>
<div class="cell docutils container"><div class="cell_input docutils container">
<pre>x = np.nan  # /tmp/study warnings.warn("x")</pre></div>
<div class="cell_output docutils container"><pre>{out}</pre></div></div></main></body></html>"""


@pytest.mark.parametrize(
    "out, problem",
    [
        ("accuracy NaN", "NaN"),
        ("1.0 nan 2.0", "NaN"),
        ("written to /tmp/fgpo-study-x1", "a machine path"),
        ("fgpo: 45%|████▌     | 9/20 [00:03<00:04, 2.9it/s]", "a progress bar"),
        ("UserWarning: IProgress not found", "a Python warning"),
        ("after 1 epoch(s)", "a generated plural"),
        ("GRPO's run has not landed yet.", "run bookkeeping"),
        ("np.float64(1.561)", "a stray return value"),
        ("&lt;pandas.io.formats.style.Styler object at 0x7f11&gt;", "a stray return value"),
    ],
)
def test_each_problem_is_found_in_outputs(out, problem):
    text, failed = page_text(PAGE.format(out=out))
    assert not failed
    assert [p.split(":")[0] for p in scan_text(text)] == [problem]


def test_code_inputs_and_ordinary_words_are_not_problems():
    text, _ = page_text(
        PAGE.format(out="nanometre-scale? No: Nancy's financial scan, np.nanmean, 3 tools, f(s)")
        + '<main><div class="highlight-python"><pre>x = float("nan")</pre></div></main>'
    )
    assert scan_text(text) == []


def test_a_failed_claim_fails_the_scan(tmp_path):
    page = PAGE.format(out="").replace(
        "</main>",
        f'<div class="admonition warning {CLAIM_FAILED}"><p>A claim on this page no longer holds</p></div></main>',
    )
    (tmp_path / "executed").mkdir()
    (tmp_path / "executed" / "x.html").write_text(page)
    assert main([str(tmp_path)]) == 1
    (tmp_path / "executed" / "x.html").write_text(PAGE.format(out="fine"))
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path / "nowhere")]) == 2


# --- the reader's checks: each finds its problem in a small page, and passes the page without it ---

from PIL import Image  # noqa: E402

from fgpo_core.book import scan_checks as sc  # noqa: E402
from fgpo_core.book.scan import CHECKS, scan_book  # noqa: E402

CHAPTER = """<html><head>{head}</head><body><main><article><h1>{title}<a class="headerlink" href="#">#</a></h1>
{body}</article></main></body></html>"""


def book(tmp_path, pages: dict, png_width: int | None = None):
    """A rendered book: ``executed/NAME.html`` for each page (title, body), and one picture."""
    (tmp_path / "executed").mkdir(exist_ok=True)
    (tmp_path / "_images").mkdir(exist_ok=True)
    if png_width:
        Image.new("RGB", (png_width, 50), "white").save(tmp_path / "_images" / "fig.png")
    for name, (title, body) in pages.items():
        head = body.pop("head", "") if isinstance(body, dict) else ""
        text = body["body"] if isinstance(body, dict) else body
        (tmp_path / "executed" / f"{name}.html").write_text(CHAPTER.format(head=head, title=title, body=text))
    return tmp_path


def problems(tmp_path, check: str) -> list[str]:
    return [p for ps in scan_book(tmp_path, [check]).values() for p in ps]


def test_reading_time_counts_prose_code_tables_and_figures():
    prose = "<p>" + "word " * 180 + "</p>"
    code = '<div class="highlight"><pre>' + "x = 1\n" * 40 + "</pre></div>"
    table = "<table>" + "<tr><td>1</td><td>2</td><td>3</td></tr>" * 20 + "</table>"
    folded = '<details class="hide"><div class="highlight"><pre>' + "y = 2\n" * 400 + "</pre></div></details>"
    page = CHAPTER.format(head="", title="T", body=prose + code + table + folded + '<img src="a.png" alt="a chart">')
    assert sc.reading_minutes(page) == pytest.approx(1 + 1 + 1 + 0.75 + 1 / 180)  # the title's word; folded code not


def test_a_long_chapter_and_a_long_book_fail(tmp_path):
    long = "<p>" + "word " * (180 * 16) + "</p>"
    book(
        tmp_path,
        {f"c{i}": (f"Chapter {i}", long if i == 0 else "<p>" + "word " * (180 * 14) + "</p>") for i in range(11)},
    )
    found = scan_book(tmp_path, ["reading-time"])
    assert list(found) == ["executed/c0.html", "book"] and "over 15" in found["executed/c0.html"][0]
    assert "over 150" in found["book"][0]


def test_a_figure_shown_below_70_percent_of_its_width_fails(tmp_path):
    body = '<div class="cell_output"><img src="../_images/fig.png" alt="accuracy against epochs"/></div>'
    book(tmp_path, {"c": ("C", body)}, png_width=1300)
    assert problems(tmp_path, "figure-width") == [
        "figure-width: a figure drawn 1300 px wide is shown at 53% (fig.png…)"
    ]
    book(tmp_path, {"c": ("C", body)}, png_width=700)
    assert problems(tmp_path, "figure-width") == []
    book(tmp_path, {"c": ("C", body.replace("<img ", '<img style="width: 1200px;" '))}, png_width=700)
    assert len(problems(tmp_path, "figure-width")) == 1  # drawn by its width attribute, not the file's


def test_small_text_and_a_file_name_for_alt_text_fail(tmp_path):
    book(
        tmp_path,
        {
            "c": (
                "C",
                '<div class="cell_output"><img class="fgpo-small-text" src="../_images/f.png" '
                'alt="../_images/f.png"/></div>',
            )
        },
    )
    assert len(problems(tmp_path, "figure-text")) == 1 and len(problems(tmp_path, "figure-alt")) == 1
    book(
        tmp_path,
        {
            "c": (
                "C",
                '<div class="cell_output"><img src="../_images/f.png" alt="Dev accuracy of FGPO '
                'and GRPO against epochs"/></div>',
            )
        },
    )
    assert problems(tmp_path, "figure-text") == [] and problems(tmp_path, "figure-alt") == []


def test_a_wide_visible_code_input_fails_and_a_folded_one_or_a_wrapped_output_does_not(tmp_path):
    wide = '<div class="cell_input"><div class="highlight"><pre>' + "x" * 89 + "</pre></div></div>"
    book(tmp_path, {"c": ("C", wide)})
    assert len(problems(tmp_path, "code-width")) == 1
    output = '<div class="cell_output"><div class="highlight"><pre>' + "x" * 200 + "</pre></div></div>"
    book(tmp_path, {"c": ("C", output)})  # outputs wrap at the column (fgpo.css)
    assert problems(tmp_path, "code-width") == []
    book(
        tmp_path,
        {"c": ("C", f'<details class="hide">{wide}</details><div class="highlight"><pre>' + "x" * 88 + "</pre></div>")},
    )
    assert problems(tmp_path, "code-width") == []


def test_chapter_titles_must_be_links_to_chapters_that_exist(tmp_path):
    pages = {
        "a": (
            "FGPO versus GRPO",
            "<p>See the chapter “Exact versus sampled, with no model” and "
            "“The tool library”, and <a href='gone.html'>this</a>.</p>",
        ),
        "b": ("The tool library", "<p>As “<a href='a.html'>FGPO versus GRPO</a>” shows, a “keep” column.</p>"),
    }
    book(tmp_path, pages)
    found = scan_book(tmp_path, ["chapter-links"])
    assert list(found) == ["executed/a.html"]
    assert [p.split(":")[1].strip() for p in found["executed/a.html"]] == [
        "a quoted chapter that does not exist",
        "a chapter named but not linked",
        "a link to a page that does not exist",
    ]


def test_a_count_printed_as_a_float_fails(tmp_path):
    book(
        tmp_path,
        {
            "c": (
                "C",
                "<p>GRPO paid 320000.0 calls; 4,096.0 subsets; 52.0% and 0.5; 2026.</p>"
                "<table><tr><td>1,024.00</td></tr></table>",
            )
        },
    )
    assert problems(tmp_path, "float-counts") == [
        f"float-counts: a count printed as a float: {n}" for n in ("320000.0", "4,096.0", "1,024.00")
    ]
    book(
        tmp_path,
        {
            "c": (
                "C",
                '<p>GRPO paid 320,000 calls at 52.0% accuracy.</p><div class="highlight"><pre>x = 4096.0</pre></div>',
            )
        },
    )
    assert problems(tmp_path, "float-counts") == []


def test_anything_loaded_from_the_network_fails(tmp_path):
    head = (
        '<script>const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"</script>'
        '<link rel="stylesheet" href="https://cdn.example.org/x.css"><link rel="canonical" href="https://b.org/">'
    )
    book(
        tmp_path,
        {
            "c": (
                "C",
                {
                    "head": head,
                    "body": '<p><a href="https://arxiv.org/abs/2609.10221">the paper</a>'
                    '</p><img src="//cdn.example.org/i.png" alt="a picture">',
                },
            )
        },
    )
    assert problems(tmp_path, "external-urls") == [
        "external-urls: loads https://cdn.example.org/x.css",
        "external-urls: loads //cdn.example.org/i.png",
        "external-urls: an inline script names https://unpkg.com/thebe@0.8.2/lib/index.js",
    ]
    book(tmp_path, {"c": ("C", {"head": '<script src="../_static/x.js"></script>', "body": "<p>ok</p>"})})
    assert problems(tmp_path, "external-urls") == []


def test_checks_are_chosen_by_name(tmp_path, capsys):
    book(tmp_path, {"c": ("C", "<p>4,096.0 subsets</p>")})
    assert main([str(tmp_path), "--only", "float-counts"]) == 1
    assert main([str(tmp_path), "--skip", "float-counts"]) == 0
    assert main([str(tmp_path), "--only", "no-such-check"]) == 2
    assert "unknown check" in capsys.readouterr().err
    assert set(CHECKS) >= {
        "text",
        "reading-time",
        "figure-width",
        "figure-text",
        "figure-alt",
        "code-width",
        "chapter-links",
        "float-counts",
        "external-urls",
    }


def test_a_bare_return_value_under_a_cell_is_a_stray_and_printed_text_is_not(tmp_path):
    def out(kind, text):
        return f'<div class="cell_output"><div class="output {kind}"><pre>{text}</pre></div></div>'

    book(tmp_path, {"c": ("C", out("text_plain", "3333.3333333333335"))})
    assert problems(tmp_path, "text") == ["a stray return value: …3333.3333333333335…"]
    book(tmp_path, {"c": ("C", out("stream", "52.75") + out("text_plain", "a table's caption"))})
    assert problems(tmp_path, "text") == []
