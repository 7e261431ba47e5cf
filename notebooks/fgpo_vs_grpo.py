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
# # FGPO versus GRPO
#
# The paper's Table 2 on a CPU: a language model (the *selector*) names the tools a frozen reasoner
# sees. From one *format warm-up*, **FGPO** ascends the exact expected reward over all 16 subsets
# (Eq. 2, 5; **FGPO + format term**, this book's addition, also keeps free generation on the policy
# strings), **GRPO** (TRL) samples $G = 6$ completions per question (Eq. 3), and **SFT** and
# **DPO** imitate the table's best subset.
#
# **In short.** On the whole training pool, whose regulator questions pay for the motif scan, FGPO
# (with a format term) and GRPO first give every question one subset with the motif scan, the one
# their own reward ranks first, and are level at equal visits ({glue:text}`ev_core` points on core),
# as are the checkpoints each keeps by dev. With more visits FGPO goes on to route by question: at
# equal time it is ahead in domain ({glue:text}`et_id`) and far behind out of domain
# ({glue:text}`et_ood`), having dropped the motif scan the unseen TF-motif family needs, and by two
# epochs it has fallen below the warm-up on dev ({ref}`whole-pool`). On the first pool every RL
# update dropped it at once, and every RL run kept the warm-up's adapter ({ref}`first-pool`).

# %% tags=["parameters"]
profile = "cpu"  # which profile these parameters came from
seed = 0  # seeds the untrained selector's adapter and the live-agreement sample (training seeds: each run's manifest)
bench_dir = "../data/benchmarks/cpu"  # the benchmark the runs were made from; empty: the one their manifests name
table_dir = "../data/tables/cpu/reader"  # the training reader's tables (one subfolder per suite); empty: the runs' own
reader_dir = "../data/readers/minilm-evidence"  # the trained evidence reader (re-run live against the table)
runs_dir = "../runs/cpu"  # holds chosen.json, written by `fgpo lm` (the committed runs: `make lm`)
pool_dir = "../runs/cpu/lm-pool"  # the runs on the whole training pool and their evaluated snapshots (`make lm-pool`)
lm_companion_dir = "../runs/cpu/lm-companion"  # the post-training chapter's LM study, for one comparison ("": skip)
n_live = 64  # (question, subset) pairs re-run live against the table, per distinct selector

# %% tags=["remove-cell"]
import json
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython.display import display

from fgpo_core.book import paper
from fgpo_core.book.build import REPO_ROOT
from fgpo_core.book.chapter import show_source
from fgpo_core.book.claims import claim, glue_number, glue_p, glue_text
from fgpo_core.book.plots import set_style
from fgpo_core.book.plots_lm import plot_lm_dev, plot_pool_course, plot_warmup
from fgpo_core.evaluation.difference import compare
from fgpo_core.evaluation.metrics import live_agreement
from fgpo_core.experiments.run import EVAL_SUITES
from fgpo_core.experiments.snapshots import run_logs
from fgpo_core.genomics.benchmarks import load_benchmark, tool_library_for
from fgpo_core.reasoners import get_reasoner
from fgpo_core.reports.lm_reading import (fixed_subset_matches, group_label, identical_groups, selector_table,
                                          tool_value_table)
from fgpo_core.reports.lm_runs import (dev_table, format_summary, grpo_dead_groups, load_chosen, method_grid,
                                       stopped_runs, training_cost, warmup_chain, warmup_curve, warmup_format_checks)
from fgpo_core.reports.pool import (POOL_RUNS, accuracy_by_part, checkpoint_costs, dev_course, pick_routing,
                                    pool_comparisons, pool_configs, pool_snapshots, question_answers, versus_tests)
from fgpo_core.reports.tables import show
from fgpo_core.selectors import LMSelector
from fgpo_core.selectors.lm import load_selector
from fgpo_core.table import has_table, load_table, load_tables

# %% tags=["remove-cell"]
set_style()
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", message="Could not find a config file")
if not runs_dir:
    raise ValueError("runs_dir is empty: point it at the folder `fgpo lm` wrote (its chosen.json names the runs)")
runs = load_chosen(runs_dir)
warm = runs["Warm-up"]  # every other trained row starts from its adapter
setup = warm.manifest["setup"]
bench_dir = bench_dir or str(REPO_ROOT / setup["bench_dir"])
table_dir = table_dir or str(REPO_ROOT / setup["table_dir"])
_, suites = load_benchmark(bench_dir)
library = tool_library_for(bench_dir)
reader_id = warm.manifest["table"]["reasoner"]
TEST = [s for s in EVAL_SUITES if has_table(Path(table_dir) / s) and s in warm.evals]
tables = load_tables({"evidence reader": table_dir}, TEST, expect={"evidence reader": {"reasoner": reader_id}})
train_pool = load_table(Path(table_dir) / "train")
train_qs = suites["train"][:warm.manifest["n_train"]]
train_table = train_pool.select([q.id for q in train_qs])  # the questions the selectors trained on
# every question in the table of the families the selectors trained on (the pool's later
# regulator family is not among them)
train_all = train_pool.select([i for i, f in zip(train_pool.question_ids, train_pool.family)
                               if f in set(train_table.family)])
dev_table_ = load_table(Path(table_dir) / "dev")
trained = {name: r for name, r in runs.items() if r.manifest is not None and name != "Warm-up"}
RL = [m for m in ("FGPO", "FGPO + format term", "GRPO") if m in trained]
space = train_table.space
T2 = train_table.names().index("motif_scan")  # the motif scan's slot (0-based)


def subset_label(a: int) -> str:
    return space.label(int(a)) if a else "no tool"



# %% [markdown]
# ## The selector and its prompt
#
# The paper's Qwen2.5-7B-Instruct becomes SmolLM2-135M-Instruct with the same LoRA shape
# (rank 16, alpha 32). The prompt is the paper's (Appendix G.1), with four *anonymous* tool
# slots; long sequences are shortened to their ends, and the answer is pre-filled with
# `<answer>`. One dev prompt:

# %% tags=["hide-input"]
torch.manual_seed(seed)  # the fresh adapter's initialisation (its B is zero, so it changes no score until trained)
sel = load_selector(None, setup["keep"], trainable=False)
dev_qs = suites["dev"][:4]
print(sel.prompt_text(dev_qs[0]))
bare = LMSelector(sel.model, sel.tokenizer, n_tools=4, keep=sel.keep, prefill="")
mass_bare = np.array([float(bare.scores_and_p_gen(q)[1].sum()) for q in dev_qs])
mass_pre = np.array([float(sel.scores_and_p_gen(q)[1].sum()) for q in dev_qs])
glue_text("mass_bare", f"{mass_bare.mean():.1e}")
glue_text("mass_pre", f"{mass_pre.mean():.2f}")
glue_number("n_mass", len(dev_qs), digits=0);

