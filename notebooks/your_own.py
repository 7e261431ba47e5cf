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
# This chapter takes questions and a tool of one's own through the whole method, with the
# library's public functions and command line and no edit inside `fgpo_core`:
#
# 1. **questions**, a JSONL file in schema v1;
# 2. **a tool**, a small Python class registered by name;
# 3. **a reasoner**, the frozen reader, chosen by how well it reads the new tool;
# 4. **reward tables**, its answer to every question under every subset of the tools;
# 5. **a selector**, the policy head of chapter {doc}`head_study`, trained with FGPO (and, for
#    contrast, GRPO and SFT) and tested on held-out questions.
#
# The example is new to the book: 300-bp fragments of bacterial genomes, asked two kinds of
# question. **Strand**: is the fragment a protein-coding gene read on its own strand, the same
# gene read on the opposite strand, or DNA between genes? **Origin**: which of four genomes is
# it from? The new tool, a gene caller run on the fragment itself, should settle the first kind;
# the library's genomic expert, which votes by the labelled fragments nearest in k-mer content,
# the second. If no one subset serves both, a selector has work to do.

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

# %% tags=["remove-input"]
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
from fgpo_core.evaluation.bootstrap import compare_many
from fgpo_core.evaluation.picks import tool_rates_by_family
from fgpo_core.experiments.byo import head_scores
from fgpo_core.genomics.benchmarks import read_questions
from fgpo_core.genomics.tools import library_from_names, load_plugin, references_from_file
from fgpo_core.reasoners import get_reasoner
from fgpo_core.reports.fair import interval_text
from fgpo_core.reports.study import label, study_summary
from fgpo_core.reports.tables import show
from fgpo_core.selectors.features import load_features
from fgpo_core.table import load_table

# %% tags=["remove-input"]
set_style()
warnings.filterwarnings("ignore", message="IProgress not found")
warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")
os.environ["TQDM_DISABLE"] = "1"  # the commands' progress bars, in a rendered page
EXAMPLES = Path(byo_examples)
work = Path(byo_dir or tempfile.mkdtemp(prefix="fgpo-your-own-"))
work.mkdir(parents=True, exist_ok=True)
for name, value in (("yo_n_train", byo_train), ("yo_n_dev", byo_dev), ("yo_n_test", byo_test),
                    ("yo_n_seeds", byo_seeds), ("n_epochs", byo_epochs)):
    glue_number(name, value, 0)
TOOL_NAMES = {"composition": "composition", "gene_call": "gene caller", "expert": "expert"}


def subset_name(label_: str) -> str:
    """A subset as it reads: its tools' names joined by +, "no tool" for the empty one."""
    return " + ".join(TOOL_NAMES[t] for t in label_.split("+")) if label_ != "none" else "no tool"


def plain(text: str) -> str:
    """Output as on a reader's screen: the working folder reads as ``work/``, the examples as
    ``examples/byo``, and progress bars are left out."""
    text = text.replace(str(work), "work").replace(str(EXAMPLES.resolve()), "examples/byo").replace(
        str(EXAMPLES), "examples/byo")
    return "\n".join(line for line in text.replace("\r", "\n").splitlines()
                     if line.strip() and "%|" not in line)


