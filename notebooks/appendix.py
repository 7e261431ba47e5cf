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
# # The appendix, on the real tables
#
# The paper's appendix varies FGPO's settings one at a time and sets GRPO, SFT, DPO and a larger
# selector beside it. Each is answered here by runs of the policy-head selector of
# {doc}`head_study`: {glue:text}`ap_n_train` training questions, all {glue:text}`ap_n_test` test
# questions of `core`, `microbe` and `mosaic` ({glue:text}`ap_n_id` in domain,
# {glue:text}`ap_n_ood` out of domain by the rule of {doc}`benchmarks`),
# {glue:text}`ap_n_seeds` seeds per setting, every rate, weight and checkpoint chosen on
# {glue:text}`ap_dev`.
#
# A gap is a setting's accuracy minus its reference's, in points, with the 95% interval of the
# two-level paired bootstrap of {doc}`head_study`: a difference when the interval excludes zero,
# level when it lies within ±1 point, otherwise undecided. A star marks a gap whose Holm-adjusted
# p-value over its table is below 0.05. The paper's numbers (a 7B selector, an 8B reasoner, its
# own benchmark) show a shape, not a level.

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the small studies trained when ablation_dir or five_dir is empty
fair_dir = "../runs/cpu/fair"  # the fair test: every estimator x regularizer x rate x seed (`make fair`)
ablation_dir = "../runs/cpu/ablations"  # `fgpo study --methods ablations`; empty: train a small one now
five_dir = "../runs/cpu/ablations-five"  # `fgpo study --methods five` on the five-tool tables; empty: small one now
study_tables = "../data/tables/cpu/reader"  # the training reader's four-tool tables, one subfolder per suite
study_features = "../data/features/cpu/minilm"  # cached prompt features (four tool slots)
study_bench = "../data/benchmarks/cpu"  # the benchmark both were made from
five_tables = "../data/tables/cpu/reader-five"  # the same reader's 32-subset tables
five_features = "../data/features/cpu/minilm-five"  # prompt features with five tool slots
head_seeds = 2  # seeds of a small study (only when a study folder is empty)
head_epochs = 3  # its epochs
head_questions = 200  # its dev questions and its questions per test suite

# %% tags=["remove-input"]
import tempfile
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fgpo_core.book import paper
from fgpo_core.book.claims import claim, fmt_number, glue_number, glue_text
from fgpo_core.book.palette import checked_study_palette, color, set_style, variant_styles
from fgpo_core.book.plots_appendix import plot_appendix_panels
from fgpo_core.evaluation.bootstrap import MARGIN
from fgpo_core.evaluation.domains import question_domains
from fgpo_core.experiments.factorial import EXACT, SAMPLED, SAMPLED_EQ1, parse_cell
from fgpo_core.experiments.study import ABLATIONS, StudyConfig, load_study, run_study
from fgpo_core.genomics.benchmarks.suites import load_benchmark
from fgpo_core.reports.ablation import group_size_table, tool_invocation
from fgpo_core.reports.ablation_intervals import (HOLM_MARK, add_fixed, add_methods, interval_table, mean_tools,
                                                  signed_interval, study_test, weight_grid)
from fgpo_core.reports.fair import estimator_label, load_fair
from fgpo_core.reports.larger import family_name, tool_rates
from fgpo_core.reports.study import label, study_scores
from fgpo_core.reports.tables import show
from fgpo_core.table import load_tables

set_style()
warnings.filterwarnings("ignore")
SPLITS = ("pooled", "in domain", "out of domain")


def small_study(methods, tables, features, epochs=head_epochs, checkpoints=3):
    """Only when a study folder is empty: the same study, small, trained now."""
    out = tempfile.mkdtemp(prefix="fgpo-ablations-")
    run_study(StudyConfig(methods=methods, seeds=head_seeds, epochs=epochs, lrs="3e-2", n_train=0,
                          n_dev=head_questions, n_test=head_questions, table_dir=tables, features_dir=features,
                          bench_dir=study_bench, checkpoints=checkpoints, out_dir=out), progress=False)
    return out


if not ablation_dir:
    ablation_dir = small_study("ablations", study_tables, study_features)
if not five_dir:
    five_dir = small_study("five", five_tables, five_features, epochs=4, checkpoints=4)
ab, five = load_study(ablation_dir), load_study(five_dir)
TEST = [s for s in ab.manifest["config"]["suites"].split(",") if s]
_, questions = load_benchmark(study_bench)
domains = question_domains({s: questions[s] for s in TEST}, questions["train"])
tables = load_tables({"r": study_tables}, ["train"] + TEST)["r"]
tables5 = load_tables({"r": five_tables}, TEST)["r"]
FIXED = {"No-Tool": 0, "All-Tools": -1, "BestFixed*": "best"}
abt = study_test(ab, tables, domains, FIXED)
fivet = study_test(five, tables5, domains, {"All-Five": -1, "BestFixed*": "best"})
fair = load_fair(fair_dir, study_tables, study_bench)
add_fixed(add_methods(fair, tables, list(fair.study.manifest["chosen_lr"])), tables, FIXED)


def pct(ft, m, split="pooled"):
    """Accuracy (%) of a method on a split, mean over its seeds."""
    return ft.accuracy(m, None if split == "pooled" else ft.in_domain if split == "in domain" else ~ft.in_domain)


def seed_sd(ft, m):
    """Standard deviation over seeds of a method's pooled accuracy (points)."""
    a = 100.0 * ft.correct[m].mean(1)
    return float(a.std(ddof=1)) if len(a) > 1 else 0.0


def on_indev(st):
    return st.manifest["config"].get("dev_suite") == "indev"


indev = {"fair test": on_indev(fair.study), "ablations": on_indev(ab), "five-tool study": on_indev(five)}
glue_text("ap_dev", "the in-domain dev" if all(indev.values()) else
          "the in-domain dev in the " + " and ".join(k for k, v in indev.items() if v) + " and on the former dev "
          "(which holds out-of-domain families) in the " + " and ".join(k for k, v in indev.items() if not v))
