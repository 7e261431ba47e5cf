"""Plain-words readings of measured results, for chapters: each sentence is chosen by the
numbers it reports, so a chapter never types an outcome into its prose."""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from . import paper

__all__ = ["significance_phrase", "drift_sentence", "mass_left_candidates", "lm_selector_findings"]


def significance_phrase(p_value: float, alpha: float = 0.05) -> str:
    """What a question-paired test's p-value says, in words."""
    if p_value >= alpha:
        return "at this sample size the difference is not significant."
    return f"the difference is significant at {100 * alpha:g}%."


def drift_sentence(label: str, drift: pd.DataFrame) -> str:
    """One :func:`~fgpo_core.evaluation.analyses.generation_drift` run, first step against last."""
    d0, d1 = drift.iloc[0], drift.iloc[-1]
    return (f"at {label}, $J$ went from {d0.J:.3f} to {d1.J:.3f}, the generation mass on the policy strings from "
            f"{d0.p_gen_valid:.2g} to {d1.p_gen_valid:.2g} and greedy format failures from {d0.format_failures:.0f}% "
            f"to {d1.format_failures:.0f}%")


def mass_left_candidates(drift: pd.DataFrame, factor: float = 10.0) -> bool:
    """Whether a drift run raised ``J`` while the policy strings lost more than ``1 - 1/factor`` of
    their generation mass: the objective served by moving mass off the candidate set."""
    return bool(drift.J.iloc[-1] > drift.J.iloc[0] and drift.p_gen_valid.iloc[-1] < drift.p_gen_valid.iloc[0] / factor)


def _beats(a: float, b: float) -> str:
    return "beats" if a > b else "does not beat"


