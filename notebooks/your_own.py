# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Your tools, your questions
#
# Everything so far ran on the book's own tools and question suites. This chapter is the
# path for a reader who has neither: it writes questions of its own, a tool of its own, and
# takes them through the whole method with the library's public functions and its command
# line, editing nothing inside `fgpo_core`. The steps:
#
# 1. **Questions**: a JSONL file in schema v1, one question per line, checked by
#    `fgpo benchmark validate`.
# 2. **A tool**: a small Python class, registered with the library by name
#    (`fgpo_core.genomics.tools.register_tool`), put in slots beside built-in tools.
# 3. **A reasoner**: which frozen reader answers the questions, chosen by how well it reads
#    the new tool.
# 4. **Reward tables**: `fgpo table build --questions FILE --plugin TOOL.py --tools ...`,
#    the reasoner answering every question under every subset of the tools.
# 5. **A selector**: the policy-head selector of {doc}`head_study`
#    trained with FGPO (and, for contrast, GRPO and SFT) on the tables, over seeds, and
#    scored on the held-out questions with question-paired tests.
#
# The example is deliberately new to the book: 300-bp fragments of a bacterial genome,
# asked whether each is a protein-coding gene read on its own strand, the same gene read on
# the opposite strand, or DNA between genes. The tool that should matter is a gene caller
# run on the fragment itself, which no chapter has used.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the questions' fragments and option order
byo_train = 120  # training questions of one's own
byo_dev = 45  # dev questions (checkpoint choice)
byo_test = 150  # test questions
byo_seeds = 5  # seeds of each trained selector
byo_epochs = 20  # passes over the training questions
byo_dir = ""  # folder for the files this chapter writes ("": a fresh temporary folder)
byo_examples = "../examples/byo"  # the example's question maker and tool
reader_dir = "../data/readers/minilm-evidence"  # the trained evidence reader (the reasoner)

# %% tags=["hide-input"]
import importlib.util
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from fgpo_core.book.claims import claim, glue_number, glue_text
from fgpo_core.book.plots import plot_subsets_and_methods, set_style
from fgpo_core.cli import main as fgpo
from fgpo_core.evaluation.picks import tool_rates_by_family
from fgpo_core.experiments.byo import head_scores
from fgpo_core.genomics.benchmarks import read_questions
from fgpo_core.genomics.tools import library_from_names, load_plugin, references_from_file
from fgpo_core.reasoners import get_reasoner
from fgpo_core.reports.study import label, paired_tests, study_summary
from fgpo_core.reports.tables import show
from fgpo_core.selectors.features import load_features
from fgpo_core.table import load_table

# %% tags=["hide-input"]
set_style()
warnings.filterwarnings("ignore", message="IProgress not found")
warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")
os.environ["TQDM_DISABLE"] = "1"  # the commands' progress bars, in a rendered page
EXAMPLES = Path(byo_examples)
work = Path(byo_dir or tempfile.mkdtemp(prefix="fgpo-your-own-"))
work.mkdir(parents=True, exist_ok=True)
for name, value in (("n_train", byo_train), ("n_dev", byo_dev), ("n_test", byo_test), ("n_seeds", byo_seeds),
                    ("n_epochs", byo_epochs)):
    glue_number(name, value, 0)

# %% tags=["hide-input"]
def plain(text: str) -> str:
    """Output as on a reader's screen: the working folder reads as ``work/``, the examples as
    ``examples/byo``, and progress bars are left out."""
    text = text.replace(str(work), "work").replace(str(EXAMPLES.resolve()), "examples/byo").replace(
        str(EXAMPLES), "examples/byo")
    return "\n".join(line for line in text.replace("\r", "\n").splitlines()
                     if line.strip() and "%|" not in line)


