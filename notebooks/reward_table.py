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
# # Building the reward table
#
# FGPO's second idea: every subset's reward on every question can be computed once, before
# training (Algorithm 1, stage 1). Run each tool once per question, ask the frozen reasoner
# with the evidence of each of the $2^n$ subsets, store the answers: every reward in
# training is then a look-up. This chapter builds such tables, reads what they imply, and
# checks a look-up against a live call.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the probes' question samples
bench_dir = "../data/benchmarks/cpu"  # a built benchmark folder; empty: build a ci-sized one now
table_dir = "../data/tables/cpu/reader"  # merged tables of the training reader (one subfolder per suite); empty: build now
other_table_dirs = "../data/tables/cpu/minilm,../data/tables/cpu/smollm2"  # comma-separated table folders of the other readers ("": none)
reader_dir = "../data/readers/minilm-evidence"  # the trained evidence reader
n_probe = 16  # questions in the SmolLM2 evidence probe
n_live = 64  # (question, subset) pairs re-run live against the table

# %% tags=["hide-input"]
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import seaborn as sns

from fgpo_core.book import paper
from fgpo_core.book.chapter import show_source
from fgpo_core.book.claims import claim, glue_number, glue_text
from fgpo_core.book.plots import set_style
from fgpo_core.book.plots_page import set_alt
from fgpo_core.evaluation.metrics import live_agreement
from fgpo_core.genomics.benchmarks import build_all, load_benchmark, tool_library_for
from fgpo_core.genomics.curriculum import CurriculumSpec, check_disjoint, curriculum_library, make_curriculum
from fgpo_core.reasoners import REASONER_LABELS, get_reasoner
from fgpo_core.reasoners.probe import probe_from_table, probe_live, probe_masks
from fgpo_core.reasoners.prompt import split_user_message
from fgpo_core.reasoners.reader import pair_texts
from fgpo_core.reports.benchmark_page import family_label
from fgpo_core.reports.tables import show
from fgpo_core.table import has_table, load_tables
from fgpo_core.table.build import build_table, cost_accounting, merge_table

# %% tags=["hide-input"]
set_style()
if not bench_dir:
    bench_dir = tempfile.mkdtemp(prefix="fgpo-bench-")
    build_all(bench_dir, "ci", seed, suites=["core"], progress=False)
_, suites = load_benchmark(bench_dir)
library = tool_library_for(bench_dir)
reader = get_reasoner(f"reader:{reader_dir}")
if not table_dir:
    table_dir = tempfile.mkdtemp(prefix="fgpo-tables-")
    for name in ("core",):
        build_table(suites[name], library, reader, Path(table_dir) / name, progress=False)
        merge_table(Path(table_dir) / name)
# tables made by another reader (another adapter) are refused
SPLITS = sorted(p.name for p in Path(table_dir).iterdir() if has_table(p))
labels = REASONER_LABELS
readers = load_tables({"evidence reader": table_dir, **{labels.get(Path(d).name, Path(d).name): d
                                                       for d in filter(None, other_table_dirs.split(","))}},
                      SPLITS, expect={"evidence reader": {"reasoner": reader.id}})
tables = readers["evidence reader"]

# %% [markdown]
# ## The reasoner's prompt
#
# Every call uses the paper's template (folded below): a system message (a genomics expert;
# tool outputs may be noisy), the question, an `Options:` block, for a non-empty subset
# `Analysis tool output for the sequence above:` and the evidence, and
# `Answer with a single letter.`

# %% tags=["remove-input", "hide-output"]
show_source(split_user_message)

# %% [markdown]
# A causal-LM reasoner caches the prefix a question's $2^n$ prompts share (as vLLM's prefix
# caching does). One `core` question's user message with the subset {T3}:

# %% tags=["hide-input"]
q = next(q for q in suites["core"] if q.family == "splice" and q.shape == "describe")
evs = library.run(q.tool_input(), key=q.id)
pre, suf = split_user_message(q.question, q.options_block(), library.render(evs, 0b0100))
seq = q.sequences[""]
print((pre + suf).replace(seq, seq[:20] + "..." + seq[-20:]))