def lm_selector_findings(acc: pd.DataFrame, tools: pd.DataFrame, format_failures: Mapping[str, float],
                         scoring_core: Mapping[str, float], p_fgpo_grpo: float, drifts: Mapping[str, pd.DataFrame],
                         dead_recount: np.ndarray, fgpo_manifest: dict, grpo_manifest: dict, n_actions: int,
                         n_tools: int, sweep: pd.DataFrame | None = None, dpo: Mapping[str, float] | None = None
                         ) -> list[str]:
    """The "what happened, and why" bullets of the chapter "FGPO versus GRPO".

    ``acc`` and ``tools`` are methods x suites (free generation, the training reader's table);
    ``format_failures`` and ``scoring_core`` map a method to its free-generation format failures
    and controlled-scoring accuracy on core; ``sweep`` holds FGPO's dev rows (columns ``ff``,
    ``scoring``, ``moved``); ``dpo`` has ``accuracy``, ``empty_answers`` and ``chosen_empty``.
    """
    fg, gr = fgpo_manifest, grpo_manifest
    suites = list(acc.columns)
    lead = acc.loc["FGPO"] - acc.loc["GRPO"]
    paper_lead = paper.MAIN_GENOMEQA["FGPO"] - paper.MAIN_GENOMEQA["GRPO"]
    out = [
        f"- **FGPO against GRPO.** On the main suite FGPO scores {acc.loc['FGPO', 'core']:.1f}% and GRPO "
        f"{acc.loc['GRPO', 'core']:.1f}% ({lead['core']:+.1f} points; the paper: {paper_lead:+.2f}). Across the "
        f"{len(suites)} test suites FGPO is ahead on {int((lead > 0).sum())}, tied on {int((lead == 0).sum())} and "
        f"behind on {int((lead < 0).sum())}. The exact McNemar p-value of the pooled comparison is "
        f"{p_fgpo_grpo:.3g}: " + significance_phrase(p_fgpo_grpo)]
    moved = sweep[sweep.moved].ff if sweep is not None else pd.Series(dtype=float)
    ff_range = "" if moved.empty else (f"{moved.min():.0f}%" if moved.min() == moved.max()
                                        else f"{moved.min():.0f}-{moved.max():.0f}%")
    kept = next(d for d in fg["dev"] if d["step"] == fg["best_step"])
    pf = paper.CONTROLLED_VS_FREE["FGPO"]
    text = ("- **Free generation against controlled scoring.** Format failures under free generation on core: "
            + ", ".join(f"{m} {v:.0f}%" for m, v in format_failures.items())
            + f". By controlled scoring (Eq. 6), which cannot fail to parse, FGPO scores {scoring_core['FGPO']:.1f}% "
            f"on core and GRPO {scoring_core['GRPO']:.1f}%. ")
    if ff_range:
        text += (f"Along FGPO's learning-rate sweep, controlled-scoring dev accuracy rose from "
                 f"{sweep.scoring.iloc[0]:.1f}% to as much as {sweep.scoring.max():.1f}%, but every evaluation at which "
                 f"it had moved had {ff_range} format failures under free generation. The adapter kept by free "
                 f"generation (lr={fg['config']['lr']:g}, step {fg['best_step']}) scores {kept['accuracy']:.1f}% on dev "
                 f"by controlled scoring and {kept['gen_accuracy']:.1f}% by free generation. ")
    text += (f"The paper's 7B selector, trained at {paper.HYPERPARAMETERS['lr']:g}, kept the two together ({pf[0]} by "
             f"generation, {pf[1]} by scoring)"
             + ("; a 135M selector trained for a handful of steps at rates large enough to move it did not."
                if ff_range else "."))
    out.append(text)
    leaked = [k for k, d in drifts.items() if mass_left_candidates(d)]
    out.append("- **Where the mass went.** In the step-by-step look at plain FGPO updates, "
               + "; ".join(drift_sentence(k, d) for k, d in drifts.items())
               + (". Eq. 2 ranks the candidates against each other and is blind to what free generation does outside "
                  "them; at a rate large enough to move a 135M selector in a few steps, that blind spot is where its "
                  "mass went." if leaked else "."))
    if dpo is not None:
        out.append(f"- **DPO.** On core DPO (beta {paper.HYPERPARAMETERS['dpo_beta']:g}) scores {dpo['accuracy']:.1f}% "
                   f"against No-Tool's {acc.loc['No-Tool', 'core']:.1f}%, with {tools.loc['DPO', 'core']:.2f} tools per "
                   f"question, and answers with the empty subset on {dpo['empty_answers']:.0f}% of core questions "
                   f"although {dpo['chosen_empty']:.0f}% of its chosen responses were empty (the paper: DPO at the "
                   f"no-tool floor, {paper.MAIN_GENOMEQA['DPO']} against {paper.MAIN_GENOMEQA['No-Tool']}, for every "
                   "beta).")
    visits = fg["n_train"] * fg["config"]["epochs"]
    out.append(f"- **Dead groups.** {100 * np.mean(dead_recount):.0f}% of GRPO's groups were dead on average, so that "
               f"share of its {gr['reward_evaluations']} reward evaluations taught it nothing; FGPO's "
               f"{visits * n_actions} look-ups each enter its gradient. (The paper's GRPO started at "
               f"{paper.DEAD_GROUPS['live_dead_start']}% dead and ended at {paper.DEAD_GROUPS['live_dead_end']}%.)")
    out.append(f"- **Against the fixed references** (free generation). FGPO "
               f"{_beats(acc.loc['FGPO', 'core'], acc.loc['BestFixed*', 'core'])} the best fixed subset on core "
               f"({acc.loc['BestFixed*', 'core']:.1f}%) and {_beats(acc.loc['FGPO', 'core'], acc.loc['All-Tools', 'core'])} "
               f"All-Tools ({acc.loc['All-Tools', 'core']:.1f}%), calling {tools.loc['FGPO', 'core']:.2f} tools per "
               f"question against All-Tools' {n_tools}. The oracle ({acc.loc['Oracle', 'core']:.1f}%) shows how much a "
               "per-question choice could still win.")
    hp = paper.HYPERPARAMETERS
    out.append(f"- **Scale.** These selectors saw {fg['n_train']} training questions {fg['config']['epochs']} times "
               f"({len(fg['steps'])} FGPO steps) against the paper's {hp['train_questions']:,} questions over "
               f"{hp['epochs']} epochs with a 7B model. FGPO's free-generation dev accuracy moved from "
               f"{fg['dev'][0]['gen_accuracy']:.1f}% untrained to {max(d['gen_accuracy'] for d in fg['dev']):.1f}% at "
               f"its best evaluation, on {fg['n_dev']} dev questions, where one question is {100 / fg['n_dev']:.1f} "
               "points. At this size a difference of a few points between methods is within what another seed or "
               "question sample could move.")
    return out