# %% [markdown]
# Without the pre-fill the untrained model answers the question itself instead of choosing
# tools: on {glue:text}`n_mass` dev questions it puts a mean {glue:text}`mass_bare` of its
# generation mass on the 16 policy strings; with the pre-fill, {glue:text}`mass_pre`.

# %% tags=["remove-input"]
claim("prefill-raises-mass", bool((mass_pre > mass_bare).all()),
      "the pre-fill raises the untrained selector's mass on the policy strings on every probed dev question");

# %% [markdown]
# ## Why every method starts from a format warm-up
#
# Even with the pre-fill, GRPO sampling from $p_{\text{gen}}$ would start with mostly format
# failures. Plain FGPO has the opposite problem: Eq. 2 fixes only how the 16 policy strings
# score *against each other*, and Eq. 4 pushes on the ending they share (`</answer>`, end of
# turn) with the weight $\sum_a g_a / |y_a|$ (Eq. 8), negative whenever the strings FGPO favours
# are longer: it teaches the model not to close its answer.

# %% tags=["remove-cell"]
stopped = stopped_runs(warm.folder.parent)
stop = next(iter(stopped.values()), None)
if stop is not None:
    stop_log = pd.DataFrame(stop["steps"])
    stop_dev = pd.DataFrame(stop["dev"]).set_index("step")
    drained = stop_log[stop_log.p_gen_mass < 1e-3]
    glue_text("stop_lr", f"{stop['config']['lr']:g}")
    glue_number("stop_drained_step", int(drained.step.min()) if len(drained) else float("nan"), digits=0)
    later = stop_dev[stop_dev.index > 0]
    glue_number("stop_gen_ff", later.gen_format_failures.iloc[-1], digits=0);

# %% [markdown]
# FGPO at the rate {glue:text}`stop_lr` drained the policy strings' mass below 0.001 by step
# {glue:text}`stop_drained_step`, and free generation failed the format on
# {glue:text}`stop_gen_ff`% of dev. Hence one **format warm-up** for all:
# policy strings drawn *uniformly* (the format, nothing about tools), plus a term raising
# $\log \sum_a p_{\text{gen}}(a \mid s)$, until that mass reaches 95% on dev.

# %% tags=["remove-input"]
claim("stopped-run-drained", stop is not None and len(drained) > 0 and later.gen_format_failures.min() >= 90,
      "the stopped FGPO run drained the policy strings' mass and free generation failed the format on dev");

# %% tags=["hide-input"]
chain = warmup_chain(warm.folder)
wdev, wsteps = warmup_curve(chain)
fig = plot_warmup(wdev, wsteps, chain[-1]["config"]["target_mass"])
plt.show()
frames = warmup_format_checks(warm.folder)
fmt = format_summary(frames) if frames else None
if fmt is not None:
    glue_number("fmt_untrained", fmt.loc["untrained", "canonical_mass"])
    glue_number("fmt_warm", fmt.iloc[-1]["canonical_mass"])
    glue_number("fmt_warm_parse", fmt.iloc[-1]["parse_rate"]);

# %% [markdown]
# Sampled at temperature 1 on dev, the policy strings hold {glue:text}`fmt_untrained`% of
# the mass before the warm-up and {glue:text}`fmt_warm`% after it; {glue:text}`fmt_warm_parse`%
# of sampled completions name a subset.

# %% tags=["remove-input"]
claim("warmup-format", fmt is not None and fmt.iloc[-1]["canonical_mass"] >= 95 > fmt.loc["untrained", "canonical_mass"],
      "the warm-up raises the mass on the policy strings from below to above 95%");

# %% [markdown]
# ## The two estimators in code
#
# FGPO scores the 16 policy strings by their per-token mean log-probabilities (Eq. 4) in
# one batched pass, with the policy-head study's `fgpo_loss` (plus, for the format term,
# $-\log$ of the strings' mass, weighted). GRPO is TRL's `GRPOTrainer`; the book adds only
# its reward, a table look-up:

# %% tags=["remove-input"]
from fgpo_core.algorithms.grpo import TableReward

display(show_source(TableReward.__call__))

# %% [markdown]
# (whole-pool)=
# ## Training on the whole pool
#
# The whole pool adds {glue:text}`pool_n_reg` regulator questions, which pay for the motif scan T2
# ({glue:text}`pool_n_train` in all; the first pool never does, {ref}`first-pool`). FGPO and GRPO
# train on it with {glue:text}`pool_batch` questions a step at the rate {glue:text}`pool_lr` (GRPO
# in groups of {glue:text}`pool_G`), evaluating dev every {glue:text}`pool_f_every` steps (FGPO, a
# quarter epoch) or {glue:text}`pool_g_every` (GRPO) and keeping a snapshot of each evaluation.
#
# FGPO as the paper writes it (rate {glue:text}`pool_stop_lr`, no format term) broke free
# generation here: at step {glue:text}`pool_stop_step` greedy generation failed the format on
# {glue:text}`pool_stop_ff`% of dev. So FGPO here adds the format
# term (weight {glue:text}`pool_fw`). Dev accuracy by free generation (★ the kept evaluation):

# %% tags=["hide-input"]
if not pool_dir:
    raise ValueError("pool_dir is empty: point it at the folder `make lm-pool` wrote (runs/cpu/lm-pool)")
F, G = "FGPO + format term", "GRPO"
course = dev_course(pool_dir)
pool_cfg = pool_configs(pool_dir)
for key, value in (("pool_batch", pool_cfg[F]["batch_size"]), ("pool_G", pool_cfg[G]["G"]),
                   ("pool_f_every", pool_cfg[F]["eval_every"]), ("pool_g_every", pool_cfg[G]["eval_every"])):
    glue_number(key, value, digits=0)