# %% [markdown]
# ## The reasoners, and whether they read
#
# The paper's reasoners are 1.5-8B instruction models, far larger than anything here (the
# main reason our levels differ from the paper's). The small ones that run offline on a CPU
# ignore evidence, answering near chance and mostly "A" even with the decisive tool
# (measured below for SmolLM2-135M), so their tables are flat. The book prepares three
# frozen readers, shipped as files:
#
# - **the evidence reader** (`reader`, the training reasoner): all-MiniLM-L6-v2 with a
#   LoRA adapter and a scalar head, trained as a multiple-choice model on a *curriculum*
#   sharing no sequence, name or wording with any benchmark suite;
# - **zero-shot MiniLM** (`minilm`): the same encoder untrained, scoring each option by its
#   best cosine similarity with an evidence line;
# - **SmolLM2-135M-Instruct** (`smollm2`): a causal LM answering with its most probable
#   letter.
#
# ### The evidence reader
#
# The reader scores an option by reading each tool's block on its own, with the question
# and option in view, and adding the scores (a product of experts; the pair of texts per
# block is folded):

# %% tags=["remove-input", "hide-output"]
show_source(pair_texts)

# %% [markdown]
# The letter logits are $\mathrm{logit}(L) = h(a_L, \varnothing) + \sum_{b} h(a_L, b_L)$. A
# block's score ignores the other blocks, so a question's $2^n$ prompts cost $n + 1$ encoder
# reads per option. The curriculum's five skills (motif scan, splice classification, GC, CpG
# observed/expected, the expert's votes) use synthetic DNA; one question and its decisive
# tool's evidence:

# %% tags=["hide-input"]
cur = make_curriculum(CurriculumSpec(n_per_skill=2, seed=1))
cq = next(x for x in cur if x.family == "source" and x.shape == "describe")
cl = curriculum_library()
print(cq.question[:cq.question.index("Fragment:") + 30] + "...")
print(cq.options_block())
print(cl.render(cl.run(cq.tool_input(), key=cq.id), 1 << cl.names.index("expert")))
leaks = check_disjoint(cur, bench_dir)

# %% tags=["remove-cell"]
_ = glue_number("n_cur_checked", len(cur), 0)

# %% [markdown]
# None of the {glue:text}`n_cur_checked` curriculum questions made here shares a 32-mer with
# any benchmark suite or reference (the tests check more).

# %% tags=["remove-input"]
claim("curriculum-disjoint", len(leaks) == 0, "no curriculum question shares a 32-mer with the benchmarks")

# %% [markdown]
# Training shows each question with a random subset of the tool blocks, the decisive tool's
# block in {glue:text}`p_decisive`% of the views (3 in 4) and the others drawn at random, and
# minimises the answer's cross-entropy (`fgpo reader train`; the adapter's manifest records
# the rest): {glue:text}`n_cur_train` questions,
# {glue:text}`train_minutes` minutes on a CPU.

# %% tags=["remove-cell"]
reader_manifest = json.loads((Path(reader_dir) / "manifest.json").read_text())
glue_number("n_cur_train", reader_manifest["curriculum"]["n_train"], 0)
glue_number("p_decisive", 100 * reader_manifest["config"]["p_decisive"], 0)
_ = glue_number("train_minutes", reader_manifest["train_seconds"] / 60, 0)

# %% [markdown]
# ### The evidence-following probe
#
# Does a reader use its evidence? The probe asks each question with no evidence, only the
# family's decisive tool, only an irrelevant tool, and every tool; a useful reader follows
# decisive evidence and stays near chance (25%) without it. The MiniLM readers' probes are
# read from their tables, SmolLM2 is called live on a sample.

# %% tags=["remove-input", "hide-output"]
show_source(probe_masks)