def quietly(fn, *args):
    """Run ``fn(*args)`` and print what it printed, as :func:`plain` shows it; returns its result."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        result = fn(*args)
    if out.getvalue().strip():
        print(plain(out.getvalue()))
    return result


def shell(*args: str) -> None:
    """Show a command as a reader would type it, then run it through the same entry point."""
    print("$ fgpo " + plain(" ".join(args)))
    code = quietly(fgpo, list(args))
    if code:
        raise RuntimeError(f"fgpo {args[0]} exited with status {code}")


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# %% [markdown]
# ## 1. Questions in schema v1
#
# A question is one JSON object: an `id`, its `suite`, `split` and `family`, a `shape`
# (`describe`: one sequence and four label options), the question text (which contains the
# sequence), four options, the answer's letter and the sequences the tools run on. The
# example's maker, `examples/byo/make_questions.py`, calls genes with pyrodigal on a genome
# the `pyrodigal` package ships and cuts fragments by coordinate: training questions from
# the first 60% of the genome, dev from the next 10% and test from the last 30%, so no two
# splits share DNA. This page makes {glue:text}`n_train` training, {glue:text}`n_dev` dev
# and {glue:text}`n_test` test questions. Its question writer:

# %%
maker = load_example("make_questions")
source = Path(maker.__file__).read_text()
print("def question" + source.split("def question", 1)[1].split("\n\n\n")[0])
quietly(maker.main, ["--out", str(work / "questions"), "--seed", str(seed),
                     "--n-train", str(byo_train), "--n-dev", str(byo_dev),
                     "--n-test", str(byo_test)])
files = {s: work / "questions" / f"{s}.jsonl" for s in ("train", "dev", "test")}
first = json.loads(files["train"].read_text().splitlines()[0])
first.update(question=first["question"][:90] + "...", sequences={"": "..."})
print(json.dumps(first, indent=1))

# %% [markdown]
# Any file in the schema, the book's or anyone's, is checked line by line; an error names
# the line and the field:

# %%
shell("benchmark", "validate", *map(str, files.values()))

# %% [markdown]
# ## 2. A tool of one's own
#
# A tool is any object with a `name`, a `title`, a `version` and `run(ToolInput) ->
# Evidence`; the library renders every tool's evidence the same way, so the reasoner reads
# a new tool exactly as it reads the built-in ones. This one runs pyrodigal's gene finder in
# its metagenomic mode (pre-trained models, nothing fitted to this genome) on the fragment
# alone. Registering the class under its name lets a library, or the command line, put it in
# a slot:

# %%
code = (EXAMPLES / "gene_tool.py").read_text().rstrip()
display(Markdown(f"`examples/byo/gene_tool.py`\n\n```python\n{code}\n```"))

# %% [markdown]
# The library here has three slots: the built-in composition tool (T1), the new
# gene caller, and the built-in genomic expert (T4), whose labelled reference
# sequences come from the training file itself (each training fragment labelled with its
# correct option). What the three say about the first training question:

# %%
load_plugin(EXAMPLES / "gene_tool.py")
TOOLS = "composition,gene_call,expert"
references, _ = references_from_file(files["train"])
library = library_from_names(TOOLS.split(","), references=references)
q0 = read_questions(files["train"])[0]
print(library.evidence(q0.tool_input(), library.space.n_actions - 1))
print(f"\nAnswer: {q0.options[q0.answer]}")

# %% [markdown]
# ## 3. Choosing the reasoner
#
# The book's evidence reader was trained on the evidence of the book's own four tools; a
# new tool's text is new to it. The zero-shot MiniLM reader (`--reasoner minilm`) was
# trained on nothing of the kind. Before paying for whole tables, both answer the dev
# questions once with no evidence and once with the gene caller's alone:

# %% tags=["hide-input"]
dev_qs = read_questions(files["dev"])
gene_only = 1 << TOOLS.split(",").index("gene_call")
probe = {}
for name in (f"reader:{reader_dir}", "minilm"):
    reasoner = get_reasoner(name)
    probe["evidence reader" if name.startswith("reader") else "zero-shot MiniLM"] = {
        what: 100 * float(np.mean([o.letter == q.answer for o, q in zip(
            reasoner.answer([(q, library.evidence(q.tool_input(), m)) for q in dev_qs]), dev_qs)]))
        for what, m in (("no evidence", 0), ("gene caller only", gene_only))}
probe = pd.DataFrame(probe).T
REASONER = "minilm" if probe.iloc[1, 1] > probe.iloc[0, 1] else f"reader:{reader_dir}"
show(probe.rename(columns=lambda c: f"dev accuracy, {c} (%)").rename_axis("reasoner"))

# %% tags=["remove-cell"]
_ = glue_text("reasoner_name", probe.index[1] if REASONER == "minilm" else probe.index[0])

# %% [markdown]
# The tables below are built with whichever reader is the more accurate with the gene
# caller's evidence alone: here the {glue:text}`reasoner_name` reader.

# %% [markdown]
# ## 4. Reward tables
#
# One command per split builds the exhaustive table: every question answered by the frozen
# reasoner under each of the $2^3 = 8$ subsets, resumable and checksummed like the book's own
# tables. `--references` gives the expert its labelled sequences (without it the command
# warns that the expert would answer "No labelled reference set" on every question).

# %%
for split, path in files.items():
    shell("table", "build", "--questions", str(path),
          "--plugin", str(EXAMPLES / "gene_tool.py"), "--tools", TOOLS,
          "--references", str(files["train"]), "--reasoner", REASONER,
          "--out", str(work / "tables" / split))
tables = {s: load_table(work / "tables" / s) for s in files}
baselines = tables["test"].baselines()
subset_names = tables["test"].labels()
subsets = [subset_names[a] if a >= 0 else "–" for a in baselines.subset]
show(baselines.assign(subset=subsets).rename_axis("baseline"), 2)

# %% [markdown]
# ## 5. A selector trained on them
#
# The selector's prompt (the question, its options and three anonymous slots) is encoded
# once by the frozen sentence encoder; the policy head on top is trained with FGPO's exact
# objective over all 8 subsets, and with GRPO's sampled groups and SFT on the table's best
# subset for contrast, each over several seeds, the checkpoint chosen on dev:

# %%
shell("features", *[a for s, p in files.items() for a in ("--questions", f"{s}={p}")],
      "--n-tools", "3", "--out", str(work / "features"))
features = load_features(work / "features")
scores = head_scores(features, tables, methods=("fgpo", "grpo", "sft"),
                     seeds=range(byo_seeds), epochs=byo_epochs)
scores["method"] = scores["method"].map(label)
summary = study_summary(scores)
show(summary[["test"]].rename(columns={"test": "test accuracy (%), mean ± sd"}))

# %% [markdown]
# Each method trained with {glue:text}`n_seeds` seeds for {glue:text}`n_epochs` epochs.

# %% tags=["hide-input"]
fixed = tables["test"].fixed_subset_accuracy()
fig = plot_subsets_and_methods(fixed, scores, float(baselines.loc["Oracle", "accuracy"]))

# %% [markdown]
# Question-paired tests on the test questions (exact McNemar within each seed), FGPO
# against each other method:

# %% tags=["hide-input"]
show(paired_tests(scores, ref=label("fgpo"), suite="test").rename_axis("FGPO against"),
     **{"median p": "{:.3f}", "largest p": "{:.3f}"})

# %% tags=["remove-cell"]
mean = summary["test mean"]
all_tools = float(baselines.loc["All-Tools", "accuracy"])
glue_number("byo_test_n", tables["test"].n_questions, 0)
glue_number("byo_fgpo", mean[label("fgpo")])
glue_number("byo_grpo", mean[label("grpo")])
glue_number("byo_sft", mean[label("sft")])
glue_number("byo_best", fixed.max())
glue_text("byo_best_subset", fixed.idxmax())
glue_number("byo_all", all_tools)
glue_number("byo_none", float(baselines.loc["No-Tool", "accuracy"]))
_ = glue_number("byo_oracle", float(baselines.loc["Oracle", "accuracy"]))

# %% [markdown]
# On these {glue:text}`byo_test_n` test questions FGPO's selector scores
# {glue:text}`byo_fgpo`%, GRPO's {glue:text}`byo_grpo`% and SFT's {glue:text}`byo_sft`%.
# For reference, the best fixed subset, {glue:text}`byo_best_subset`, scores
# {glue:text}`byo_best`%, All-Tools {glue:text}`byo_all`%, No-Tool {glue:text}`byo_none`% and
# the oracle {glue:text}`byo_oracle`%. Which subsets help is the reasoner's reading of each
# tool's evidence, which the fixed-subset bars show directly: a subset with more tools is
# not always a better one, and All-Tools lies below the best fixed subset.

# %% tags=["remove-input"]
claim("more-tools-not-better", all_tools < fixed.max(), "All-Tools scores below the best fixed subset")

# %% [markdown]
# What the trained selector calls, by the question's correct answer (FGPO, seed 0), beside
# the oracle's choice (the table's Eq. 1-optimal subset of each question). Where the
# reasoner's answer without evidence is already right, that optimum is the empty subset:
# Eq. 1 charges every tool.

# %% tags=["hide-input"]
test_qs = read_questions(files["test"])
by_answer = [q.options[q.answer] for q in test_qs]
fg0 = scores[(scores.method == label("fgpo")) & (scores.seed == 0)].iloc[0]
names = TOOLS.split(",")
show(pd.concat({"FGPO": tool_rates_by_family(fg0.picks, by_answer, names),
                "oracle": tool_rates_by_family(tables["test"].oracle_actions(), by_answer, names)},
               axis=1).rename_axis("answer"), 0)

# %% [markdown]
# ## What to take from this
#
# Nothing above touched `fgpo_core`: the questions are a file, the tool is a class in a file
# registered by name, and every step is a public function or a command. The same commands
# scale to the book's own sizes: a table costs $2^n$ reasoner calls per question (8 here),
# paid once, after which every method's training is table look-ups. With more than five or
# six tools the enumeration itself becomes the cost, which is where the book's method, as
# the paper says, needs compact candidate sets of subsets instead of all of them.