glue_text("pool_lr", f"{pool_cfg[F]['lr']:g}")
glue_text("pool_fw", f"{pool_cfg[F]['format_weight']:g}")
dev_fixed = 100 * dev_table_.correct.mean(0)
matches = [fixed_subset_matches(dev_table_, a, t) for a, t in zip(course.generation, course.tools)]
course["subset"] = [m[0] if len(m) == 1 else -1 for m in matches]  # the one fixed subset it reproduces (-1: none)
pool_steps, _ = run_logs(Path(pool_dir) / POOL_RUNS[G])
pool_dead = grpo_dead_groups({"steps": pool_steps.to_dict("records"), "config": pool_cfg[G]})
fig = plot_pool_course(course, {"All-Tools": dev_fixed[-1]}, pool_dead)
plt.show()
# %% tags=["remove-input"]
cf, cg = course[course.run == F].set_index("step"), course[course.run == G].set_index("step")
kept = {F: int(cf.index[cf.kept][0]), G: int(cg.index[cg.kept][0])}
per_visit = {r: 3600 * c.cpu_hours.iloc[-1] / c.visits.iloc[-1] for r, c in ((F, cf), (G, cg))}
pool_stop = stopped_runs(pool_dir).get("fgpo-paper")
glue_number("pool_n_train", train_pool.n_questions, digits=0)
glue_number("pool_n_reg", int((np.asarray(train_pool.family) == "regulator").sum()), digits=0)
glue_number("pool_start", cf.loc[0, "generation"])
for r, c, short in ((F, cf, "f"), (G, cg, "g")):
    glue_number(f"pool_{short}_visits", c.visits.iloc[-1], digits=0)
    glue_number(f"pool_{short}_steps", c.index[-1], digits=0)
    glue_number(f"pool_{short}_hours", c.cpu_hours.iloc[-1])
    glue_number(f"pool_{short}_kept", kept[r], digits=0)
    glue_number(f"pool_{short}_kept_dev", c.loc[kept[r], "generation"])
    glue_number(f"pool_{short}_per_visit", per_visit[r], digits=1)
glue_number("pool_cost_ratio", per_visit[G] / per_visit[F], digits=1)
table_calls = space.n_actions * train_pool.n_questions  # the reward table: every subset of every training question, once
glue_number("pool_table_calls", table_calls, digits=0)
_ = glue_number("pool_calls_visits", table_calls / pool_cfg[G]["G"], digits=0)
# %% tags=["remove-input"]
later = course[course.step > 0]
best_by = {r: int(train_pool.rewards(r).mean(0).argmax()) for r in ("eq1", "differential")}
fixed_f = cf[(cf.index > 0) & (cf.subset >= 0)]
f_fixed_last = int(fixed_f.index.max()) if len(fixed_f) else 0  # FGPO's last evaluation of one fixed subset
early = later[(later.run == G) | (later.step <= f_fixed_last)]
run_subsets = {r: sorted(set(early[early.run == r].subset)) for r in (F, G)}
glue_number("f_fixed_last", f_fixed_last, digits=0)
glue_number("f_fixed_last_visits", cf.loc[f_fixed_last, "visits"] if f_fixed_last else 0, digits=0)
glue_number("f_last", cf.index[-1], digits=0)
glue_number("f_last_dev", cf.generation.iloc[-1])
glue_text("pool_f_subsets", " and ".join(subset_label(a) for a in run_subsets[F]))
glue_text("pool_g_subsets", " and ".join(subset_label(a) for a in run_subsets[G]))
glue_text("pool_eq1_best", subset_label(best_by["eq1"]))
glue_text("pool_diff_best", subset_label(best_by["differential"]))
recount = pool_dead.recount.dropna()
glue_number("dead_first", 100 * recount.iloc[:5].mean(), digits=0)
glue_number("dead_last", 100 * recount.iloc[-5:].mean(), digits=0)
glue_number("dead_last_step", pool_dead.step.iloc[-1], digits=0)
if pool_stop is not None:
    sdev = pd.DataFrame(pool_stop["dev"]).set_index("step")
    glue_text("pool_stop_lr", f"{pool_stop['config']['lr']:g}")
    glue_number("pool_stop_ff", sdev.gen_format_failures.iloc[-1])
    glue_number("pool_stop_step", sdev.index[-1], digits=0);

# %% [markdown]
# Both runs leave the warm-up's {glue:text}`pool_start`% at their first evaluation. Every later one
# of GRPO's, and FGPO's up to step {glue:text}`f_fixed_last` ({glue:text}`f_fixed_last_visits`
# visits), scores what one fixed subset with the motif scan scores: FGPO's
# {glue:text}`pool_f_subsets`, GRPO's {glue:text}`pool_g_subsets`. Each reaches the subset its own
# reward ranks first over the pool, the one best *on average*: {glue:text}`pool_eq1_best` under
# Eq. 1 (FGPO's, which charges for every tool) and {glue:text}`pool_diff_best` under GRPO's
# differential reward (correct with the subset minus correct with none). FGPO then moves on,
# and by step {glue:text}`f_last` its dev score has fallen to {glue:text}`f_last_dev`%, below the
# warm-up. Among the evaluations tied at
# {glue:text}`pool_f_kept_dev`% on dev, FGPO keeps step {glue:text}`pool_f_kept`
# (ties go to the higher expected reward J) and GRPO step {glue:text}`pool_g_kept` (ties go to
# the earlier step).
#
# GRPO's groups died as its policy concentrated: by the exact recount {glue:text}`dead_first`% were
# dead over its first five steps and {glue:text}`dead_last`% over its last five (to step
# {glue:text}`dead_last_step`). A visit cost GRPO {glue:text}`pool_cost_ratio` times FGPO's CPU time
# ({glue:text}`pool_g_per_visit` against {glue:text}`pool_f_per_visit` seconds): it samples and
# back-propagates six completions where FGPO scores 16 strings in one pass. In reasoner calls, the
# table both runs read cost {glue:text}`pool_table_calls`, once; GRPO as the paper runs it, calling
# the reasoner per completion, spends as many in {glue:text}`pool_calls_visits` visits, more than
# FGPO's whole run.

# %% tags=["remove-input"]
claim("pool-paper-fgpo-broke", pool_stop is not None and sdev.gen_format_failures.iloc[-1] > 90
      and pool_stop["config"]["format_weight"] == 0 and pool_stop["steps"][-1]["p_gen_mass"] < 0.5,
      "FGPO as the paper writes it failed the format on most of dev on the whole pool")
claim("pool-same-settings", pool_cfg[F]["lr"] == pool_cfg[G]["lr"] and pool_cfg[F]["batch_size"] == pool_cfg[G]["prompts_per_step"]
      and pool_cfg[F]["format_weight"] > 0, "FGPO (with the format term) and GRPO train at one rate and batch size")
claim("pool-fixed-subsets-with-t2", len(early) > 0 and (early.subset >= 0).all() and f_fixed_last >= 60
      and all(space.membership[a, T2] for a in early.subset), "every dev evaluation after step 0 of GRPO, and of FGPO "
      "for its first quarter epochs, reproduces one fixed subset with the motif scan")
claim("pool-above-start", (early.generation > cf.loc[0, "generation"]).all()
      and cf.generation.iloc[-1] < cf.loc[0, "generation"], "those evaluations score above the warm-up, and FGPO's "
      "last scores below it")