# %% tags=["hide-input"]
eval_names = [n for n in ("core", "microbe", "mosaic") if n in tables]
eval_qs = [q for n in eval_names for q in suites[n]]
probes = {}
for label, tabs in readers.items():  # the probe from tables covering every evaluation question
    names = [n for n in eval_names if n in tabs]
    if names and sum(int(tabs[n].contains([q.id for q in suites[n]]).sum()) for n in names) == len(eval_qs):
        probes[label] = probe_from_table([tabs[n] for n in names], eval_qs, library.names)
rng = np.random.default_rng(seed)
probe_qs = [suites["core"][i] for i in rng.choice(len(suites["core"]), size=min(n_probe, len(suites["core"])),
                                                  replace=False)]
smollm2 = get_reasoner("smollm2")
t0 = time.perf_counter()
probes["SmolLM2-135M (live sample)"] = probe_live(smollm2, probe_qs, library)
smollm2_s_per_call = (time.perf_counter() - t0) / (4 * len(probe_qs))  # four conditions per question
acc_all = pd.DataFrame({k: v[0].loc["all"] for k, v in probes.items()}).T
letters = pd.concat({k: v[1] for k, v in probes.items()})

# %% tags=["remove-cell"]
a = acc_all.loc["evidence reader"]
z = acc_all.loc["zero-shot MiniLM"]
s_ = acc_all.loc["SmolLM2-135M (live sample)"]
fam_dec = probes["evidence reader"][0]["decisive tool only"].drop("all")
glue_number("n_eval", len(eval_qs), 0)
glue_number("n_probe", len(probe_qs), 0)
for key, cond in (("none", "no evidence"), ("dec", "decisive tool only"), ("irr", "irrelevant tool only"),
                  ("all", "all tools")):
    glue_number(f"reader_{key}", a[cond])
glue_number("minilm_dec", z["decisive tool only"])
glue_number("smollm2_dec", s_["decisive tool only"])
smollm2_a = float(letters.loc["SmolLM2-135M (live sample)"]["A"].mean())
glue_number("smollm2_a", smollm2_a, 0)
glue_number("fam_min", fam_dec.min(), 0)
glue_text("fam_min_name", family_label(fam_dec.idxmin()))
glue_number("fam_max", fam_dec.max(), 0)
glue_text("fam_max_name", family_label(fam_dec.idxmax()))
smollm2_tabs = readers.get(labels.get("smollm2", "smollm2"), {})
glue_number("smollm2_slice", sum(t.n_questions for t in smollm2_tabs.values()), 0)
glue_number("smollm2_s", smollm2_s_per_call)
cpg = probes["evidence reader"][0].loc["cpg"]
cpg_expert = 100 * np.mean(np.concatenate([tables[n].subset(tables[n].family == "cpg").correct[
    :, 1 << library.names.index("expert")] for n in eval_names if "cpg" in set(tables[n].family)]))
cpg_n = sum(int((np.asarray(tables[n].family) == "cpg").sum()) for n in eval_names)
glue_number("cpg_dec", cpg["decisive tool only"])
glue_number("cpg_irr", cpg["irrelevant tool only"])
glue_number("cpg_all", cpg["all tools"])
_ = glue_number("cpg_expert", cpg_expert)

# %% [markdown]
# Accuracy (%) under each condition, all families ({glue:text}`n_eval` evaluation
# questions; SmolLM2 live on {glue:text}`n_probe`):

# %% tags=["remove-input"]
show(acc_all)

# %% [markdown]
# By family, the evidence reader:

# %% tags=["remove-input"]
show(probes["evidence reader"][0].rename(index=family_label))