def quietly(fn, *args, show_output=True):
    """Run ``fn(*args)``; print what it printed, as :func:`plain` shows it; return its result."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        result = fn(*args)
    if show_output and out.getvalue().strip():
        print(plain(out.getvalue()))
    return result


def shell(*args: str, show_output=True) -> None:
    """Show a command as a reader would type it, then run it through the same entry point."""
    if show_output:
        print("$ fgpo " + plain(" ".join(args)))
    code = quietly(fgpo, list(args), show_output=show_output)
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
# A question is one JSON object (the first training question is shown below; `family` is its
# kind). The example's maker, `examples/byo/make_questions.py`, calls genes with pyrodigal and
# cuts fragments by coordinate from genomes that `pyrodigal` and `pyhmmer` ship: the first 60% of
# each genome for training, the next 10% for dev and the last 30% for test, so no two splits
# share DNA. This page makes
# {glue:text}`yo_n_train` training, {glue:text}`yo_n_dev` dev and {glue:text}`yo_n_test` test questions,
# the two kinds alternating, and the expert's labelled sequences (`references.jsonl`: each
# training fragment labelled with its correct option, and more fragments of each genome's
# training part labelled with its name). The maker's question writer, and the first training
# question:

# %% tags=["remove-input"]
maker = load_example("make_questions")
source = Path(maker.__file__).read_text()
print("def question" + source.split("def question", 1)[1].split("\n\n\n")[0])
quietly(maker.main, ["--out", str(work / "questions"), "--seed", str(seed), "--n-train", str(byo_train),
                     "--n-dev", str(byo_dev), "--n-test", str(byo_test)], show_output=False)
files = {s: work / "questions" / f"{s}.jsonl" for s in ("train", "dev", "test")}
first = json.loads(files["train"].read_text().splitlines()[0])
first.update(question=first["question"][:60] + "...", sequences={"": "..."})
print("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in first.items()) + "\n}")

# %% [markdown]
# Any file in the schema, the book's or anyone's, is checked line by line; an error names the
# line and the field:

# %% tags=["hide-input"]
shell("benchmark", "validate", *map(str, files.values()))

# %% [markdown]
# ## 2. A tool of one's own
#
# A tool is any object with a `name`, a `title`, a `version` and `run(ToolInput) -> Evidence`;
# the reasoner reads a new tool's evidence as it reads the built-in ones. This one runs
# pyrodigal's gene finder in its metagenomic mode (nothing fitted to these genomes) on the
# fragment alone; registered by name, a library or the command line can put it in a slot:

# %% tags=["remove-input"]
code = (EXAMPLES / "gene_tool.py").read_text().rstrip()
code = code[code.index("import pyrodigal"):]  # the module's docstring says what the prose says
display(Markdown(f"`examples/byo/gene_tool.py`\n\n```python\n{code}\n```"))

# %% [markdown]
# The library here has three slots: the built-in composition tool, the new gene caller and the
# built-in genomic expert with the maker's labelled sequences. What the three say about the
# first training question:

# %% tags=["hide-input"]
load_plugin(EXAMPLES / "gene_tool.py")
TOOLS = "composition,gene_call,expert"
references, _ = references_from_file(work / "questions" / "references.jsonl")
library = library_from_names(TOOLS.split(","), references=references)
q0 = read_questions(files["train"])[0]
print(library.evidence(q0.tool_input(), library.space.n_actions - 1))

# %% [markdown]
# ## 3. Choosing the reasoner
#
# Two frozen readers are at hand: the book's evidence reader, trained on the evidence of the
# book's own tools, and the zero-shot MiniLM reader (`--reasoner minilm`). Before paying for
# whole tables, both answer the dev questions with no evidence and with the gene caller's alone:

# %% tags=["remove-input"]
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
_ = glue_text("reasoner_name", probe.index[1] if REASONER == "minilm" else probe.index[0])

# %% [markdown]
# The tables are built with the reader that is more accurate with the gene caller's evidence:
# here the {glue:text}`reasoner_name` reader.
#
# ## 4. Reward tables
#
# One command per split builds the exhaustive table, every question answered under each of the
# $2^3 = 8$ subsets, resumable and checksummed like the book's own tables; `--references` gives
# the expert its labelled sequences. For the training split:

# %% tags=["hide-input"]
for split, path in files.items():
    shell("table", "build", "--questions", str(path), "--plugin", str(EXAMPLES / "gene_tool.py"),
          "--tools", TOOLS, "--references", str(work / "questions" / "references.jsonl"), "--reasoner", REASONER,
          "--out", str(work / "tables" / split), show_output=split == "train")
tables = {s: load_table(work / "tables" / s) for s in files}

# %% [markdown]
# The test table, for each kind and for both: No-Tool, All-Tools, the best fixed subset (the one
# subset best on those questions) and the oracle (each question's best subset, with hindsight):

# %% tags=["remove-input"]
test = tables["test"]
kinds = np.asarray(test.family)
parts = {k: test.select([q for q, f in zip(test.question_ids, kinds) if f == k]) for k in sorted(set(kinds))}
parts["both kinds"] = test
rows = {}
for k, t in parts.items():
    c = t.ceilings()
    rows[k] = {"questions": t.n_questions, "No-Tool (%)": c["no_tool"], "All-Tools (%)": c["all_tools"],
               "best fixed subset": subset_name(c["best_fixed_subset"]), "its accuracy (%)": c["best_fixed"],
               "oracle (%)": c["oracle"]}
ref = pd.DataFrame(rows).T.rename_axis("kind")
show(ref.astype({c: float for c in ref.columns if "%" in c}), 1)
best = {k: parts[k].ceilings() for k in parts}
glue_text("byo_best_strand", subset_name(best["strand"]["best_fixed_subset"]))
glue_text("byo_best_origin", subset_name(best["origin"]["best_fixed_subset"]))
glue_text("byo_best_subset", subset_name(best["both kinds"]["best_fixed_subset"]))
glue_number("byo_best", best["both kinds"]["best_fixed"])
glue_number("byo_oracle", best["both kinds"]["oracle"])
glue_number("byo_room", best["both kinds"]["oracle"] - best["both kinds"]["best_fixed"])
per_kind = {k: parts[k].fixed_subset_accuracy() for k in ("strand", "origin")}
glue_number("byo_expert_strand", per_kind["strand"]["gene_call+expert"])
glue_number("byo_all_strand", per_kind["strand"]["composition+gene_call+expert"])
glue_number("byo_gene_strand", per_kind["strand"]["gene_call"])
glue_number("byo_expert_origin", per_kind["origin"]["expert"])
glue_number("byo_none_origin", per_kind["origin"]["none"])
claim("byo-room", "gene_call" in best["strand"]["best_fixed_subset"] and "expert" in best["origin"]["best_fixed_subset"]
      and "expert" not in best["strand"]["best_fixed_subset"]
      and per_kind["origin"]["expert"] > per_kind["origin"]["none"] + 20
      and best["both kinds"]["oracle"] > best["both kinds"]["best_fixed"] + 20
      and per_kind["strand"]["gene_call+expert"] < per_kind["strand"]["gene_call"] - 20,
      "the gene caller is best on strand questions and the expert on origin ones, the expert hurts strand "
      "questions, and the oracle lies well above the best fixed subset")

# %% [markdown]
# Every fixed subset, by kind:

# %% tags=["remove-input"]
by_kind = pd.DataFrame(per_kind).rename(index=subset_name)
show(by_kind.rename_axis("subset").rename(columns=lambda c: f"{c} (%)"))

# %% [markdown]
# Each kind has its tool: the {glue:text}`byo_best_strand` on strand questions, the
# {glue:text}`byo_best_origin` on origin ones ({glue:text}`byo_expert_origin`% against
# {glue:text}`byo_none_origin`% with no evidence). The two do not mix: on strand questions the
# gene caller alone scores {glue:text}`byo_gene_strand`%, the gene caller with the expert
# {glue:text}`byo_expert_strand`% (all three tools {glue:text}`byo_all_strand`%), since the
# expert's list of neighbour labels names the options and drowns the gene caller's line. So
# the best fixed subset over both kinds, {glue:text}`byo_best_subset`, scores only
# {glue:text}`byo_best`%, and the oracle lies {glue:text}`byo_room` points above it: room for
# a selector that reads the question.
#
# ## 5. A selector trained on them
#
# A frozen sentence encoder encodes each question once (`fgpo features`); the policy head on top
# is trained with FGPO's exact objective over all 8 subsets and, for contrast, with GRPO and
# with SFT on each training question's best subset, {glue:text}`yo_n_seeds` seeds each for
# {glue:text}`n_epochs` epochs, the checkpoint chosen on dev:

# %% tags=["remove-cell"]
shell("features", *[a for s, p in files.items() for a in ("--questions", f"{s}={p}")],
      "--n-tools", "3", "--out", str(work / "features"), show_output=False)

# %%
features = load_features(work / "features")
scores = head_scores(features, tables, methods=("fgpo", "grpo", "sft"),
                     seeds=range(byo_seeds), epochs=byo_epochs)

# %% tags=["remove-input"]
scores["method"] = scores["method"].map(label)
fixed = test.fixed_subset_accuracy().rename(index=subset_name)
fig = plot_subsets_and_methods(fixed, scores, float(best["both kinds"]["oracle"]))

# %% [markdown]
# FGPO against each other method and against the best fixed subset, by the book's rule: the
# gap in points with its 95% interval from the two-level paired bootstrap over test questions
# (drawn within each kind) and seeds, as in every other chapter; a star where the
# Holm-adjusted p-value is below 0.05:

# %% tags=["remove-input"]
def by_seed(method: str) -> np.ndarray:
    """One method's test correctness, one row per seed."""
    f = scores[(scores.method == label(method)) & (scores.suite == "test")].sort_values("seed")
    return np.stack(f.correct_vector.to_list()).astype(float)