claim("pool-kept-tied", cf.loc[kept[F], "generation"] == cg.loc[kept[G], "generation"] == early.generation.max()
      and kept[G] == cg.index[cg.index > 0].min(), "both runs keep an evaluation at the one best dev accuracy, GRPO its "
      "first after step 0")
claim("pool-own-reward-best", best_by["eq1"] in run_subsets[F] and best_by["differential"] in run_subsets[G]
      and best_by["eq1"] != best_by["differential"], "each run reaches the subset its own reward ranks first over "
      "the pool, and the two rewards rank different subsets first")
claim("pool-dead-rise", len(recount) >= 10 and recount.iloc[-5:].mean() >= 0.6
      and recount.iloc[-5:].mean() > recount.iloc[:5].mean() + 0.2, "GRPO's dead groups rose to most of its groups")
claim("pool-table-calls-beyond-fgpo-run", table_calls / pool_cfg[G]["G"] > cf.visits.iloc[-1],
      "GRPO calling the reasoner per completion matches the table's calls only beyond FGPO's whole run")
claim("pool-grpo-costlier", per_visit[G] > 3 * per_visit[F], "a visit costs GRPO several times FGPO's CPU time")

# %% [markdown]
# ## At equal visits and at equal time
#
# Snapshots of the two runs, each evaluated by free generation on the warm-up's test questions: at
# **equal visits** (GRPO's last evaluation and FGPO's at as many question visits) and at **equal
# time** (GRPO's last evaluation and FGPO's evaluated snapshot nearest it in CPU time), and as each
# run **kept** them (its dev argmax); in the tests and routing, a run's checkpoints that pick alike
# share a row. In domain means a family the
# pool trains on; microbe, and core's TF-motif and taxonomy questions, are out of domain. The
# best fixed subset is chosen with hindsight on all these questions.

# %% tags=["hide-input"]
snaps = pool_snapshots(pool_dir, course)
pairs = pool_comparisons(course, snaps)
missing = {"equal visits", "equal time"} - set(pairs)
if missing:
    raise FileNotFoundError(f"{pool_dir} holds no evaluated snapshots of FGPO and GRPO at "
                            f"{' or '.join(sorted(missing))}: "
                            "run `make lm-pool-eval`")
ckpts = list(dict.fromkeys([(F, s) for s, _ in pairs.values()] + [(G, s) for _, s in pairs.values()]))
ckpts.sort(key=lambda k: (k[0] != F, k[1]))
name_of = {k: f"{k[0]}, step {k[1]}" for k in ckpts}
pool_sel = {"Warm-up": warm, **{name_of[k]: snaps[k] for k in ckpts}}
ans, pool_picks = question_answers(pool_sel, {s: tables["evidence reader"][s] for s in TEST}, set(train_pool.family))
alike = {}  # checkpoints of one run with the same pick on every test question
for k in ckpts:
    alike.setdefault((k[0], tuple(pool_picks[name_of[k]])), []).append(k)
group_of = {k: ks for ks in alike.values() for k in ks}
row_of = {k: f"{k[0]}, step{'s' if len(ks) > 1 else ''} {' and '.join(str(s) for _, s in ks)}"
          for k, ks in group_of.items()}
# %% tags=["hide-input"]
shown_rows = list(pool_sel) + ["All-Tools", "BestFixed*"]
by_part = accuracy_by_part(ans, shown_rows)
cost = {name_of[k]: course[(course.run == k[0]) & (course.step == k[1])].iloc[0] for k in ckpts}
ck_table = checkpoint_costs(course, {name_of[k]: k for k in ckpts}, shown_rows).join(by_part)
core_picks = pool_picks[pool_picks.suite == "core"]
ck_table["tools (core)"] = {m: float(np.mean([space.sizes[a] if a >= 0 else 0 for a in core_picks[m]]))
                            for m in pool_sel}
ck_table.columns = [f"{c} ({by_part.attrs['n'][c]:,})" if c in by_part.attrs["n"] else c for c in ck_table.columns]
ck_table.index = [m if m not in ("All-Tools", "BestFixed*") else
               f"{m} ({subset_label(space.n_actions - 1 if m == 'All-Tools' else ans.attrs['best_fixed'])})"
               for m in ck_table.index]
show(ck_table.rename_axis("checkpoint"), caption="Accuracy (%) by free generation on the test questions "
     "(how many); visits and CPU hours of training to each checkpoint", **{"tools (core)": "{:.2f}"})

# %% tags=["hide-input"]
masks = by_part.attrs["masks"]
same_pair = {}
for what, pair in pairs.items():  # a pair that is two comparisons at once (equal visits and kept, say) is one row
    same_pair.setdefault(pair, []).append(what)
versus = {f"FGPO step {sf} vs GRPO step {sg} ({', '.join(whats)})": (name_of[(F, sf)], name_of[(G, sg)])
          for (sf, sg), whats in same_pair.items()}
for ks in alike.values():
    versus[f"{row_of[ks[0]]} vs the warm-up"] = (name_of[ks[0]], "Warm-up")
    versus[f"{row_of[ks[0]]} vs the best fixed subset"] = (name_of[ks[0]], "BestFixed*")
pool_tests, ptab = versus_tests(ans, masks, versus)
show(ptab.rename_axis("comparison"), caption="The first minus the second (points), exact McNemar p on the "
     "same questions; * a difference by the book's rule")

# %% tags=["remove-input"]
SHORT = {"equal visits": "ev", "equal time": "et", "kept": "kp"}
for what, (sf, sg) in pairs.items():
    if what not in SHORT:
        continue
    k, row = SHORT[what], next(r for r in pool_tests if r.startswith(f"FGPO step {sf} vs GRPO step {sg} ("))
    cf_, cg_ = cost[name_of[(F, sf)]], cost[name_of[(G, sg)]]
    glue_number(f"{k}_f_step", sf, digits=0)
    glue_number(f"{k}_g_step", sg, digits=0)
    glue_number(f"{k}_f_visits", cf_.visits, digits=0)
    glue_number(f"{k}_g_visits", cg_.visits, digits=0)
    glue_number(f"{k}_f_hours", cf_.cpu_hours)
    glue_number(f"{k}_g_hours", cg_.cpu_hours)
    for part, short in (("core", "core"), ("in domain", "id"), ("out of domain", "ood")):
        glue_number(f"{k}_{short}", pool_tests[row][part].gap, signed=True)
vs_best = {ks[0]: pool_tests[f"{row_of[ks[0]]} vs the best fixed subset"] for ks in alike.values()}
glue_number("paper_gap_grpo", paper.MAIN_GENOMEQA["FGPO"] - paper.MAIN_GENOMEQA["GRPO"], digits=2, signed=True);