# %% [markdown]
# The evidence reader answers {glue:text}`reader_dec`% with the decisive tool alone,
# {glue:text}`reader_none`% with no evidence, {glue:text}`reader_irr`% with an irrelevant tool
# and {glue:text}`reader_all`% with every tool; zero-shot MiniLM {glue:text}`minilm_dec`% with
# the decisive tool. By family the reader ranges from {glue:text}`fam_min`%
# ({glue:text}`fam_min_name`) to {glue:text}`fam_max`% ({glue:text}`fam_max_name`); the
# answerability figure of {doc}`benchmarks` shows what each family's tools allow. SmolLM2 answers
# {glue:text}`smollm2_dec`% of its sample with the decisive tool, within chance on so few
# questions, and picks "A" {glue:text}`smollm2_a`% of the time.
#
# On CpG the reader ignores composition, the tool meant to decide that family: composition
# alone gives {glue:text}`cpg_dec`%, no more than an irrelevant tool ({glue:text}`cpg_irr`%),
# and the lift to {glue:text}`cpg_all`% with every tool comes from the expert
# ({glue:text}`cpg_expert`% alone).
#
# The book's tables come from the evidence reader; zero-shot MiniLM's tables and a SmolLM2
# table of {glue:text}`smollm2_slice` questions (at {glue:text}`smollm2_s` s per call here, a
# whole one is too slow) serve the grid of reasoners by suites ({doc}`five_reasoners`).

# %% tags=["remove-input"]
claim("reader-follows-evidence", a["decisive tool only"] > a["no evidence"] + 15 and abs(a["no evidence"] - 25) < 5
      and abs(a["irrelevant tool only"] - 25) < 5 and a["decisive tool only"] > z["decisive tool only"],
      "the evidence reader follows decisive evidence, stays near chance without it, and beats zero-shot MiniLM")
# the live sample is small (a handful of questions under the ci profile), so "no better than chance"
# is tested against three binomial standard errors of 25% on the sample's size
cpg_noise = 3 * np.sqrt(25 * 75 / cpg_n)  # three binomial standard errors of 25% on the CpG questions
claim("cpg-ignores-composition", cpg["decisive tool only"] - cpg["no evidence"] < cpg_noise
      and abs(cpg["decisive tool only"] - cpg["irrelevant tool only"]) < cpg_noise
      and cpg["all tools"] > cpg["decisive tool only"] + 15 and cpg_expert > cpg["decisive tool only"] + 15,
      "on CpG composition alone lifts the reader no more than noise, and the expert carries every tool's lift")
claim("smollm2-at-chance", s_["decisive tool only"] < 25 + 3 * np.sqrt(25 * 75 / len(probe_qs)) and smollm2_a > 50,
      "SmolLM2 with the decisive tool is within sampling noise of chance, and mostly answers A")

# %% [markdown]
# ## What a table row holds
#
# One row per (question, subset): the reasoner's letter, its correctness, the four letter
# log-probabilities, the prompt's length, the Eq. 1 and differential rewards. A manifest
# records the table's inputs; a consumer whose inputs differ is refused. The first rows of
# `core`:

# %% tags=["hide-input"]
name0 = "core" if "core" in tables else next(iter(tables))
table0 = tables[name0]
raw = pd.read_parquet(Path(table_dir) / name0 / "table.parquet").head(4)
show(pd.DataFrame({
    "subset": ["no tool" if m == 0 else "{" + ", ".join(f"T{i + 1}" for i in range(table0.n_tools) if m >> i & 1) + "}"
               for m in raw["mask"]],
    "answer given": raw.prediction, "correct": raw.correct, "prompt tokens": raw.prompt_tokens,
    "Eq. 1 reward": raw.reward_eq1, "differential reward": raw.reward_differential}), 2)

# %% [markdown]
# ## Reference points (the paper's Figure 1a)
#
# A table alone says what any fixed policy scores (no tool, a random subset, all tools, the
# best fixed subset) and what the per-question oracle that knows which subset works does.

# %% tags=["hide-input"]
ceil = pd.DataFrame({name: t.ceilings() for name, t in tables.items()}).T
keys = ["no_tool", "random", "all_tools", "best_fixed", "oracle"]
POLICY = {"no_tool": "no tool", "random": "random subset", "all_tools": "all tools", "best_fixed": "best fixed subset",
          "oracle": "oracle", "empty_optimal": "best subset empty (%)", "questions": "questions"}