bf = test.correct[:, int(np.argmax(test.correct.mean(0)))]
rivals = {"GRPO": by_seed("grpo"), "SFT": by_seed("sft"), "best fixed subset": bf[None, :]}
gaps = compare_many({k: (by_seed("fgpo"), v) for k, v in rivals.items()}, strata=kinds)
VERDICT = {"a difference": "a difference", "level": "level", "undecided": "undecided, no difference detected"}
show(pd.DataFrame({"FGPO minus (points)": [interval_text(r.gap, r.low, r.high) + ("\u00a0*" if r.p_holm < 0.05
                                                                                   else "") for r in gaps.itertuples()],
                   "verdict": gaps.verdict.map(VERDICT).to_numpy()}, index=gaps.index).rename_axis("FGPO against"))
for key, name in (("grpo", "GRPO"), ("sft", "SFT"), ("fixed", "best fixed subset")):
    glue_text(f"byo_gap_{key}", interval_text(*gaps.loc[name, ["gap", "low", "high"]]))
    glue_text(f"byo_verdict_{key}", VERDICT[gaps.loc[name, "verdict"]])
summary = study_summary(scores)["test mean"]
for m in ("fgpo", "grpo", "sft"):
    glue_number(f"byo_{m}", summary[label(m)])
glue_number("byo_test_n", test.n_questions, 0)
names = TOOLS.split(",")
fg = scores[scores.method == label("fgpo")]
use = pd.concat({"FGPO": tool_rates_by_family(np.concatenate(list(fg.picks)), np.tile(kinds, len(fg)), names),
                 "oracle": tool_rates_by_family(test.oracle_actions(), kinds, names)})