def _pm(summary: pd.DataFrame, method: str, suite: str) -> str:
    return f"{summary.loc[method, suite]}%"


def head_study_findings(summary: pd.DataFrame, tools: pd.DataFrame, tests_core: pd.DataFrame,
                        baselines: pd.DataFrame, dev: pd.DataFrame, methods: list[str], dial: pd.DataFrame,
                        fgpo_routes: pd.DataFrame | None = None, grpo_routes: pd.DataFrame | None = None,
                        transfer: pd.DataFrame | None = None, empty: dict | None = None,
                        agreement: dict | None = None) -> list[str]:
    """The "what happened, and why" bullets of the chapter "Exact versus sampled on the real tables",
    from :func:`~fgpo_core.experiments.study_report.study_summary` frames (accuracy and tools),
    :func:`~fgpo_core.experiments.study_report.paired_tests` on core, the table-only baselines,
    the dev curves, the coverage dial, FGPO's and GRPO's routing on core, the transfer cells, the
    empty subset's shares (``optimal``, ``sft_argmax``, %) and each method's share of core
    questions on which all its seeds pick the same subset."""
    from ..experiments.study_report import label

    def mean(m, s="core"):
        return float(summary.loc[m, f"{s} mean"])

    def base(name, s="core"):
        v = baselines[(baselines.suite == s) & (baselines.method == name)]
        return float(v.accuracy.iloc[0])

    suites = [c for c in summary.columns if not c.endswith(" mean")]
    sampled = [m for m in ("grpo", "grpo-eq1", "rloo", "dapo") if m in methods]
    out = []
    if "fgpo" in methods and sampled:
        ahead = [m for m in sampled if mean("fgpo") > mean(m)]
        parts = []
        for m in sampled:
            t = tests_core.loc[m]
            parts.append(f"{label(m)} {_pm(summary, m, 'core')} (FGPO {t['difference (points)']:+.1f} points; p < 0.05 "
                         f"in {t['seeds with p < 0.05']} seeds, median p {t['median p']:.2g})")
        paper_gap = paper.MAIN_GENOMEQA["FGPO"] - paper.MAIN_GENOMEQA["GRPO"]
        out.append(f"- **Exact against sampled, on core.** FGPO scores {_pm(summary, 'fgpo', 'core')}; "
                   + "; ".join(parts) + f". FGPO is ahead of {len(ahead)} of the {len(sampled)} sampled methods on "
                   f"average (the paper: FGPO {paper_gap:+.2f} points over GRPO)."
                   + (f" FGPO's seeds pick the same subset on {agreement['fgpo']:.0f}% of core questions, GRPO's on "
                      f"{agreement['grpo']:.0f}%"
                      + (": the exact objective lands on nearly one policy whatever the question order, the sampled "
                         "one wherever its draws took it." if agreement["fgpo"] > agreement["grpo"] + 20 else ".")
                      if agreement and "grpo" in agreement and "fgpo" in agreement else ""))
        cross = []
        for s in suites[1:]:
            best = max(sampled, key=lambda m: mean(m, s))
            cross.append(f"on {s} FGPO {mean('fgpo', s):.1f}% against GRPO {mean('grpo', s):.1f}% "
                         f"(best sampled: {label(best)}, {mean(best, s):.1f}%)" if "grpo" in sampled else
                         f"on {s} FGPO {mean('fgpo', s):.1f}%")
        if cross:
            out.append("- **Cross-domain.** " + "; ".join(cross) + ".")
    if "fgpo" in methods:
        bf, at = base("BestFixed*"), base("All-Tools")
        gt = float(tools.loc["grpo", "core mean"]) if "grpo" in methods else float("nan")
        out.append(f"- **Against the fixed references.** On core FGPO {_beats(mean('fgpo'), bf)} the best fixed "
                   f"subset ({bf:.1f}%) and {_beats(mean('fgpo'), at)} All-Tools ({at:.1f}%), with "
                   f"{float(tools.loc['fgpo', 'core mean']):.2f} tools per question against GRPO's {gt:.2f} (the paper: "
                   f"{paper.TOOL_ECONOMY['FGPO']} against {paper.TOOL_ECONOMY['GRPO']}). The oracle "
                   f"({base('Oracle'):.1f}%) is what a per-question choice could reach; "
                   + (f"FGPO covers {100 * (mean('fgpo') - bf) / (base('Oracle') - bf):.0f}% of the gap between the "
                      "best fixed subset and the oracle." if mean("fgpo") > bf else
                      "no selector here gets past the best fixed subset by much, if at all: the head's features "
                      "tell it the question's family, not which subset this particular question needs."))
    last = dev.sort_values("epoch").groupby(["method", "seed"]).tail(1).groupby("method")[
        ["dead_eq1", "dead_differential", "entropy"]].mean()
    if "grpo" in last.index and "fgpo" in last.index:
        out.append(f"- **Dead groups.** At the end of training a GRPO group drawn from GRPO's own policy would be dead "
                   f"with probability {last.loc['grpo', 'dead_eq1']:.1f}% under Eq. 1 classes and "
                   f"{last.loc['grpo', 'dead_differential']:.1f}% under the differential reward it trains on (the "
                   f"paper: {paper.DEAD_GROUPS['grpo_converged_G6']}% and {paper.DEAD_GROUPS['grpo_differential_G6']}%);"
                   f" FGPO's final policy, which never samples, would be {last.loc['fgpo', 'dead_eq1']:.1f}% dead "
                   f"(the paper: {paper.DEAD_GROUPS['fgpo_converged_G6']}%).")
    if len(dial) > 1:
        learns = dial[dial.index > 1]  # k = 1 receives no gradient at all
        acc = learns["accuracy (%)"].to_numpy()
        mono = bool(np.all(np.diff(acc) > 0))
        span, sd = float(acc.max() - acc.min()), float(learns["sd over seeds"].max())
        out.append("- **The coverage dial.** Accuracy on core by k: "
                   + ", ".join(f"k={k} {v:.1f}%" for k, v in dial["accuracy (%)"].items())
                   + (": strictly increasing from k = 2, as in the paper." if mono else
                      f": not increasing with k here (the paper's rose strictly). From k = 2 up the means span "
                      f"{span:.1f} points" + (f", within the largest spread over seeds ({sd:.1f})." if span <= sd
                                              else f", more than the largest spread over seeds ({sd:.1f}).")))
    offline = [m for m in ("sft", "dpo") if m in methods]
    if offline:
        nt = base("No-Tool")
        text = ("- **Offline imitation.** " + "; ".join(f"{label(m)} {_pm(summary, m, 'core')} with "
                                                        f"{float(tools.loc[m, 'core mean']):.2f} tools" for m in offline)
                + f", against No-Tool's {nt:.1f}% (the paper: SFT {paper.MAIN_GENOMEQA['SFT']}, DPO "
                f"{paper.MAIN_GENOMEQA['DPO']}, No-Tool {paper.MAIN_GENOMEQA['No-Tool']}).")
        if empty is not None:
            text += (f" The empty subset is reward-optimal on {empty['optimal']:.1f}% of core questions; SFT's head puts "
                     f"its argmax there on {empty['sft_argmax']:.1f}% (the paper: {paper.EMPTY_SUBSET['empty_optimal']}% "
                     f"and {paper.EMPTY_SUBSET['sft_argmax_empty']}%): imitation learns the table's most common target "
                     "in proportion to how often it is the target, where the exact objective weighs how much each "
                     "subset is worth.")
        out.append(text)
    if fgpo_routes is not None and grpo_routes is not None and "tf_motif" in fgpo_routes.index:
        out.append(f"- **Unseen families.** No training question is a TF-motif question. FGPO calls the motif scan "
                   f"(T2) on {fgpo_routes.loc['tf_motif', 'T2']:.0f}% of core's TF-motif questions and GRPO on "
                   f"{grpo_routes.loc['tf_motif', 'T2']:.0f}%: what a selector does on a family it never saw is "
                   "whatever its training families taught the head about similar-looking questions.")
    if transfer is not None and "FGPO - GRPO" in transfer:
        d = transfer["FGPO - GRPO"]
        out.append(f"- **Other reasoners.** Moved without retraining, FGPO is ahead of GRPO in {int((d > 0).sum())} of "
                   f"{len(d)} cells (the paper: {paper.TRANSFER['fgpo_wins']} of {paper.TRANSFER['cells']}).")
    return out