# %% [markdown]
# At equal visits ({glue:text}`ev_f_visits` each), FGPO minus GRPO is {glue:text}`ev_core` points on
# core, {glue:text}`ev_id` in domain and {glue:text}`ev_ood` out of domain, none a difference: two
# fixed subsets that differ by what their rewards charge for a tool, not by how they estimate the
# gradient. GRPO's is the best fixed subset itself. The kept checkpoints (FGPO's step
# {glue:text}`kp_f_step`, GRPO's {glue:text}`kp_g_step`) pick as the equal-visits ones on every test
# question, so they too are level ({glue:text}`kp_core` on core). At equal time
# ({glue:text}`et_f_visits` visits of FGPO to GRPO's {glue:text}`et_g_visits`, in
# {glue:text}`et_f_hours` and {glue:text}`et_g_hours` CPU hours) FGPO is ahead in domain
# ({glue:text}`et_id`, a difference), the only checkpoint ahead of the best fixed subset by a
# difference anywhere, and far behind out of domain ({glue:text}`et_ood`; {glue:text}`et_core` on
# core). The paper puts FGPO {glue:text}`paper_gap_grpo` points ahead of GRPO on GenomeQA; this
# selector shows no such lead.

# %% tags=["remove-input"]
ev_t = pool_tests[next(r for r in pool_tests if r.startswith("FGPO step") and "equal visits" in r)]
et_t = pool_tests[next(r for r in pool_tests if r.startswith("FGPO step") and "equal time" in r)]
claim("pool-level-at-equal-visits", not any(ev_t[p].is_difference for p in ("core", "in domain", "out of domain")),
      "at equal visits FGPO and GRPO are level on core, in and out of domain")
kp = pairs.get("kept")
claim("pool-kept-as-equal-visits", kp is not None and (F, pairs["equal visits"][0]) in group_of[(F, kp[0])]
      and (G, pairs["equal visits"][1]) in group_of[(G, kp[1])], "each run's kept checkpoint picks as its "
      "equal-visits snapshot on every test question")
claim("pool-equal-time-split", et_t["in domain"].a_better and et_t["out of domain"].b_better and et_t["core"].b_better,
      "at equal time FGPO is ahead in domain and behind out of domain and on core")
g_ck = name_of[(G, pairs["equal visits"][1])]
claim("pool-grpo-is-best-fixed", (ans[g_ck] == ans["BestFixed*"]).all(), "GRPO's snapshot answers as the best fixed subset")
ahead = [(k, p) for k, v in vs_best.items() for p in v if v[p].a_better]
claim("pool-only-fgpo-et-above-best", ahead == [(group_of[(F, pairs["equal time"][0])][0], "in domain")],
      "the only checkpoint ahead of the best fixed subset anywhere is FGPO at equal time, in domain")
et_pair = pairs["equal time"]
et_ratio = cost[name_of[(F, et_pair[0])]].cpu_hours / cost[name_of[(G, et_pair[1])]].cpu_hours
claim("pool-equal-time-close", 0.8 <= et_ratio <= 1.2, "at equal time the two snapshots are within a fifth of each "
      "other in CPU hours")


# %% [markdown]
# ## Does the selector route the motif scan?
#
# What each checkpoint picks on core, and how often it calls the motif scan:

# %% tags=["hide-input"]
route_rows = {"Warm-up": "Warm-up", **{row_of[ks[0]]: name_of[ks[0]] for ks in alike.values()}}
routing = pick_routing({row: core_picks[m].to_numpy() for row, m in route_rows.items()}, core_picks.family, T2,
                       subset_label)
show(routing.rename_axis("selector"), caption=f"What each selector picks on core ({len(core_picks):,} questions)",
     **{c: "{:.0f}" for c in routing.columns if c != "most picked"})
trained_rows = routing.drop(index="Warm-up")
glue_number("warm_t2_tf_pool", routing.loc["Warm-up", f"T{T2 + 1} on TF motifs (%)"], digits=0)
et_row = routing.loc[row_of[(F, pairs["equal time"][0])]]
fixed_rows = trained_rows.drop(index=et_row.name)
glue_text("et_most", et_row["most picked"])
glue_number("et_share", et_row["its share (%)"], digits=0)
glue_number("et_subsets", et_row["subsets picked"], digits=0)
glue_number("et_t2_tf", et_row[f"T{T2 + 1} on TF motifs (%)"], digits=0);

# %% [markdown]
# GRPO (steps {glue:text}`kp_g_step` and {glue:text}`ev_g_step`) and FGPO's steps
# {glue:text}`ev_f_step` and {glue:text}`kp_f_step` do not route: each gives one subset, with the
# motif scan, to every core question. FGPO at step {glue:text}`et_f_step` does route, but against
# the unseen family: it picks {glue:text}`et_subsets` subsets, gives {glue:text}`et_most` to
# {glue:text}`et_share`% of core, and calls the motif scan on {glue:text}`et_t2_tf`% of the
# TF-motif questions (the warm-up: {glue:text}`warm_t2_tf_pool`%).

# %% tags=["remove-input"]
claim("pool-no-routing", (fixed_rows["subsets picked"] == 1).all()
      and (fixed_rows[f"T{T2 + 1} on TF motifs (%)"] == 100).all(), "GRPO and FGPO at equal visits give one subset "
      "with the motif scan to every core question")
claim("pool-fgpo-drops-t2", et_row["subsets picked"] > 1 and et_row[f"T{T2 + 1} on TF motifs (%)"] < 25,
      "FGPO at equal time picks several subsets and calls the motif scan on few TF-motif questions");

# %% [markdown]
# (first-pool)=
# ## The first pool: every RL run kept the warm-up
#
# Before the whole pool, every method trained on the first {glue:text}`n_train` training questions,
# of the four families without the regulator, for {glue:text}`first_visits` visits from the
# warm-up's adapter. FGPO and GRPO keep their best dev evaluation's adapter, step 0 included; SFT
# and DPO keep TRL's last. Each run's dev course (★ the kept evaluation; dashed, FGPO at a rate too
# high, stopped):

# %% tags=["hide-input"]
curves = {f"{n} (lr={r.manifest['config']['lr']:g})": r.manifest for n, r in trained.items()
          if r.manifest.get("dev")}