glue_number("ap_n_train", ab.manifest["n_questions"]["train"], 0)
glue_number("ap_n_test", len(abt.ids), 0)
glue_number("ap_n_id", int(abt.in_domain.sum()), 0)
glue_number("ap_n_ood", int((~abt.in_domain).sum()), 0)
glue_number("ap_n_seeds", ab.manifest["config"]["seeds"], 0)
claim("same_questions", np.array_equal(abt.ids, fair.ids) and np.array_equal(abt.in_domain, fair.in_domain),
      "the fair test and the ablations are read on the same test questions and domains")
no_tool = glue_number("ap_no_tool", pct(abt, "No-Tool"))

# %% [markdown]
# ## 1. Regularization and the coverage dial, matched
#
# The fair test of {doc}`head_study` trains every estimator with no regularizer, the entropy bonus
# $\beta H(q)$ or KL to uniform, at weights 0.01, 0.03 and 0.1. The coverage dial is FGPO on $k$ of the 16 subsets per visit, drawn uniformly, $q$
# renormalised on them (the paper's Fig. 1c; $k = 16$ is exact FGPO). Pooled test accuracy by
# entropy weight (0.01 only in the figure), and the gain over none of the regularizer and weight the dev chose (the cells of
# {doc}`head_study`; for {glue:text}`ap_klu_chosen` that is KL to uniform, its equivalent below):

# %% tags=["remove-input"]
have = set(fair.cells.index.get_level_values("estimator"))
EST = [e for e in EXACT[:1] + EXACT[1:][::-1] + SAMPLED + SAMPLED_EQ1 if e in have]
EST = [e for e in EST if e != "fgpo-k1"] + ["fgpo-k1"]
ent_w = sorted({parse_cell(m)[2] for m in fair.correct if "-ent" in m})


def cell(e, r):
    return fair.cells.loc[(e, r), "method"]


def est_label(e):
    return "FGPO, exact" if e == "fgpo" else estimator_label(e)


def listed(names):
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def verdicts(rows):
    """The verdicts of gaps read together: "each a difference", "none a difference", or each one's."""
    d = [bool(r.difference) for r in rows]
    return "each a difference" if all(d) else "none a difference" if not any(d) else ", ".join(r.verdict for r in rows)


# the fair test's own pairs, as head_study reads them: each estimator's best regularized cell on dev
# (the entropy bonus or KL to uniform, at its weight) against no regularizer
reg_pairs = {e: fair.pairs[f"{e}: best regularizer vs none"] for e in EST if e != "fgpo-k1"}
klu_chosen = [e for e, (a, _) in reg_pairs.items() if parse_cell(a)[1] == "klu"]
glue_text("ap_klu_chosen", listed(est_label(e) for e in klu_chosen) or "no estimator")
reg = fair.comparisons(reg_pairs)
grid = weight_grid(fair, list(reg_pairs), "ent", ent_w)
t1 = grid.drop(columns=ent_w[:1]).rename(index=est_label, columns={"none": "none (%)",
                                                                    **{w: f"β = {w:g} (%)" for w in ent_w}})
t1.index.name = "estimator"
gain = interval_table(reg, {e: est_label(e) for e in reg_pairs}, ("pooled",), mark=HOLM_MARK)
t1["dev's choice − none, pooled (points)"] = gain["pooled (points)"].reindex(t1.index)
show(t1, 1)
R = reg.set_index(["comparison", "split"])
OTHERS = [e for e in reg_pairs if e != "fgpo"]  # the table's rows below exact FGPO
gains = {e: R.loc[(e, "pooled")] for e in OTHERS}
lifted = [e for e in OTHERS if gains[e].low > 0]
flat = [e for e in OTHERS if e not in lifted]
clear = [e for e in lifted if gains[e].low >= 0.05]  # a lower bound that does not round to +0.0
edge = [e for e in lifted if e not in clear]
glue_number("ap_ent_fgpo", R.loc[("fgpo", "pooled"), "gap"], signed=True)
glue_number("ap_ent_fgpo_id", R.loc[("fgpo", "in domain"), "gap"], signed=True)
glue_number("ap_ent_fgpo_ood", R.loc[("fgpo", "out of domain"), "gap"], signed=True)
glue_text("ap_ent_fgpo_ood_v", R.loc[("fgpo", "out of domain"), "verdict"])
glue_number("ap_reg_rloo", R.loc[("rloo", "pooled"), "gap"], signed=True)  # = head_study's RLOO row
glue_number("ap_ent_lo", min(gains[e].gap for e in clear), signed=True)
glue_number("ap_ent_hi", max(gains[e].gap for e in clear), signed=True)
glue_text("ap_ent_edge", "".join(f"; {est_label(e)} by {signed_interval(gains[e].gap, gains[e].low, gains[e].high)}, "
                                 "just clear of zero" for e in edge))
flat_all = [e for e in reg_pairs if not R.loc[(e, "pooled")].low > 0]
glue_text("ap_ent_who", "every estimator" + (" but " + listed(est_label(e) for e in flat_all) if flat_all else ""))
glue_number("ap_n_lifted", len(clear), 0)
glue_number("ap_n_others", len(OTHERS), 0)
chosen_w = {e: float(fair.cells.loc[(e, "ent"), "weight"]) for e in reg_pairs}
glue_text("ap_w_max", f"{max(ent_w):g}")
other_w = [est_label(e) for e, w in chosen_w.items() if w != max(ent_w)]
glue_text("ap_w_who", "every estimator" + (" but " + listed(other_w) if other_w else ""))
EQ1 = [e for e in SAMPLED_EQ1 if e in have and e.split("-eq1")[0] in have]
eq1_drift = [e for e in EQ1 if mean_tools(fair.study, cell(e, "none"), fair.test_suites) < 1.0]
glue_text("ap_eq1_drift", listed(est_label(e.split("-eq1")[0]) for e in eq1_drift))
glue_text("ap_eq1_tools", listed(f"{mean_tools(fair.study, cell(e, 'none'), fair.test_suites):.2f}" for e in eq1_drift))
glue_text("ap_eq1_diff_tools", listed(f"{mean_tools(fair.study, cell(e.split('-eq1')[0], 'none'), fair.test_suites):.2f}"
                                      for e in eq1_drift))