glue_number("byo_fgpo_gene_strand", use.loc[("FGPO", "strand"), "gene_call"], 0)
glue_number("byo_fgpo_expert_strand", use.loc[("FGPO", "strand"), "expert"], 0)
glue_number("byo_fgpo_expert_origin", use.loc[("FGPO", "origin"), "expert"], 0)
glue_number("byo_fgpo_gene_origin", use.loc[("FGPO", "origin"), "gene_call"], 0)
claim("byo-selector", summary[label("fgpo")] > best["both kinds"]["best_fixed"] + 10
      and gaps.loc["best fixed subset", "gap"] > 10 and gaps.loc["best fixed subset", "low"] > 0
      and use.loc[("FGPO", "strand"), "gene_call"] > use.loc[("FGPO", "origin"), "gene_call"] + 50
      and use.loc[("FGPO", "origin"), "expert"] > use.loc[("FGPO", "strand"), "expert"] + 50,
      "FGPO's selector beats the best fixed subset by calling the gene caller on strand questions and the "
      "expert on origin ones")

# %% [markdown]
# On the {glue:text}`byo_test_n` test questions FGPO's selector scores {glue:text}`byo_fgpo`%,
# GRPO's {glue:text}`byo_grpo`% and SFT's {glue:text}`byo_sft`%, against the best fixed subset's
# {glue:text}`byo_best`%. FGPO minus the best fixed subset is {glue:text}`byo_gap_fixed` points
# ({glue:text}`byo_verdict_fixed`), minus SFT {glue:text}`byo_gap_sft`
# ({glue:text}`byo_verdict_sft`), minus GRPO {glue:text}`byo_gap_grpo`
# ({glue:text}`byo_verdict_grpo`). FGPO's selector reads the kind from the question: over all seeds it
# calls the gene caller on {glue:text}`byo_fgpo_gene_strand`% of strand questions and
# {glue:text}`byo_fgpo_gene_origin`% of origin ones, the expert on
# {glue:text}`byo_fgpo_expert_origin`% of origin questions and
# {glue:text}`byo_fgpo_expert_strand`% of strand ones.
#
# ## What to take from this
#
# Nothing above touched `fgpo_core`: the questions are a file, the tool a class registered by
# name, every step a public function or a command. A table costs one reasoner call per question and subset, $2^n$ per question
# ({glue:text}`byo_calls_here` here, {glue:text}`byo_calls_12` with twelve tools), paid once;
# after it every method's training is table look-ups. For a reasoner that reads the whole prompt
# that bill is what grows with the library; chapter {doc}`past_enumeration` runs exact FGPO over
# twelve tools all the same (its reader scores every subset in one pass) and measures how much of
# the table a shortlist of subsets needs.

# %% tags=["remove-input"]
glue_number("byo_calls_here", 2 ** len(names), 0)
_ = glue_number("byo_calls_12", 2 ** 12, 0)