run_of = {f"{n} (lr={r.manifest['config']['lr']:g})": n for n, r in trained.items()}  # a curve's method
curves.update({f"FGPO (lr={s['config']['lr']:g}, stopped)": s for s in stopped.values()})
dev = dev_table(curves)
step_logs = {k: pd.DataFrame(m.get("steps", [])) for k, m in curves.items()}
step_logs = {k: v for k, v in step_logs.items() if "p_gen_mass" in v}
fig = plot_lm_dev(dev, step_logs)
plt.show()
kept_start = {n: trained[n].manifest.get("best_step") == 0 for n in RL}
start = dev[(dev.step == 0) & dev.run.map(run_of).isin(RL)].iloc[0]
after = dev[(dev.step > 0) & dev.run.map(run_of).isin(RL)]
glue_number("dev_start", start.generation)
glue_number("dev_start_tools", start.tools, digits=2)
glue_number("dev_after_min", after.generation.min())
glue_number("dev_after_max", after.generation.max())
glue_number("tools_after_min", after.tools.min(), digits=2)
glue_number("tools_after_max", after.tools.max(), digits=2)
glue_number("loss_min", start.generation - after.generation.max())
glue_number("loss_max", start.generation - after.generation.min());

# %% [markdown]
# The three RL runs start at {glue:text}`dev_start`% on dev with {glue:text}`dev_start_tools`
# tools per question; every later evaluation scores {glue:text}`dev_after_min`% to
# {glue:text}`dev_after_max`% with {glue:text}`tools_after_min` to {glue:text}`tools_after_max`
# tools. None beats step 0, so each keeps the warm-up's adapter.

# %% tags=["remove-input"]
claim("rl-all-below-start", len(after) > 0 and after.generation.max() < start.generation
      and (dev[(dev.step == 0) & dev.run.map(run_of).isin(RL)].generation == start.generation).all(),
      "every later dev evaluation of every RL run scores below the start")
claim("rl-kept-start", all(kept_start.values()) and len(kept_start) == 3,
      "FGPO, FGPO + format term and GRPO each kept their starting adapter");

# %% tags=["remove-cell"]
dead = grpo_dead_groups(trained["GRPO"].manifest)
both = dead.dropna(subset=["trl", "recount"])
glue_number("dead_trl", 100 * dead.trl.mean(), digits=0)
glue_number("dead_recount", 100 * both.recount.mean(), digits=0)
glue_number("dead_trl_same", 100 * both.trl.mean(), digits=0)
glue_number("dead_recount_steps", len(both), digits=0)
glue_number("grpo_steps", len(dead), digits=0)
glue_number("G", trained["GRPO"].manifest["config"]["G"], digits=0)
cost = training_cost({n: r.manifest for n, r in trained.items()})
glue_number("first_visits", cost.loc["FGPO", "visits"], digits=0);

# %% [markdown]
# GRPO learned from few of its groups: TRL counted {glue:text}`dead_trl`% of its groups of
# {glue:text}`G` dead over its {glue:text}`grpo_steps` steps; an exact recount finds more,
# {glue:text}`dead_recount`% against TRL's {glue:text}`dead_trl_same`% on the
# {glue:text}`dead_recount_steps` steps it covers (TRL's float32 group mean can miss a tie).

# %% tags=["remove-input"]
claim("recount-above-trl", len(both) > 0 and both.recount.mean() >= both.trl.mean(),
      "the exact recount finds at least as many dead groups as TRL")
claim("grpo-mostly-dead", dead.trl.mean() > 0.5, "by TRL's count most of GRPO's groups were dead")
claim("first-pool-no-regulator", set(train_table.family) == set(train_pool.family) - {"regulator"}
      and (cost.visits == cost.loc["FGPO", "visits"]).all(),
      "the first pool holds the four families without the regulator, and every method trained for the same visits");

# %% [markdown]
# ### The first pool's table
#
# Every selector of the first pool by free generation (a completion that does not parse counts as
# wrong) on `core`, the analogue of GenomeQA, and the cross-domain suites; selectors with the same
# pick on every test question share a row.

# %% tags=["hide-input"]
ORDER = ["Untrained", "Warm-up", "Tools w/ Desc", "SFT", "DPO", "GRPO", "FGPO", "FGPO + format term",
         "FGPO (named tools)"]
selectors = [m for m in ORDER if m in runs]
groups = identical_groups({m: {s: runs[m].picks(s) for s in runs[m].evals} for m in selectors})
grid = method_grid(runs, tables, mode="generation", methods=selectors)
scoring = method_grid(runs, {"evidence reader": {"core": tables["evidence reader"]["core"]}}, mode="scoring",
                      methods=selectors).set_index("method").accuracy
core_rows = grid[grid.suite == "core"].set_index("method")

kept_step = {m: r.manifest.get("best_step") for m, r in trained.items()}
label = {g[0]: group_label(g, kept_step, core_rows["tools"]) for g in groups}
rep = {m: g[0] for g in groups for m in g}  # each selector's row
row_order = ["No-Tool", "Random", "All-Tools"] + [g[0] for g in groups] + ["BestFixed*", "Oracle"]
acc = grid.pivot(index="method", columns="suite", values="accuracy").reindex(row_order)[TEST]
n_q = {s: int(grid[grid.suite == s].n.iloc[0]) for s in TEST}
main = selector_table(grid, scoring, row_order, label, TEST)
show(main.rename_axis("selector"), caption="Accuracy (%) by free generation (questions per suite); "
     "tools per question; format failures; controlled scoring (Eq. 6) on core",
     **{c: "{:.2f}" for c in main.columns if c.startswith("tools")})

# %% tags=["remove-input"]
W = rep["FGPO"]  # the warm-up's row: FGPO, FGPO + format term and GRPO included
for key, m in (("core", "core"), ("microbe", "microbe"), ("mosaic", "mosaic")):
    if m in acc:
        glue_number(f"warm_{key}", acc.loc[W, m])
        glue_number(f"all_{key}", acc.loc["All-Tools", m])
        glue_number(f"best_{key}", acc.loc["BestFixed*", m])
glue_number("warm_scoring", scoring[W])
glue_number("warm_tools_core", core_rows.loc[W, "tools"], digits=2)
glue_number("paper_fgpo", paper.MAIN_GENOMEQA["FGPO"], digits=2)
glue_number("paper_grpo", paper.MAIN_GENOMEQA["GRPO"], digits=2)
glue_number("paper_all", paper.MAIN_GENOMEQA["All-Tools"], digits=2)
sft_row = rep.get("SFT")
glue_number("sft_core", acc.loc[sft_row, "core"])
glue_text("rl_group", label[W].split(" (")[0])
for s_ in ("microbe", "mosaic"):
    glue_number(f"n_{s_}", n_q.get(s_, 0), digits=0);