# KL to uniform against the entropy bonus, weight by weight
twins = [(m, m.replace("-ent", "-klu")) for m in fair.correct if "-ent" in m]
twins = [(m, k) for m, k in twins if k in fair.correct]
same = [m for m, k in twins if np.array_equal(fair.correct[m], fair.correct[k])]
differ = {m: (k, m) for m, k in twins if m not in same}
klu_gaps = fair.comparisons(differ) if differ else pd.DataFrame(columns=["gap", "difference"])
glue_number("ap_klu_same", len(same), 0)
glue_number("ap_klu_n", len(twins), 0)
klu_pooled = klu_gaps[klu_gaps["split"] == "pooled"] if differ else klu_gaps
glue_number("ap_klu_gap", float(klu_pooled["gap"].abs().max()) if differ else 0.0, 2);

# %% [markdown]
# The entropy bonus lifts {glue:text}`ap_ent_who`: FGPO by
# {glue:text}`ap_ent_fgpo` points ({glue:text}`ap_ent_fgpo_id` in domain;
# out of domain {glue:text}`ap_ent_fgpo_ood`, {glue:text}`ap_ent_fgpo_ood_v`), and
# {glue:text}`ap_n_lifted` of the other {glue:text}`ap_n_others` estimators by
# {glue:text}`ap_ent_lo` to {glue:text}`ap_ent_hi`, each a difference{glue:text}`ap_ent_edge`. The dev chose the grid's largest weight,
# {glue:text}`ap_w_max`, for {glue:text}`ap_w_who`, so the grid may stop
# short of the best weight. On Eq. 1's reward {glue:text}`ap_eq1_drift`
# drift toward the empty subset: {glue:text}`ap_eq1_tools` tools per question with no
# regularizer, against {glue:text}`ap_eq1_diff_tools` on the differential reward.
#
# KL to uniform, $\log|A| - H(q)$, is the bonus up to a constant: of {glue:text}`ap_klu_n` pairs
# of runs at one estimator and weight, {glue:text}`ap_klu_same` pick the same subset on every test
# question, the rest differ by at most {glue:text}`ap_klu_gap` points, a difference on no split.

# %% tags=["remove-input"]
claim("ent_lifts", R.loc[("fgpo", "pooled")].low > 0 and len(clear) > len(flat) + len(edge)
      and not R.loc[("fgpo", "out of domain")].level and not R.loc[("fgpo", "out of domain")].difference,
      "the entropy bonus lifts FGPO and most other estimators, differences; FGPO's out-of-domain lift is undecided")
claim("eq1_drift", len(eq1_drift) >= 1 and all(pct(fair, cell(e, "none")) < pct(fair, cell(e.split("-eq1")[0], "none"))
                                              for e in eq1_drift),
      "the Eq. 1 variants that drift toward the empty subset score below their differential-reward versions")
claim("ent_rises", sum(chosen_w[e] == max(ent_w) for e in chosen_w) >= len(chosen_w) - 2
      and sum(grid.loc[e, max(ent_w)] > grid.loc[e, "none"] for e in chosen_w) >= len(chosen_w) - 2,
      "accuracy at the largest weight is above none, and the dev chose it, for all but at most two estimators")
claim("klu_is_ent", len(same) >= len(twins) // 2 and (not differ or (klu_pooled["gap"].abs().max() < 1.0
                                                                       and not klu_gaps["difference"].any())),
      "KL to uniform gives the entropy bonus's numbers: identical picks or gaps under a point, none a difference");

# %% [markdown]
# Against exact FGPO at the same regularizer (each at the weight the dev chose), the dial reads:

# %% tags=["remove-input"]
KS = [k for k in (8, 4, 2) if f"fgpo-k{k}" in have]
dial_pairs = {(k, r): (cell(f"fgpo-k{k}", r), cell("fgpo", r)) for k in KS for r in ("none", "ent")}
dial = fair.comparisons({f"{k} {r}": p for (k, r), p in dial_pairs.items()})
D = dial.set_index(["comparison", "split"])
t2 = pd.concat([interval_table(dial, {f"{k} {r}": f"k = {k}" for k in KS}, mark=HOLM_MARK)
                .rename(columns=lambda c, r=r: f"{'no regularizer' if r == 'none' else 'entropy bonus'}, {c}")
                for r in ("none", "ent")], axis=1)
t2.index.name = "subsets per visit"
for (k, r), split in ((kr, sp) for kr in dial_pairs for sp in SPLITS):  # an end that reads ±1.0: two decimals
    x = D.loc[(f"{k} {r}", split)]
    if any(round(abs(v), 1) == MARGIN for v in (x.low, x.high)):
        t2.loc[f"k = {k}", f"{'no regularizer' if r == 'none' else 'entropy bonus'}, {split} (points)"] = (
            f"{fmt_number(x.gap, 2, True)} [{x.low:+.2f}, {x.high:+.2f}]".replace("-", "\u2212")
            + (HOLM_MARK if x.p_holm < 0.05 else ""))
show(t2)
k1 = [m for m in fair.correct if m.startswith("fgpo-k1-")]
glue_number("ap_k1", pct(fair, k1[0]))
for k in KS:
    for r in ("none", "ent"):
        for split, tag in (("pooled", ""), ("in domain", "_id"), ("out of domain", "_ood")):
            glue_number(f"ap_dial{k}_{r}{tag}", D.loc[(f"{k} {r}", split), "gap"], signed=True)
glue_number("ap_fgpo_none", pct(fair, cell("fgpo", "none")))
glue_number("ap_fgpo_ent", pct(fair, cell("fgpo", "ent")))
for k, v in paper.COVERAGE_DIAL.items():
    glue_number(f"ap_paper_k{k}", v, 2)
ent_dial = [D.loc[(f"{k} ent", s)] for k in KS for s in SPLITS]
glue_number("ap_dial_ent_max", max(abs(x.gap) for x in ent_dial), 1)
glue_number("ap_dial_level", sum(bool(x.level) for x in ent_dial), 0)
glue_text("ap_dial_level_which", listed(f"k = {k} {s}" for k in KS for s in SPLITS if D.loc[(f"{k} ent", s)].level)
          or "none")
glue_number("ap_dial_n", len(ent_dial), 0);