plot = ceil[keys].astype(float).reset_index(names="suite").melt(id_vars="suite", var_name="policy",
                                                                value_name="accuracy (%)")
paper_rows = pd.DataFrame({"suite": "paper: GenomeQA", "policy": keys,
                           "accuracy (%)": [paper.GENOMEQA_CEILINGS[k] for k in keys]})
plot["policy"], paper_rows["policy"] = plot.policy.map(POLICY), paper_rows.policy.map(POLICY)

# %% tags=["hide-input"]
fig, ax = plt.subplots(figsize=(6.9, 4))
sns.barplot(data=pd.concat([plot, paper_rows]), x="policy", y="accuracy (%)", hue="suite", ax=ax,
            palette=sns.color_palette("Blues", len(tables) + 1)[1:] + ["#444444"])
ax.axhline(25, c="k", ls=":", lw=1)
ax.set(title="What fixed policies and the oracle score, by suite", xlabel="")
ax.legend(ncol=2)
set_alt(fig, "Grouped bars of accuracy (%) for each fixed policy and the oracle (" + ", ".join(plot.policy.unique())
        + "), one bar per suite (" + ", ".join(plot.suite.unique()) + ") and one for the paper's GenomeQA, with a "
        "dotted line at 25%, chance on four options.")
plt.show()

# %% [markdown]
# The gap from the best fixed subset to the oracle is what a selector can win. The paper's
# GenomeQA table beside `core` under each reader whose table covers it:

# %% tags=["hide-input"]
t_core = tables[name0]
c_core = t_core.ceilings()
ROWS = ["no_tool", "random", "all_tools", "best_fixed", "oracle", "empty_optimal"]
POLICY["empty_optimal"] = "questions whose best subset is empty"
ref = pd.DataFrame({"paper (GenomeQA, Qwen3-8B)": {k: paper.GENOMEQA_CEILINGS[k] for k in ROWS},
                    **{label: {k: tabs[name0].ceilings()[k] for k in ROWS} for label, tabs in readers.items()
                       if name0 in tabs and tabs[name0].n_questions == len(suites[name0])}})
show(ref.rename(index=POLICY).rename_axis(f"% of questions ({name0})"))

# %% [markdown]
# ## Every fixed subset, and each tool's worth
#
# Accuracy of always choosing each subset, per family, and the points the oracle and the
# best fixed subset lose when one tool is removed (from the table alone, as in the paper's
# Table 12):

# %% tags=["hide-input"]
fam = pd.DataFrame({family_label(f): t_core.subset(t_core.family == f).fixed_subset_accuracy()
                    for f in np.unique(t_core.family)})
fam.index = [t_core.space.label(m).replace("none", "no tool") for m in range(t_core.n_actions)]
key = ", ".join(f"T{i + 1} {n.replace('_', ' ')}" for i, n in enumerate(t_core.names()))

# %% tags=["hide-input"]
fig, ax = plt.subplots(figsize=(6.9, 5.5))
sns.heatmap(fam, annot=True, fmt=".0f", cmap="Blues", vmin=0, vmax=100, ax=ax, cbar_kws={"label": "accuracy (%)"})
ax.set(title=f"Accuracy of each fixed subset by family ({name0})\n{key}", xlabel="", ylabel="subset")
ax.tick_params(axis="x", labelrotation=30)
plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
ax.grid(False)
set_alt(fig, f"A heat map of tool subset ({key}) against question family on {name0}: the accuracy (%) of always "
        "choosing each subset on the family's questions.")
plt.tight_layout()
plt.show()

# %% tags=["hide-input"]
removal = t_core.single_tool_removal()
removal.index = [f"-T{i + 1} ({n})" for i, n in enumerate(t_core.names())]
both = pd.concat({"this book": removal.round(2),
                  "paper (GenomeQA)": paper.TABLE12_GENOMEQA.set_axis(removal.index)}, axis=1)