# %% [markdown]
# The row {glue:text}`rl_group` is one selector: {glue:text}`warm_core`% on core with
# {glue:text}`warm_tools_core` tools per question, below All-Tools ({glue:text}`all_core`%) and the
# best fixed subset ({glue:text}`best_core`%); by controlled scoring, {glue:text}`warm_scoring`%
# (the paper: FGPO {glue:text}`paper_fgpo`%, GRPO {glue:text}`paper_grpo`%, All-Tools
# {glue:text}`paper_all`% on GenomeQA). SFT and DPO call no tool and score what No-Tool scores
# ({glue:text}`sft_core`% on core): Eq. 1 charges for every tool, the empty subset is optimal for
# many training questions, and imitation collapses onto it.

# %% tags=["remove-input"]
claim("cross-suites-smaller", all(s_ in n_q and n_q[s_] < n_q["core"] for s_ in ("microbe", "mosaic")),
      "the cross-domain suites hold fewer questions than core")
claim("rl-one-row", set(RL) | {"Warm-up"} <= {m for g in groups if W in g for m in g},
      "FGPO, FGPO + format term, GRPO and the warm-up make the same picks on every test question")
claim("warm-below-all-tools", acc.loc[W, "core"] < acc.loc["All-Tools", "core"] < acc.loc["BestFixed*", "core"] + 1e-9,
      "the warm-up's row is below All-Tools, itself at most the best fixed subset, on core")
claim("sft-is-no-tool", sft_row is not None and core_rows.loc[sft_row, "tools"] == 0
      and abs(acc.loc[sft_row, "core"] - acc.loc["No-Tool", "core"]) < 1e-9 and rep.get("DPO") == sft_row,
      "SFT and DPO call no tool and score what No-Tool scores");

# %% [markdown]
# (why-rl-lowered-dev)=
# ### Why every RL run lowered dev accuracy
#
# A dev evaluation with the same number of tools on every question, whose
# accuracy exactly one fixed subset of that size scores, reproduces that subset.

# %% tags=["remove-cell"]
rows = []
for n in RL:
    m = trained[n].manifest
    for d in m["dev"]:
        if d["step"] == 0:
            continue
        if m["objective"] == "grpo":
            readings = [("free generation", d["accuracy"], d["tools"])]
        else:
            readings = [("free generation", d["gen_accuracy"], d["gen_tools"]),
                        ("controlled scoring", d["accuracy"], d["tools"])]
        for reading, a, t in readings:
            rows.append({"run": n, "reading": reading, "step": int(d["step"]), "accuracy": a, "tools": t,
                         "matches": fixed_subset_matches(dev_table_, a, t)})
moved = pd.DataFrame(rows)
moved["subset"] = [subset_label(m[0]) if len(m) == 1 else "–" for m in moved.matches]


def one_subset(frame):
    """The fixed subset every row of ``frame`` reproduces, or None."""
    found = {m[0] if len(m) == 1 else None for m in frame.matches}
    return found.pop() if len(found) == 1 and None not in found else None


fgpo_scoring = moved[(moved.run == "FGPO") & (moved.reading == "controlled scoring")]
base = one_subset(fgpo_scoring) if len(fgpo_scoring) else None
grpo_base = one_subset(moved[moved.run == "GRPO"]) if "GRPO" in RL else None
matched = [m[0] for m in moved.matches if len(m) == 1]
glue_text("fgpo_subset", subset_label(base) if base is not None else "–")
glue_text("grpo_subset", subset_label(grpo_base) if grpo_base is not None else "–")
glue_number("fgpo_n_evals", len(fgpo_scoring), digits=0)
dev_fixed = 100 * dev_table_.correct.mean(0)
train_best = int(train_table.rewards("eq1").mean(0).argmax())
glue_number("n_train", train_table.n_questions, digits=0);

# %% [markdown]
# By controlled scoring FGPO gives every dev question {glue:text}`fgpo_subset` at all
# {glue:text}`fgpo_n_evals` evaluations after step 0, and GRPO {glue:text}`grpo_subset`; neither
# holds the motif scan T2. {glue:text}`fgpo_subset` has the highest mean Eq. 1 reward over the
# {glue:text}`n_train` training questions: the exact gradient first moved every question to the
# subset best *on average*. What T2 is worth per family, on the training families' questions and
# on dev (whose TF-motif and taxonomy families never appear in training):

# %% tags=["remove-input"]
claim("fgpo-one-subset", base is not None, "every FGPO dev evaluation after step 0 reproduces one fixed subset by "
      "controlled scoring")
claim("fgpo-subset-is-train-best", base == train_best,
      "FGPO's dev subset is the fixed subset with the highest mean Eq. 1 reward on the training questions")
claim("grpo-one-subset", grpo_base is not None, "GRPO's dev evaluations after step 0 reproduce one fixed subset")
claim("no-t2", base is not None and grpo_base is not None and not space.membership[base, T2]
      and not space.membership[grpo_base, T2], "neither FGPO's nor GRPO's fixed subset holds the motif scan T2")

# %% tags=["hide-input"]
training_families = list(dict.fromkeys(np.asarray(train_all.family)))
if base is not None:
    value = tool_value_table({"training families": train_all, "dev": dev_table_}, T2, base, subset_label(base),
                             reward_on=["training families"])
    show(value, **{"T2 alone vs no tool (points)": "{:+.1f}", f"T2 added to {subset_label(base)} (points)": "{:+.1f}",
                   "Eq. 1 reward of adding T2": "{:+.3f}"})
    tr, dv = value.loc["training families"], value.loc["dev"]
    added_col = f"T2 added to {subset_label(base)} (points)"
    share_tf = dv.loc["tf_motif", "questions"] / dv.questions.sum()
    glue_number("t2_train_alone_max", tr["T2 alone vs no tool (points)"].max(), signed=True)
    glue_number("t2_train_added_max", tr[added_col].max(), signed=True)
    glue_number("t2_tf_added", dv.loc["tf_motif", added_col])
    glue_number("tf_share", 100 * share_tf, digits=0)
    with_t2 = base | (1 << T2)
    r_used = train_table.rewards("eq1").mean(0);

# %% [markdown]
# On the training families T2 pays nowhere: it gains at most {glue:text}`t2_train_alone_max` points
# alone and {glue:text}`t2_train_added_max` added to {glue:text}`fgpo_subset`, and it lowers Eq. 1's
# reward on every one of them. On TF-motif questions, {glue:text}`tf_share`% of dev, it is worth
# {glue:text}`t2_tf_added` points on top of {glue:text}`fgpo_subset`, and adding it lifts all of dev
# by more than the {glue:text}`loss_min` to {glue:text}`loss_max` points the RL runs lost. Each run
# learned, correctly for its training data, to stop paying for a tool only an unseen family needs,
# and selection on dev vetoed every update. FGPO does move this selector: in
# {doc}`post_training` ({ref}`post-training-lm`), keeping its *last* adapter after {glue:text}`pt_budget` visits,
# FGPO at LoRA rank 4 ends {glue:text}`pt_gap` points above the start out of domain (p
# {glue:text}`pt_p`, a difference).