# %% [markdown]
# With the entropy bonus no $k$ is detectably different from exact FGPO on any split (gaps of at
# most {glue:text}`ap_dial_ent_max` points), yet level (interval strictly inside ±1 point) in only
# {glue:text}`ap_dial_level` of the {glue:text}`ap_dial_n` cases ({glue:text}`ap_dial_level_which`); the rest
# are undecided. Without
# it exact FGPO is weak ({glue:text}`ap_fgpo_none`%, against {glue:text}`ap_fgpo_ent`% with the
# bonus) and $k = 4$ is above it by {glue:text}`ap_dial4_none` points ({glue:text}`ap_dial4_none_id` in domain): a
# random shortlist per visit keeps $q$ from collapsing, as the bonus does. Unregularized,
# $k = 8$ is {glue:text}`ap_dial8_none_id` in domain and
# {glue:text}`ap_dial8_none_ood` out of domain, both differences. The paper's dial rose with $k$,
# from {glue:text}`ap_paper_k2` at $k = 2$ to {glue:text}`ap_paper_k16` at 16.
#
# At $k = 1$ nothing trains ($q$ renormalised over one subset is 1, its gradient zero): the head
# keeps its start, the empty subset, and scores No-Tool's {glue:text}`ap_k1`% at every regularizer.

# %% tags=["remove-input"]
claim("dial_ent_flat", not any(x.difference for x in ent_dial) and sum(bool(x.level) for x in ent_dial) < len(ent_dial),
      "with the entropy bonus no k differs from exact FGPO on any split, and not every gap is level")
claim("dial_none", D.loc[("4 none", "pooled")].low > 0 and D.loc[("4 none", "in domain")].low > 0
      and D.loc[("8 none", "in domain")].low > 0 and D.loc[("8 none", "out of domain")].high < 0
      and pct(fair, cell("fgpo", "none")) < pct(fair, cell("fgpo", "ent")),
      "without a regularizer k = 4 beats exact FGPO pooled and in domain; k = 8 leads in domain, trails out of it")
claim("k1_floor", all(np.array_equal(fair.correct[m], np.repeat(fair.correct["No-Tool"], len(fair.correct[m]), 0))
                      for m in k1), "every k = 1 run picks the empty subset on every question");

# %% [markdown]
# ## 2. The other ablations
#
# The other ablations change one setting of the paper's FGPO ($\lambda = 0.10$, $\beta = 0.03$,
# temperature 1, a linear head) or GRPO ($G = 6$). Each row against its reference (whose accuracy
# is in brackets):

# %% tags=["remove-input"]
tool_name = dict(zip((f"T{i + 1}" for i in range(4)), tables["core"].names()))
ROWS = {  # name -> (row label, setting, reference, reference label)
    **{f"l{v}": (f"FGPO, λ = {v}", f"fgpo-lambda{v}", "fgpo", "FGPO") for v in ("0", "0.05", "0.2")},
    **{f"t{v}": (f"FGPO, τ = {v}", f"fgpo-T{v}", "fgpo", "FGPO") for v in ("0.5", "0.7")},
    **{f"n{n}": (f"FGPO, first {n} questions", f"fgpo-n{n}", "fgpo", "FGPO") for n in (125, 250, 500)},
    **{f"gn{n}": (f"GRPO, first {n} questions", f"grpo-n{n}", "grpo", "GRPO") for n in (125, 250, 500)},
    **{f"no{i}": (f"FGPO without T{i} ({tool_name[f'T{i}']})", f"fgpo-noT{i}", "fgpo", "FGPO") for i in (1, 2, 3, 4)},
    **{f"g{G}": (f"GRPO, G = {G}", f"grpo-G{G}", "grpo", "GRPO, G = 6") for G in (2, 4, 8, 16)},
    "sft": ("SFT", "sft", "No-Tool", "No-Tool"),
    **{f"dpo{b}": (f"DPO, β = {b}", f"dpo-beta{b}" if b != "0.3" else "dpo", "No-Tool", "No-Tool")
       for b in ("0.1", "0.3", "0.5")},
    **{f"h{h}": (f"FGPO, MLP {h}", f"fgpo-h{h}", "fgpo", "FGPO, linear") for h in (64, 256)},
    **{f"fg{h}": (f"FGPO against GRPO, {w}", f"fgpo{s}", f"grpo{s}", f"GRPO, {w}")
       for h, w, s in (("lin", "linear", ""), ("64", "MLP 64", "-h64"), ("256", "MLP 256", "-h256"))},
}
ROWS = {n: r for n, r in ROWS.items() if r[1] in abt.correct and r[2] in abt.correct}
abc = abt.comparisons({n: (a, b) for n, (_, a, b, _) in ROWS.items()})
t3 = interval_table(abc, {n: r[0] for n, r in ROWS.items()}, mark=HOLM_MARK,
                    extra={"accuracy (%)": {n: round(pct(abt, r[1]), 1) for n, r in ROWS.items()},
                           "against (its %)": {n: f"{r[3]} ({pct(abt, r[2]):.1f})" for n, r in ROWS.items()}})
show(t3)
V = abc.set_index(["comparison", "split"])


def gap(n, split="pooled"):
    return V.loc[(n, split)]


A = {m: pct(abt, m) for m in abt.correct}

# %% tags=["remove-input"]
def series(ft, methods, name, colour, **kw):
    return {"label": name, "colour": colour, "mean": [pct(ft, m) if m in ft.correct else None for m in methods],
            "err": [seed_sd(ft, m) if m in ft.correct else 0.0 for m in methods], **kw}


FG, GR = color("FGPO"), color("GRPO")
fair_sampled = [cell(e, "ent") for e in SAMPLED if e in have]  # the differential reward's (Eq. 1's: the table)
pal = checked_study_palette([cell("fgpo", "ent")] + fair_sampled, "the appendix's figure")
sty = variant_styles({m: pal[m] for m in [cell("fgpo", "ent")] + fair_sampled})
weights = [0.0] + list(ent_w)


def by_weight(e):
    return [cell(e, "none")] + [f"{e}-ent{w:g}" for w in ent_w]