both = both.rename(columns={"delta_oracle": "oracle (points)", "delta_best_fixed": "best fixed (points)"})
show(both.rename_axis("tool removed"), 2)

# %% [markdown]
# A selector learns a tool's worth only from training rewards. For each tool, the training
# family where it adds most, alone or added to the subset where it helps most (it *pays* on
# a family where it adds at least 10 points):

# %% tags=["remove-input"]
PAYS = 10.0
gains = tables["train"].tool_gains()
top = gains.loc[gains.groupby("tool", sort=False).best_added.idxmax()].set_index("tool")
paid = gains[gains.best_added >= PAYS].groupby("tool", sort=False).family.agg(", ".join)
paid = paid.map(lambda fams: ", ".join(family_label(f) for f in fams.split(", ")))
worth = pd.DataFrame({"adds most on": top.family.map(family_label), "alone (points)": top.alone,
                      "added (points)": top.best_added, "added to": top.added_to,
                      f"pays on (≥ {PAYS:.0f} points)": paid.reindex(top.index).fillna("–")})
worth.index = [f"T{i + 1} {n}" for i, n in enumerate(top.index)]
show(worth.rename_axis("tool"))
unpaid = [f"T{i + 1} ({n})" for i, n in enumerate(top.index) if n not in paid.index]
decisive = {n: round(float(gains[gains.tool == n].alone.max()), 6) for n in top.index}  # points, to float precision
glue_text("unpaid_tools", " and ".join(unpaid) if unpaid else "none")
glue_number("t1_best", top.loc["composition", "best_added"])
glue_text("t1_family", family_label(top.loc["composition", "family"]))
glue_number("t4_same_family", float(gains[(gains.tool == "expert") & (gains.family == top.loc["composition", "family"])].alone.iloc[0]))
glue_number("t2_regulator_alone", float(gains[(gains.tool == "motif_scan") & (gains.family == "regulator")].alone.iloc[0]));

# %% [markdown]
# Every tool but {glue:text}`unpaid_tools` pays somewhere, and T2, T3 and T4 are each
# decisive somewhere (the motif scan alone adds {glue:text}`t2_regulator_alone` points on
# regulator). T1 adds at most {glue:text}`t1_best` points (on {glue:text}`t1_family`, where
# the expert alone adds {glue:text}`t4_same_family`): a trained selector has little reason to
# call it.

# %% tags=["remove-input"]
claim("t1-unpaid", unpaid == ["T1 (composition)"], "composition is the one tool that pays on no training family")
claim("t2-t3-t4-decisive", all(decisive[n] >= 30 for n in ("motif_scan", "splice", "expert")),
      "T2, T3 and T4 each add at least 30 points alone on some training family");

# %% tags=["remove-cell"]
tokens = t_core.tokens.mean(0)
glue_number("tok_none", tokens[0], 0)
glue_number("tok_all", tokens[-1], 0)
single = [tokens[1 << i] for i in range(t_core.n_tools)]
glue_number("tok_single_min", min(single), 0)
_ = glue_number("tok_single_max", max(single), 0)

# %% [markdown]
# Evidence is not free: every tool lengthens the prompt. On this suite a prompt averages
# {glue:text}`tok_none` tokens with no evidence (the reader's tokenizer),
# {glue:text}`tok_single_min` to {glue:text}`tok_single_max` with one tool, and
# {glue:text}`tok_all` with all of them.

# %% tags=["remove-input"]
claim("every-tool-lengthens", all(tokens[m | (1 << i)] > tokens[m] for m in range(len(tokens))
                                  for i in range(t_core.n_tools) if not m & (1 << i)),
      "adding any tool to any subset lengthens the prompt")

# %% [markdown]
# ## Outcome-degenerate questions
#
# A question is *outcome-degenerate* when no choice of tools changes its correctness; under
# the binary reward every GRPO group on it is dead. The larger the library, the fewer (% of
# questions, over all sub-libraries of each size, as in the paper's Figure 5d; every suite
# falls likewise):