# %% tags=["remove-input"]
claim("t2-pays-on-no-training-family", base is not None and (tr["Eq. 1 reward of adding T2"] < 0).all()
      and r_used[base | (1 << T2)] < r_used[base], "adding T2 lowers Eq. 1's reward on every training family "
      "and on the training questions as a whole")
claim("t2-worth-on-tf-motif", base is not None and dv.loc["tf_motif", added_col] >= 40,
      "T2 is worth tens of points on TF-motif dev questions")
claim("tf-is-a-fifth", base is not None and 0.15 <= share_tf <= 0.25, "TF motifs are about a fifth of dev")
claim("dev-gap-explains-drop", base is not None
      and dev_fixed[with_t2] - dev_fixed[base] >= start.generation - after.generation.min()
      and share_tf * dv.loc["tf_motif", added_col] >= 0.8 * (dev_fixed[with_t2] - dev_fixed[base]),
      "adding T2 back to FGPO's subset gains more on dev than the RL runs lost, nearly all of it on TF motifs")
pt = None
if lm_companion_dir and (Path(lm_companion_dir) / "picks.parquet").exists():
    from fgpo_core.reports.companion import lm_companion_tests, load_lm_companion

    pt_picks = load_lm_companion(lm_companion_dir)
    pt_tables = {s: tables["evidence reader"][s] for s in ("core", "microbe") if s in tables["evidence reader"]}
    pt_vs = lm_companion_tests(pt_picks, pt_tables, training_families, arm="start")
    if (4, "OOD", "fgpo") in pt_vs.index:
        pt = pt_vs.loc[(4, "OOD", "fgpo")]
        glue_number("pt_budget", json.loads((Path(lm_companion_dir) / "manifest.json").read_text())["config"]["budget"],
                    digits=0)
        glue_number("pt_gap", pt["other (%)"] - pt["start (%)"], signed=True)
        glue_p("pt_p", pt["p"])
claim("post-training-moved", pt is not None and pt["other (%)"] > pt["start (%)"] and pt["p"] < 0.05,
      "in the post-training chapter, FGPO at rank 4 with its last adapter is above the start out of domain, a difference")
claim("pt-tools-fgpo", pt is not None, "the post-training chapter's LM study holds FGPO at rank 4");

# %% [markdown]
# ### Named against anonymous tools

# %% tags=["remove-cell"]
named = "FGPO (named tools)" in runs
vectors = {m: np.asarray(core_rows.loc[m, "correct_vector"], dtype=bool)
           for m in row_order if m in core_rows.index and core_rows.loc[m, "correct_vector"] is not None}
if named:
    nv = compare([vectors["FGPO (named tools)"]], [vectors["Tools w/ Desc"]])
    nw = compare([vectors["FGPO (named tools)"]], [vectors[W]])
    glue_number("named_core", acc.loc["FGPO (named tools)", "core"])
    glue_number("named_start", acc.loc["Tools w/ Desc", "core"])
    glue_number("named_kept", trained["FGPO (named tools)"].manifest["best_step"], digits=0)
    glue_p("p_named_start", nv.p_mcnemar[0])
    glue_number("paper_anon", paper.SENSITIVITY["anonymous_prompt"], digits=1)
    glue_number("paper_named", paper.SENSITIVITY["named_prompt"], digits=1);

# %% [markdown]
# FGPO told the tools' names and descriptions kept its adapter of step {glue:text}`named_kept`:
# {glue:text}`named_core`% on core against its start's (Tools w/ Desc) {glue:text}`named_start`%
# (p {glue:text}`p_named_start`, a difference), and level with the anonymous warm-up's row. The
# paper: {glue:text}`paper_anon`% anonymous, {glue:text}`paper_named`% named.

# %% tags=["remove-input"]
claim("named-moved", named and nv.a_better and trained["FGPO (named tools)"].manifest["best_step"] > 0,
      "FGPO with named tools kept a trained adapter that beats its start, a difference")
claim("named-level-with-warm", named and not nw.is_difference, "FGPO with named tools is level with the warm-up's row");

# %% [markdown]
# ### Look-ups against the live pipeline
#
# Every accuracy above is a table look-up, so a sample is run again for real, tools and reasoner.

# %% tags=["remove-cell"]
rng = np.random.default_rng(seed)
core_ids = warm.evals["core"]["question_id"].to_numpy()
pick_idx = rng.choice(len(core_ids), size=min(n_live, len(core_ids)), replace=False)
by_id = {q.id: q for q in suites["core"]}
live_reader = get_reasoner(f"reader:{reader_dir}")
distinct = [g[0] for g in groups if any(m in trained or m == "Warm-up" for m in g)]
live = {m: live_agreement(runs[m].picks("core")[pick_idx], [by_id[core_ids[i]] for i in pick_idx],
                          tables["evidence reader"]["core"], library, live_reader) for m in distinct}
glue_number("live_n", len(pick_idx), digits=0)
glue_number("live_sel", len(distinct), digits=0)
live_min = min(v["agreement"] for v in live.values())
glue_text("live_agree", "every one of them" if live_min == 100.0 else f"at least {live_min:.1f}% of them");

# %% [markdown]
# On {glue:text}`live_n` core questions for each of the {glue:text}`live_sel` distinct
# selectors, the live answer equals the table's on {glue:text}`live_agree` (the paper: within
# 0.05 points).

# %% tags=["remove-input"]
claim("live-agrees", live_min == 100.0,
      "the live pipeline reproduces the table's answer on every re-run choice");

# %% [markdown]
# ## Re-running it
#
# ```bash
# make lm             # the first pool: the warm-up, every method's run, their evaluations and runs/cpu/chosen.json
# make -j2 lm-pool    # the whole pool: FGPO with the format term and GRPO side by side (resumable)
# make lm-pool-eval   # the snapshots compared above, evaluated on every test question
# ```
#
# ## References
#
# - The paper (printed below): Table 2, Tables 6, 15 and 16, Appendix G.1-G.2.
# - Shao et al. (2024). *DeepSeekMath* (GRPO). TRL's `GRPOTrainer`, `SFTTrainer` and
#   `DPOTrainer` (Hugging Face).
# - Rafailov et al. (2023). *Direct Preference Optimization.*

# %% tags=["remove-input"]
print(paper.CITATION)