sizes = [125, 250, 500, ab.manifest["n_questions"]["train"]]
dial_x = KS[::-1] + [16]
panels = [
    {"title": "coverage dial (fair test)", "xlabel": "k, subsets per visit", "x": dial_x, "log_x": True,
     "paper": paper.COVERAGE_DIAL, "series": [
         series(fair, [cell(f"fgpo-k{k}" if k < 16 else "fgpo", "none") for k in dial_x],
                "FGPO on k subsets, no regularizer", FG, ls="--", marker="s"),
         series(fair, [cell(f"fgpo-k{k}" if k < 16 else "fgpo", "ent") for k in dial_x],
                "FGPO on k subsets, entropy bonus", FG, ls="-", marker="s")]},
    {"title": "entropy weight (fair test)", "xlabel": "β, entropy bonus", "x": weights, "categorical": True,
     "series": [series(fair, by_weight(parse_cell(m)[0]), est_label(parse_cell(m)[0]), pal[m], ls=sty[m][0],
                       marker=sty[m][1], err=None) for m in [cell("fgpo", "ent")] + fair_sampled]},
    {"title": "parsimony", "xlabel": "λ (Eq. 1)", "x": [0, 0.05, 0.1, 0.2], "categorical": True,
     "paper": {k: v["accuracy"] for k, v in paper.PARSIMONY.items()},
     "series": [series(abt, ABLATIONS["parsimony"], "FGPO, exact", FG)]},
    {"title": "temperature of q", "xlabel": "τ (listwise temperature)", "x": [0.5, 0.7, 1.0], "categorical": True,
     "paper": {0.7: paper.SENSITIVITY["temperature_0.7"], 1.0: paper.SENSITIVITY["beta_0.03"]},
     "series": [series(abt, ABLATIONS["temperature"], "FGPO, exact", FG)]},
    {"title": "data scale", "xlabel": "training questions", "x": sizes, "log_x": True, "paper": paper.DATA_SCALE,
     "series": [series(abt, ABLATIONS["data"][:4], "FGPO, exact", FG),
                series(abt, ABLATIONS["data"][4:], label("grpo"), pal.get(cell("grpo", "ent"), GR),
                       ls=sty.get(cell("grpo", "ent"), ("-",))[0], marker=sty.get(cell("grpo", "ent"), (0, "o"))[1])]},
    {"title": "GRPO's group size", "xlabel": "G, draws per visit", "x": [2, 4, 6, 8, 16], "log_x": True,
     "series": [series(abt, ABLATIONS["group"], label("grpo"), pal.get(cell("grpo", "ent"), GR),
                       ls=sty.get(cell("grpo", "ent"), ("-",))[0], marker=sty.get(cell("grpo", "ent"), (0, "o"))[1])]},
]
fig = plot_appendix_panels(panels, alt=(
    "Six panels of test accuracy over all test questions, mean over seeds with bars of one standard deviation: "
    "the coverage dial with and without the entropy bonus; each estimator against the entropy weight; "
    "FGPO against the parsimony weight, the temperature and the training questions (GRPO beside it); "
    "GRPO against its group size; the paper's points as open grey squares."))
plt.show()

# %% [markdown]
# Mean over seeds on all test questions, bars (where drawn) one standard deviation, the entropy
# panel on the differential reward; open grey squares: the paper.

# %% tags=["remove-input"]
glue_number("ap_l0", A["fgpo-lambda0"])
glue_number("ap_fgpo", A["fgpo"])
glue_number("ap_l0_gap", gap("l0").gap, signed=True)
glue_number("ap_l0_tools", mean_tools(ab, "fgpo-lambda0", TEST), 2)
glue_number("ap_l10_tools", mean_tools(ab, "fgpo", TEST), 2)
glue_number("ap_paper_l0", paper.PARSIMONY[0.0]["accuracy"], 2)
glue_number("ap_paper_l10", paper.PARSIMONY[0.10]["accuracy"], 2)
glue_number("ap_paper_l_cost", paper.PARSIMONY[0.10]["accuracy"] - paper.PARSIMONY[0.0]["accuracy"], 2)
glue_number("ap_l02_gap", gap("l0.2").gap, signed=True)
glue_text("ap_l0_v", gap("l0").verdict)
glue_text("ap_l02_v", gap("l0.2").verdict)
glue_number("ap_l02_ood", -gap("l0.2", "out of domain").gap)
SMALL = ("l0", "l0.05", "l0.2", "t0.5", "t0.7", "g2", "g4", "g8", "g16")
glue_number("ap_small_max", max(abs(gap(n).gap) for n in SMALL))
claim("small_pooled", not any(gap(n).difference for n in SMALL) and gap("l0.2", "out of domain").high < 0,
      "parsimony, temperature and group size make no pooled difference; lambda 0.2 loses out of domain, a difference")
glue_number("ap_paper_tau1", paper.SENSITIVITY["beta_0.03"], 2)  # its default (tau 1), on the same subsample
glue_number("ap_paper_tau07", paper.SENSITIVITY["temperature_0.7"], 2)
claim("lambda", not gap("l0").difference and mean_tools(ab, "fgpo-lambda0", TEST) > mean_tools(ab, "fgpo", TEST),
      "lambda 0 does not differ from the default pooled and calls more tools")
claim("tau", not any(gap(n, k).difference for n in ("t0.5", "t0.7") for k in SPLITS),
      "the temperatures 0.5 and 0.7 differ from the default on no split")

# %% [markdown]
# **Parsimony and temperature.** Eq. 1 pays $\lambda(1 - 2|a|/n)$ on top of correctness, so
# $\lambda = 0$ makes every right subset worth the same. Here it makes FGPO call
# {glue:text}`ap_l0_tools` tools per question instead of {glue:text}`ap_l10_tools` and moves
# pooled accuracy by {glue:text}`ap_l0_gap` points ({glue:text}`ap_l0_v`); $\lambda = 0.2$ moves
# it {glue:text}`ap_l02_gap` ({glue:text}`ap_l02_v`) but costs {glue:text}`ap_l02_ood` points out
# of domain, a difference. The paper's $\lambda = 0$ cost {glue:text}`ap_paper_l_cost` points
# ({glue:text}`ap_paper_l0`% against {glue:text}`ap_paper_l10`%). The temperatures 0.5 and 0.7 differ from 1 on no split (the
# paper's 0.7 moved it from {glue:text}`ap_paper_tau1`% to {glue:text}`ap_paper_tau07`%, on a 1,200-question
# subsample).