# %% tags=["hide-input"]
deg = pd.DataFrame({name: t.outcome_degenerate_by_library_size() for name, t in tables.items()})
deg.index.name = "tools in the library"
shown = deg[[n for n in ("train", name0) if n in deg]].copy()
shown["paper (GenomeQA)"] = pd.Series(paper.OUTCOME_DEGENERATE_BY_LIBRARY_SIZE)
show(shown)

# %% tags=["remove-input"]
claim("fewer-degenerate", all(np.all(np.diff(deg[name].to_numpy()) < 0) for name in tables),
      "on every suite, the larger the library the fewer outcome-degenerate questions")

# %% [markdown]
# ## What the table costs
#
# The table needs $2^n \times |D|$ reasoner calls, once; the paper's on-demand GRPO
# schedule (steps × prompts per step × $G$ rollouts) needs the second column:

# %% tags=["hide-input"]
rows = {"paper: GenomeQA training pool": (paper.TABLE_COST["table_calls"], paper.TABLE_COST["grpo_calls"])}
for name, t in ((n, tables[n]) for n in ("train", name0) if n in tables):
    c = cost_accounting(t.n_tools, t.n_questions)
    rows[f"this book: {name}"] = (c["table_calls"], c["grpo_calls"])
cost = pd.DataFrame.from_dict(rows, orient="index", columns=["table calls", "GRPO schedule calls"])
cost["GRPO / table"] = (cost["GRPO schedule calls"] / cost["table calls"]).round(2)
show(cost.rename_axis("schedule"), 2)

# %% [markdown]
# ## A look-up equals a live call
#
# Training reads the table instead of the reasoner, so the two must agree: random
# (question, subset) pairs run live, against the stored rows.

# %% tags=["hide-input"]
rng = np.random.default_rng(seed)
live_qs = list(rng.choice(np.array(suites[name0], dtype=object), size=min(n_live, len(suites[name0])), replace=False))
live_masks = rng.integers(0, table0.n_actions, size=len(live_qs))
live_lib = tool_library_for(bench_dir)  # a fresh library: tools really run again
live = live_agreement(live_masks, live_qs, table0, live_lib, reader)

# %% tags=["remove-cell"]
glue_number("live_n", live["n"], 0)
glue_number("live_agreement", live["agreement"])
glue_text("live_diff", f"{live['max_logprob_diff']:.1e}".replace("-", "−"))
_ = glue_text("paper_live", "–".join(f"{x:g}" for x in paper.LIVE_AGREEMENT_POINTS))

# %% [markdown]
# Over {glue:text}`live_n` live calls the answers agree with the table on
# {glue:text}`live_agreement`%, log-probabilities within {glue:text}`live_diff`: a look-up is a
# live call (the paper's live pipeline and cached table agreed within
# {glue:text}`paper_live` points).

# %% tags=["remove-input"]
claim("lookup-equals-live", live["agreement"] == 100 and live["max_logprob_diff"] < 1e-3,
      "every live call gives the table's answer, to within 0.001 in log-probability")

# %% [markdown]
# ## Building a table yourself
#
# ```bash
# .venv/bin/fgpo table build --bench data/benchmarks/cpu --suite core --reasoner minilm --out tables/core
# .venv/bin/fgpo table build ... --shard 0/4     # four independent shards, then: fgpo table merge DIR
# .venv/bin/fgpo table summary tables/core
# ```
#
# Rows are written in atomic chunks, so a killed build resumes and ends identical to an
# uninterrupted one; shards are independent question ranges.
#
# ## References
#
# The paper's Section 3.2 and Algorithm 1 (the exhaustive table), Figure 1a, Figure 5d,
# Table 12 and Appendix G.4 (the reasoner prompt); MiniLM (Wang et al. 2020) and SmolLM2
# (Allal et al. 2025). Full entries are in {doc}`../book/references`.