# %% tags=["remove-input"]
small_families = set(tables["train"].select(tables["train"].question_ids[:500]).family)
ood_loss = [-gap(f"n{n}", "out of domain").gap for n in (125, 250, 500)]
glue_number("ap_data_ood_lo", min(ood_loss))
glue_number("ap_data_ood_hi", max(ood_loss))
glue_number("ap_not2_ood", -gap("no2", "out of domain").gap)
GN = [f"gn{n}" for n in (125, 250, 500)]
glue_text("ap_gn_ood", listed(fmt_number(gap(n, "out of domain").gap, 1, signed=True) for n in GN))
glue_text("ap_gn_ood_v", verdicts([gap(n, "out of domain") for n in GN]))
glue_text("ap_paper_data", ", ".join(f"{v:.2f}" for v in paper.DATA_SCALE.values()))
claim("data_families", "regulator" not in small_families and "regulator" in set(tables["train"].family),
      "the first 500 training questions hold no regulator question; the whole pool does")
claim("data_ood", all(gap(f"n{n}", "out of domain").high < 0 for n in (125, 250, 500))
      and max(ood_loss) <= -gap("no2", "out of domain").gap,
      "every smaller set loses out of domain, a difference, no more than removing T2 costs")

# %% [markdown]
# **Data.** The first 125, 250 and 500 training questions (20 epochs each) come from the pool's
# first families, without the regulator family, the one that pays for the motif scan. Out of
# domain FGPO loses {glue:text}`ap_data_ood_lo` to {glue:text}`ap_data_ood_hi` points on them,
# each a difference, no more than it loses without T2 ({glue:text}`ap_not2_ood`); GRPO on 125,
# 250 and 500 moves {glue:text}`ap_gn_ood` points out of domain ({glue:text}`ap_gn_ood_v`). The data buys families, not more of the same. The paper's FGPO
# was not monotone in its data either ({glue:text}`ap_paper_data` at 500, 1,000 and 2,002).

# %% tags=["remove-input"]
core = tables["core"].select(list(abt.ids[abt.suites == "core"]))
rem = core.single_tool_removal()
inv = tool_invocation(ab, core, ["fgpo"])
fam_core = np.asarray(core.family)
ids_f, picks_f = ab.pick_matrix("core", "fgpo")
fam_f = np.asarray(tables["core"].select(list(ids_f)).family)
t2_tf = 100.0 * float(((picks_f[:, fam_f == "tf_motif"] >> 1) & 1).mean())
glue_number("ap_rm4_or", -rem["delta_oracle"].iloc[3])
glue_number("ap_paper_rm4_or", -paper.TABLE12_GENOMEQA["delta_oracle"].iloc[3], 2)
glue_number("ap_rm4", -gap("no4").gap)
glue_number("ap_rm2_ood", -gap("no2", "out of domain").gap)
glue_number("ap_rm2_id", gap("no2", "in domain").gap, signed=True)
glue_number("ap_rm3_id", -gap("no3", "in domain").gap)
glue_number("ap_t2_tf", t2_tf, 0)
claim("rm_t4", gap("no4").gap == min(gap(f"no{i}").gap for i in (1, 2, 3, 4))
      and all(gap("no4", k).high < 0 for k in SPLITS)
      and rem["delta_oracle"].idxmin() == rem.index[3], "T4 costs most, by the table and retrained, on every split")
claim("rm_t2_t3", gap("no2", "out of domain").high < 0 and gap("no2", "in domain").gap > 0
      and gap("no3", "in domain").high < 0,
      "without T2 FGPO loses out of domain, a difference, and gains in domain; without T3 it loses in domain")

# %% [markdown]
# **Tools.** The library can least lose T4 (the expert): without it the oracle on
# `core` falls {glue:text}`ap_rm4_or` points (the paper's T4 {glue:text}`ap_paper_rm4_or`) and
# retrained FGPO {glue:text}`ap_rm4`, a difference on every split. The motif scan pays out of
# domain: FGPO calls it on {glue:text}`ap_t2_tf`% of `core`'s TF-motif questions, and without it
# loses {glue:text}`ap_rm2_ood` points there while gaining {glue:text}`ap_rm2_id` in domain.
# The splice tool T3 pays in domain ({glue:text}`ap_rm3_id` points).

# %% tags=["remove-input"]
gs = group_size_table(ab, study_scores(ab, {s: tables[s] for s in TEST}), no_tool, "core")
glue_number("ap_gs_dead_min", gs["dead groups, last epoch (%)"].min(), 0)
glue_number("ap_gs_eval_lo", gs["reward evaluations"].min(), 0)
glue_number("ap_gs_eval_hi", gs["reward evaluations"].max(), 0)
glue_number("ap_paper_dead_diff", paper.DEAD_GROUPS["grpo_differential_G6"])
glue_number("ap_gs_gap_max", max(abs(gap(f"g{G}", k).gap) for G in (2, 4, 8, 16) for k in SPLITS))
claim("gs_small", gs["dead groups, last epoch (%)"].min() > 50, "most last-epoch groups are dead at every G")

# %% [markdown]
# **GRPO's group size.** From $G = 2$ to 16 a run's reward evaluations grow from
# {glue:text}`ap_gs_eval_lo` to {glue:text}`ap_gs_eval_hi`, and accuracy moves by at most
# {glue:text}`ap_gs_gap_max` points from $G = 6$ on any split. At every $G$ at least
# {glue:text}`ap_gs_dead_min`% of the last epoch's groups were dead; the paper measured {glue:text}`ap_paper_dead_diff`% for its
# GRPO at $G = 6$.

# %% tags=["remove-input"]
ids_s, picks_s = ab.pick_matrix("core", "sft")
core_s = tables["core"].select(list(ids_s))
glue_number("ap_sft_empty", 100.0 * float((picks_s == 0).mean()))
glue_number("ap_sft_seeds", picks_s.shape[0], 0)
empty_opt = 100.0 * float((core_s.oracle_actions() == 0).mean())
glue_number("ap_empty_opt", empty_opt)
glue_number("ap_paper_sft_empty", paper.EMPTY_SUBSET["sft_argmax_empty"])
glue_number("ap_paper_empty_opt", paper.EMPTY_SUBSET["empty_optimal"])
glue_number("ap_sft", A["sft"])
glue_number("ap_sft_vs_fgpo", A["fgpo"] - A["sft"])
glue_number("ap_paper_sft", paper.MAIN_GENOMEQA["SFT"], 2)
dpo = [m for m in ABLATIONS["imitation"][1:] if m in A]
glue_text("ap_dpo_all", ", ".join(f"{A[m]:.1f}" for m in dpo))
claim("sft_dpo", all(gap(n).low > 0 for n in ("sft", "dpo0.1", "dpo0.3", "dpo0.5") if n in ROWS)
      and A["sft"] < A["fgpo"] and empty_opt < 50,
      "SFT and every DPO beta are above No-Tool, differences; SFT is below FGPO")

# %% [markdown]
# **SFT and DPO.** The paper's SFT put {glue:text}`ap_paper_sft_empty`% of its argmax picks on the
# empty subset and every DPO landed at the No-Tool floor, because the empty subset was
# reward-optimal for {glue:text}`ap_paper_empty_opt`% of its questions. Here it is optimal for
# {glue:text}`ap_empty_opt`% of `core` questions, and SFT's argmax is the empty subset on
# {glue:text}`ap_sft_empty`% of them (all {glue:text}`ap_sft_seeds` seeds). Neither
# collapses: SFT reads {glue:text}`ap_sft`% ({glue:text}`ap_sft_vs_fgpo` points below FGPO; the
# paper's {glue:text}`ap_paper_sft`) and DPO at $\beta$ = 0.1, 0.3, 0.5 reads
# {glue:text}`ap_dpo_all`%, each above No-Tool.

# %% tags=["remove-input"]
glue_number("ap_h64", gap("h64").gap, signed=True)
glue_number("ap_h256", gap("h256").gap, signed=True)
glue_text("ap_fg_lead", ", ".join(fmt_number(gap(f"fg{h}").gap, 1, signed=True) for h in ("lin", "64", "256")))
glue_text("ap_fg_lead_ood", ", ".join(fmt_number(gap(f"fg{h}", "out of domain").gap, 1, signed=True)
                                      for h in ("lin", "64", "256")))
glue_number("ap_paper_cap_fgpo", paper.SENSITIVITY["selector_1.5b_fgpo"], 2)
glue_number("ap_paper_cap_grpo", paper.SENSITIVITY["selector_1.5b_grpo"], 2)
glue_text("ap_fg_pooled_v", verdicts([gap(f"fg{h}") for h in ("lin", "64", "256")]))
glue_text("ap_fg_ood_v", verdicts([gap(f"fg{h}", "out of domain") for h in ("lin", "64", "256")]))
mlp_grpo = [m for m in ("grpo-h64", "grpo-h256") if m in abt.correct]
mlp_masks = {m: set(np.unique(np.concatenate([ab.pick_matrix(s, m)[1].ravel() for s in TEST]))) for m in mlp_grpo}
best_fixed = int(np.argmax(np.concatenate([tables[s].select(list(abt.ids[abt.suites == s])).correct
                                           for s in TEST]).mean(0)))
glue_text("ap_grpo_mlp_subset", tables["core"].space.label(best_fixed))
glue_number("ap_grpo_mlp", A["BestFixed*"])
claim("grpo_mlp_one_subset", len(mlp_grpo) == 2 and all(v == {best_fixed} for v in mlp_masks.values()),
      "GRPO with a hidden layer of 64 or 256 picks the best fixed subset on every test question and seed")
claim("capacity", all(gap(f"fg{h}").gap > 0 for h in ("lin", "64", "256")),
      "FGPO (with its bonus) leads GRPO pooled at every width")

# %% [markdown]
# **Capacity.** A hidden layer of 64 or 256 units moves FGPO by {glue:text}`ap_h64` and
# {glue:text}`ap_h256` points. FGPO's lead over GRPO (at this section's β = 0.03 for FGPO and
# none for GRPO, not matched) is {glue:text}`ap_fg_lead` points pooled at the three widths
# ({glue:text}`ap_fg_pooled_v`), and {glue:text}`ap_fg_lead_ood` out of domain
# ({glue:text}`ap_fg_ood_v`). With a hidden layer GRPO picks one subset, the best fixed one
# ({glue:text}`ap_grpo_mlp_subset`, {glue:text}`ap_grpo_mlp`%), on every question and seed. The paper's
# 1.5B selector kept its lead too, {glue:text}`ap_paper_cap_fgpo` against
# {glue:text}`ap_paper_cap_grpo`.
#
# ## 3. A fifth tool
#
# T5 (homology search: local alignment to labelled repeat sequences drawn on the training side)
# doubles the action space to 32 subsets; the 16 without T5 are the four-tool table's rows. The same
# study on these tables, with five-slot features (so FGPO on T1–T4 is not section 2's
# run{glue:text}`ap_f5_same`):

# %% tags=["remove-input"]
all5 = np.concatenate([tables5[s].select(list(fivet.ids[fivet.suites == s])).correct for s in fivet.test_suites])
best5 = int(np.argmax(all5.mean(0)))
FIVE = {"fgpo": "FGPO, 32 subsets", "fgpo-noT5": "FGPO, T1–T4 only", "grpo": label("grpo"),
        "All-Five": "All-Five", "BestFixed*": "best fixed of 32: " + tables5["core"].space.label(best5)}
FIVE = {m: n for m, n in FIVE.items() if m in fivet.correct}
c5 = fivet.comparisons({m: ("fgpo", m) for m in FIVE if m != "fgpo"})
t4 = pd.DataFrame({f"{k} (%)": [pct(fivet, m, k) for m in FIVE] for k in SPLITS},
                  index=pd.Index(list(FIVE.values()), name="method"))
lead = interval_table(c5, {m: FIVE[m] for m in FIVE if m != "fgpo"}, ("pooled",), mark=HOLM_MARK)
t4["FGPO (32) minus it, pooled (points)"] = lead["pooled (points)"].reindex(t4.index)
t4["paper (%)"] = [{"fgpo": paper.FIVE_TOOL["fgpo_final"], "All-Five": paper.FIVE_TOOL["all_five"],
                    "BestFixed*": paper.FIVE_TOOL["best_fixed"]}.get(m) for m in FIVE]
show(t4, 1)
C5 = c5.set_index(["comparison", "split"])
inv5 = tool_invocation(five, tables5["core"], ["fgpo"])
t5_share = float(inv5.filter(like="T5").loc["FGPO"].iloc[0])
glue_number("ap_f5_t5", t5_share, 0)
glue_number("ap_paper_f5_t5", paper.FIVE_TOOL["invocation"]["T5"])
RIVALS5 = [m for m in ("grpo", "All-Five", "BestFixed*") if m in FIVE]
for sp in ("in domain", "out of domain"):
    gaps = [abs(C5.loc[(m, sp), "gap"]) for m in RIVALS5]
    glue_text(f"ap_f5_{sp[:2]}", f"{fmt_number(min(gaps), 1)} to {fmt_number(max(gaps), 1)}")
    x = C5.loc[("fgpo-noT5", sp)]
    glue_text(f"ap_f5_not5_{sp[:2]}", signed_interval(x.gap, x.low, x.high))
    glue_text(f"ap_f5_not5_{sp[:2]}_v", x.verdict)
x = C5.loc[("fgpo-noT5", "pooled")]
glue_number("ap_f5_cost", -x.gap)
same_pooled = fmt_number(pct(fivet, "fgpo-noT5"), 1) == fmt_number(A["fgpo"], 1)
glue_text("ap_f5_same", "; its pooled accuracy matches by chance: "
          + " and ".join(fmt_number(pct(fivet, "fgpo-noT5", k), 1) for k in SPLITS[1:]) + "% in and out of domain, against "
          + " and ".join(fmt_number(pct(abt, "fgpo", k), 1) for k in SPLITS[1:]) + "%" if same_pooled else "")
family_of = pd.concat([pd.Series(tables5[s].family, index=tables5[s].question_ids) for s in fivet.test_suites])
family_of = family_of[~family_of.index.duplicated()]
tf_rates = {slot: tool_rates(five.picks[five.picks.suite.isin(fivet.test_suites)], family_of, slot,
                             ["fgpo", "fgpo-noT5"])[family_name("tf_motif")] for slot in (1, 4)}
glue_number("ap_f5_tf_t2", tf_rates[1]["fgpo"], 0)
glue_number("ap_f5_tf_t2_not5", tf_rates[1]["fgpo-noT5"], 0)
glue_number("ap_f5_tf_t5", tf_rates[4]["fgpo"], 0)
claim("five_in_domain", all(C5.loc[(m, "in domain")].low > 0 for m in RIVALS5),
      "in domain FGPO over 32 subsets is above GRPO, All-Five and the best fixed subset, each a difference")
claim("five_ood", all(C5.loc[(m, "out of domain")].high < 0 for m in RIVALS5 + ["fgpo-noT5"]),
      "out of domain it is below each of them and below FGPO on T1-T4, each a difference")
claim("five_pooled", not any(C5.loc[(m, "pooled")].difference for m in RIVALS5),
      "pooled no gap to GRPO, All-Five or the best fixed subset is a difference")
claim("five_not5", not C5.loc[("fgpo-noT5", "in domain")].difference, "T5 gains FGPO no difference in domain")
claim("five_cost", C5.loc[("fgpo-noT5", "pooled")].high < 0, "T5 costs FGPO pooled accuracy, a difference")
claim("five_route", tf_rates[1]["fgpo"] < tf_rates[1]["fgpo-noT5"] - 20,
      "with T5 FGPO calls the motif scan on TF-motif questions far less often than on T1-T4")
claim("five_t5", t5_share > 10 * paper.FIVE_TOOL["invocation"]["T5"], "FGPO calls T5 far more often than the paper's")

# %% [markdown]
# The paper's result holds in domain only: there FGPO over 32 subsets is {glue:text}`ap_f5_in`
# points above GRPO, All-Five and the best fixed subset, out of domain {glue:text}`ap_f5_ou` below
# them, each a difference; no pooled gap is a difference. The fifth tool itself, against FGPO on
# T1–T4: {glue:text}`ap_f5_not5_in` points in domain ({glue:text}`ap_f5_not5_in_v`) and
# {glue:text}`ap_f5_not5_ou` out of domain ({glue:text}`ap_f5_not5_ou_v`). The loss is
# routing: with 32 subsets FGPO calls the motif scan on {glue:text}`ap_f5_tf_t2`% of TF-motif
# questions (on T1–T4, {glue:text}`ap_f5_tf_t2_not5`%) and homology on {glue:text}`ap_f5_tf_t5`%.
# FGPO calls T5 on {glue:text}`ap_f5_t5`% of `core` questions, where the paper's selector all but
# ignored it ({glue:text}`ap_paper_f5_t5`%). {doc}`past_enumeration` takes the library to 8 and
# 12 tools.
#
# ## What the appendix says
#
# Regularization, not coverage, is the setting that matters most: the entropy bonus lifts exact
# and sampled estimators alike, and once it is on, FGPO on
# 2, 4 or 8 subsets per visit is not detectably different from exact FGPO. Beyond it, what FGPO
# can route decides its accuracy: the tools it may call (T4 everywhere, T2 out of domain, T3 in
# domain) and the families it trained on. Parsimony, temperature and GRPO's group size move pooled
# accuracy by at most {glue:text}`ap_small_max` points, none a difference, though $\lambda = 0.2$
# costs {glue:text}`ap_l02_ood` points out of domain. A fifth tool costs FGPO
# {glue:text}`ap_f5_cost` points pooled, a difference: it loses the motif-scan routing out of
# domain. Where we part from the paper: its dial rose with $k$, ours with the bonus shows no
# detectable change, and without it $k = 4$ did better than exact FGPO ({glue:text}`ap_dial4_none`
# points); and our SFT and DPO do not collapse, because the empty subset is the optimum for fewer of
# our questions. {doc}`../book/rerun` says how to re-run these studies.

# %% tags=["remove-input"]
print(paper.CITATION)
