"""Plain-words readings of measured results, for chapters: each sentence is chosen by the
numbers it reports, so a chapter never types an outcome into its prose."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from . import paper
from ..core.registry import estimators_of
from ..experiments.companion_report import START_ARM
from ..experiments.report import dev_table
from ..experiments.study_report import label

__all__ = ["significance_phrase", "drift_sentence", "mass_left_candidates", "lm_table_findings", "grpo_dead_sentence",
           "head_study_findings", "appendix_findings", "post_training_findings", "lm_companion_findings",
           "past_enumeration_findings"]


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


def grpo_dead_sentence(dead: pd.DataFrame, paper_start: float, paper_end: float) -> str:
    """GRPO's dead groups over training in one sentence, from
    :func:`fgpo_core.experiments.report.grpo_dead_groups`: TRL's count over every step, the exact
    recount over the steps it covers and how often it exceeds TRL's, the paper's telemetry beside."""
    out = (f"By TRL's count, GRPO's dead-group fraction went from **{100 * dead.trl.iloc[0]:.0f}%** at its first step "
           f"to **{100 * dead.trl.iloc[-1]:.0f}%** at its last (mean {100 * dead.trl.mean():.0f}% over {len(dead)} "
           "steps)")
    both = dead.dropna(subset=["recount"])
    if len(both):
        over = int((both.recount > both.trl + 1e-9).sum())
        span = f"step {both.step.iloc[0]}" if len(both) == 1 else f"steps {both.step.iloc[0]}-{both.step.iloc[-1]}"
        out += (f"; counted exactly, over {span}, it averaged **{100 * both.recount.mean():.0f}%** against TRL's "
                f"{100 * both.trl.mean():.0f}% on the same steps, " +
                (f"above TRL's count on {over} of the {len(both)} steps" if over else "equal to it at every step"))
    return out + f". The paper's live telemetry: {paper_start:g}% to {paper_end:g}%."


def _beats(a: float, b: float) -> str:
    return "beats" if a > b else "does not beat"


def lm_table_findings(acc: pd.DataFrame, format_failures: Mapping[str, float], tests: pd.DataFrame,
                      manifests: Mapping[str, dict], pending: Sequence[str] = (), readings: pd.DataFrame | None = None,
                      domains: pd.DataFrame | None = None, routing: Mapping[str, float] | None = None
                      ) -> list[str]:
    """The "what the table says" bullets of the LM selector's main table, for whichever rows have landed.

    ``acc``: methods x suites, free-generation accuracy (%) under the training reader, with the
    fixed references (No-Tool, All-Tools, BestFixed*, Oracle) among its rows; ``format_failures``:
    method -> free generation's format failures on core (%); ``tests``: one row per compared
    method, the question-paired exact McNemar test on core of FGPO (or, where FGPO has not landed,
    the warm-up) against it (columns ``a_only``, ``b_only``, ``p_value``, ``against``);
    ``manifests``: a trained method's manifest (its dev curve and kept step); ``pending``: the
    methods still to come; ``readings``: methods x (generation, scoring, constrained) on core;
    ``domains``: methods x (ID, OOD) accuracy (:func:`~fgpo_core.experiments.report.domain_accuracy`);
    ``routing``: the core ``accuracy`` and ``tools`` of routing by family alone
    (:func:`~fgpo_core.evaluation.metrics.family_routing`).
    """
    out = []
    if pending:
        one = len(pending) == 1
        out.append("- **Still to come.** " + ", ".join(pending) + (" has" if one else " have") + " not landed yet; "
                   + ("its row appears when its run and evaluation are" if one else
                      "their rows appear when their runs and evaluations are") + " committed.")
    core = acc["core"]
    for m in [m for m in ("FGPO", "FGPO + format term", "GRPO", "SFT", "DPO") if m in core.index]:
        parts = [f"{core[m]:.1f}% on core"]
        if "Warm-up" in core.index and m != "Warm-up":
            parts.append(f"{core[m] - core['Warm-up']:+.1f} points from the warm-up it started from")
        parts.append(f"{core[m] - core['All-Tools']:+.1f} from All-Tools and {core[m] - core['BestFixed*']:+.1f} from "
                     "the best fixed subset")
        if m in paper.MAIN_GENOMEQA:
            parts.append(f"the paper: {paper.MAIN_GENOMEQA[m]:.2f}% on GenomeQA, "
                         f"{paper.MAIN_GENOMEQA[m] - paper.MAIN_GENOMEQA['All-Tools']:+.2f} from its All-Tools")
        text = f"- **{m}**: " + "; ".join(parts) + "."
        if m in format_failures:
            text += f" Free generation failed the format on {format_failures[m]:.1f}% of core questions."
        man = manifests.get(m)
        if man is not None and man.get("dev") and "best_step" in man:
            if man["best_step"] == 0:
                text += (" Its checkpoint chosen on dev is its starting point, the warm-up: no later dev "
                         "evaluation ranked higher, so its row is the warm-up's.")
                dev = dev_table({m: man})
                start, later = dev[dev.step == 0], dev[dev.step > 0].dropna(subset=["generation"])
                if len(start) and len(later):
                    lo, hi = later.generation.min(), later.generation.max()
                    text += (f" By free generation on dev it scored {start.generation.iloc[0]:.1f}% at step 0 and "
                             + (f"{lo:.1f}%" if lo == hi else f"{lo:.1f}-{hi:.1f}%")
                             + f" at steps {', '.join(str(s) for s in later.step)}")
                    if later.tools.notna().all() and start.tools.notna().all():
                        text += (f", with {start.tools.iloc[0]:.2f} tools per question at the start and "
                                 f"{later.tools.iloc[-1]:.2f} at its last evaluation")
                    text += "."
        out.append(text)
    for m, t in tests.iterrows():
        a = t["against"]
        out.append(f"- **{a} against {m}, question by question on core.** {a} right and {m} wrong on "
                   f"{int(t['a_only'])} questions, the reverse on {int(t['b_only'])}; exact McNemar p = "
                   f"{t['p_value']:.3g}: " + significance_phrase(t["p_value"]))
    named = "FGPO (named tools)"
    if named in core.index and "FGPO" in core.index:
        text = (f"- **{named}**: {core[named]:.1f}% on core against anonymous FGPO's {core['FGPO']:.1f}% "
                f"({core[named] - core['FGPO']:+.1f} points; the paper: {paper.SENSITIVITY['named_prompt']:.2f}% "
                f"named against {paper.SENSITIVITY['anonymous_prompt']:.2f}% anonymous)")
        if "Tools w/ Desc" in core.index:
            text += (f", {core[named] - core['Tools w/ Desc']:+.1f} points from its start, the warm-up read with "
                     f"the same named prompt (Tools w/ Desc, {core['Tools w/ Desc']:.1f}%)")
        out.append(text + ".")
    if domains is not None and "Warm-up" in domains.index:
        base = domains.loc["Warm-up"]
        moved = [f"{m} {domains.loc[m, 'ID'] - base['ID']:+.1f} ID, {domains.loc[m, 'OOD'] - base['OOD']:+.1f} OOD"
                 for m in ("SFT", "DPO", "GRPO", "FGPO", "FGPO + format term") if m in domains.index]
        if moved:
            out.append(f"- **Seen and unseen families.** The warm-up scores {base['ID']:.1f}% in domain and "
                       f"{base['OOD']:.1f}% out of domain; in points from it: " + "; ".join(moved) + ".")
    if routing is not None:
        best = max((m for m in ("SFT", "DPO", "GRPO", "FGPO", "FGPO + format term", "Warm-up") if m in core.index),
                   key=lambda m: core[m])
        out.append(f"- **Headroom a selector could fairly reach.** Choosing one subset per family on the training "
                   f"questions and reading nothing else scores {routing['accuracy']:.1f}% on core with "
                   f"{routing['tools']:.2f} tools per question, {routing['accuracy'] - core['All-Tools']:+.1f} points "
                   f"from All-Tools; the best selector here ({best}) is at {core[best]:.1f}%.")
    if readings is not None and len(readings):
        spread = (readings.max(axis=1) - readings.min(axis=1)).sort_values()
        text = "- **Three ways to read one selector.** Free generation, controlled scoring (Eq. 6) and constrained " \
               "decoding differ by "
        if np.isclose(spread.iloc[0], spread.iloc[-1]):
            text += f"{spread.iloc[-1]:.1f} points on core for every selector shown"
        else:
            text += (f"at most {spread.iloc[-1]:.1f} points on core ({spread.index[-1]}) and by as little as "
                     f"{spread.iloc[0]:.1f} ({spread.index[0]})")
        out.append(text + "; the paper found generation and scoring within a point for FGPO and GRPO.")
    if "FGPO" in core.index and "GRPO" in core.index:
        lead, paper_lead = core["FGPO"] - core["GRPO"], paper.MAIN_GENOMEQA["FGPO"] - paper.MAIN_GENOMEQA["GRPO"]
        out.append(f"- **The paper's comparison.** FGPO minus GRPO on core: {lead:+.1f} points here, "
                   f"{paper_lead:+.2f} in the paper" + (" (the same sign)." if lead * paper_lead > 0 else
                                                         " (not the paper's sign)."))
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

    def mean(m, s="core"):
        return float(summary.loc[m, f"{s} mean"])

    def base(name, s="core"):
        v = baselines[(baselines.suite == s) & (baselines.method == name)]
        return float(v.accuracy.iloc[0])

    suites = [c for c in summary.columns if not c.endswith(" mean")]
    sampled = [m for m in estimators_of("sampled") if m in methods]
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
    offline = [m for m in estimators_of("imitation") if m in methods]
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


def _trend(x, mean, sd) -> str:
    """How a measured curve moves with its setting, judged against the spread over seeds."""
    mean, sd = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
    span = float(np.nanmax(mean) - np.nanmin(mean))
    noise = float(np.nanmax(sd)) if len(sd) else 0.0
    if span <= noise:
        return f"flat within the spread over seeds (the means span {span:.1f} points, seeds {noise:.1f})"
    d = np.diff(mean)
    if np.all(d > 0):
        return f"rising with the setting ({span:.1f} points from end to end)"
    if np.all(d < 0):
        return f"falling with the setting ({span:.1f} points from end to end)"
    best = x[int(np.nanargmax(mean))]
    return f"not monotone: best at {best} (the means span {span:.1f} points, seeds {noise:.1f})"


def _row(t: pd.DataFrame, name: str, col: str = "core accuracy") -> float:
    return float(t.loc[name, col]) if name in t.index and col in t else float("nan")


def _sft_collapse_sentence(argmax_empty: float, empty_optimal: float, most_common: bool) -> str:
    """Whether SFT collapsed onto the empty subset, judged against how often the empty subset is
    the optimum it imitates."""
    target = ("the most common optimum of all the subsets" if most_common else "a frequent optimum")
    if argmax_empty >= 80:
        return (f"SFT collapses onto the empty subset as in the paper: its target is each question's optimum, the "
                f"empty subset is {target}, and a head that cannot tell from the prompt which questions need which "
                "tool does best, under cross-entropy, by putting its argmax on the most frequent target.")
    if argmax_empty > empty_optimal:
        return (f"SFT leans toward the empty subset, {target}, beyond its share of the optima "
                f"({argmax_empty:.0f}% of argmax picks against {empty_optimal:.0f}% of optima), but does not collapse "
                "onto it as the paper's did.")
    return "SFT does not collapse onto the empty subset here."


def appendix_findings(dial: pd.DataFrame, parsimony: pd.DataFrame, entropy: pd.DataFrame, temperature: pd.DataFrame,
                      data: pd.DataFrame, five: pd.DataFrame, five_refs: pd.DataFrame, invocation: pd.DataFrame,
                      removal: pd.DataFrame, groups: pd.DataFrame, imitation: pd.DataFrame, capacity: pd.DataFrame,
                      refs: Mapping[str, float]) -> list[str]:
    """The closing bullets of the chapter "The appendix, on the real tables", one per ablation,
    from the tables of :mod:`fgpo_core.experiments.ablation_report` (rows named by
    :func:`~fgpo_core.experiments.study_report.label`), each beside the paper's finding."""
    out = []
    learn = dial[dial.index > 1]
    grpo = _row(groups, "GRPO", "accuracy (%)")
    k2 = float(dial.loc[2, "accuracy (%)"]) if 2 in dial.index else float("nan")
    out.append(f"- **Coverage dial.** From k = 2 to k = {int(dial.index.max())}, accuracy on core is "
               f"{_trend(list(learn.index), learn['accuracy (%)'], learn['sd over seeds'])} (the paper: strictly "
               f"rising, {paper.COVERAGE_DIAL[2]} to {paper.COVERAGE_DIAL[16]}). k = 2 "
               + ("beats" if k2 > grpo else "does not beat") + f" GRPO ({k2:.1f}% against {grpo:.1f}%; the paper's "
               f"k = 2 beat its GRPO, {paper.COVERAGE_DIAL[2]} against {paper.MAIN_GENOMEQA['GRPO']}). The share of "
               f"visits that saw a best subset rose from {float(dial['visits that saw a best subset (%)'].iloc[0]):.0f}% "
               f"to {float(dial['visits that saw a best subset (%)'].iloc[-1]):.0f}%.")
    a0, a1 = _row(parsimony, "FGPO (λ=0)"), _row(parsimony, "FGPO")
    t0, t1 = _row(parsimony, "FGPO (λ=0)", "tools (core)"), _row(parsimony, "FGPO", "tools (core)")
    p0, p1 = paper.PARSIMONY[0.0], paper.PARSIMONY[0.10]
    out.append(f"- **Parsimony.** λ = 0 gives {a0:.1f}% with {t0:.2f} tools per question, λ = 0.10 {a1:.1f}% with "
               f"{t1:.2f} (the paper: {p0['accuracy']} with {p0['tools'][0]}-{p0['tools'][1]} tools, {p1['accuracy']} "
               f"with {p1['tools'][0]}-{p1['tools'][1]}). "
               + ("As in the paper, the parsimony term costs no accuracy and saves tools." if a1 >= a0 and t1 < t0 else
                  "The parsimony term saves tools here, at a cost in accuracy the paper did not see." if t1 < t0 else
                  "The parsimony term saves no tools here."))
    for name, t, xs in (("Entropy bonus", entropy, [0, 0.01, 0.03, 0.08]), ("Listwise temperature", temperature,
                                                                            [0.5, 0.7, 1.0])):
        out.append(f"- **{name}.** Accuracy on core across the settings is "
                   f"{_trend(xs, t['core accuracy'], t['core sd'])}; the paper's sensitivity runs moved it by at most "
                   f"{abs(paper.SENSITIVITY['beta_0.08'] - paper.SENSITIVITY['beta_0.03']):.2f} (β) and "
                   f"{abs(paper.SENSITIVITY['temperature_0.7'] - paper.SENSITIVITY['beta_0.03']):.2f} (τ) points.")
    fg = [n for n in data.index if n.startswith("FGPO")]
    gr = [n for n in data.index if n.startswith("GRPO")]
    out.append("- **Data scale.** FGPO from 125 questions to all of them: "
               + ", ".join(f"{data.loc[n, 'core accuracy']:.1f}%" for n in fg)
               + "; GRPO: " + ", ".join(f"{data.loc[n, 'core accuracy']:.1f}%" for n in gr)
               + f". The paper's FGPO was not monotone in data either ({', '.join(f'{v}' for v in paper.DATA_SCALE.values())}"
               f" at {', '.join(str(k) for k in paper.DATA_SCALE)} questions).")
    f32, all5, bf5 = _row(five, "FGPO"), _row(five_refs, "All-Five"), _row(five_refs, "BestFixed* (of 32)")
    f4 = _row(five, "FGPO (without T5)")
    t5 = float(invocation.filter(like="T5").loc["FGPO"].iloc[0]) if "FGPO" in invocation.index else float("nan")
    out.append(f"- **Five tools.** FGPO over 32 subsets {f32:.1f}% against All-Five {all5:.1f}%, the best fixed subset "
               f"{bf5:.1f}% and the four-tool policy {f4:.1f}%; it calls T5 on {t5:.1f}% of core questions (the paper: "
               f"{paper.FIVE_TOOL['fgpo_final']} against {paper.FIVE_TOOL['all_five']} and "
               f"{paper.FIVE_TOOL['best_fixed']}, T5 on {paper.FIVE_TOOL['invocation']['T5']}%). "
               + ("Exact optimisation absorbed the doubled action space." if f32 >= max(all5, bf5) else
                  "Doubling the action space did not leave FGPO above every fixed reference here."))
    removal = removal.rename(index=lambda n: n.lstrip("-"))
    worst_table = removal.delta_oracle.idxmin()
    worst_trained = removal["delta FGPO retrained"].idxmin()
    out.append(f"- **Single-tool removal.** From the table, removing {worst_table} costs the oracle most "
               f"({removal.loc[worst_table, 'delta_oracle']:.1f} points; the paper's largest was -T4, "
               f"{paper.TABLE12_GENOMEQA['delta_oracle'].min():.2f}); retrained, FGPO loses most without "
               f"{worst_trained} ({removal.loc[worst_trained, 'delta FGPO retrained']:+.1f} points, p < 0.05 in "
               f"{removal.loc[worst_trained, 'seeds with p < 0.05']} seeds). "
               + ("Table and training agree on the most valuable tool." if worst_table == worst_trained else
                  "Table and training disagree on the most valuable tool: the oracle counts rescues of single "
                  "questions, a trained policy only what it can route to from the prompt."))
    g = groups.sort_values("G")
    out.append(f"- **Group size.** GRPO's accuracy from G = {int(g.G.min())} to {int(g.G.max())} is "
               f"{_trend(list(g.G), g['accuracy (%)'], g['sd over seeds'])}; its own groups were dead on "
               f"{float(g['dead groups, last epoch (%)'].iloc[0]):.0f}% of last-epoch visits at G = {int(g.G.min())} "
               f"and {float(g['dead groups, last epoch (%)'].iloc[-1]):.0f}% at G = {int(g.G.max())}, while a run's "
               f"reward evaluations grew {float(g['reward evaluations'].iloc[-1] / g['reward evaluations'].iloc[0]):.0f}"
               f"-fold.")
    sft = imitation.loc["SFT"] if "SFT" in imitation.index else None
    if sft is not None:
        dpos = [n for n in imitation.index if n.startswith("DPO")]
        floor = refs["No-Tool"]
        at_floor = [n for n in dpos if abs(imitation.loc[n, "accuracy (%)"] - floor) < 1.0]
        out.append(f"- **SFT and DPO.** SFT's argmax is the empty subset on {sft['argmax is empty (%)']:.1f}% of core "
                   f"questions (the paper: {paper.EMPTY_SUBSET['sft_argmax_empty']}%); the empty subset is reward-optimal "
                   f"on {imitation.attrs['empty_optimal']:.1f}% of them (the paper: {paper.EMPTY_SUBSET['empty_optimal']}%). "
                   f"{len(at_floor)} of {len(dpos)} DPO betas end within a point of No-Tool ({floor:.1f}%; the paper: all "
                   "three). "
                   + _sft_collapse_sentence(float(sft["argmax is empty (%)"]), float(imitation.attrs["empty_optimal"]),
                                            bool(imitation.attrs.get("empty_is_most_common_optimum"))))
    widths = [("linear", ""), ("MLP 64", " (MLP 64)"), ("MLP 256", " (MLP 256)")]
    gaps = [(w, _row(capacity, "FGPO" + suf) - _row(capacity, "GRPO" + suf),
             max(_row(capacity, "FGPO" + suf, "core sd"), _row(capacity, "GRPO" + suf, "core sd")))
            for w, suf in widths]
    clear = [w for w, d, sd in gaps if d > sd]
    out.append("- **Capacity.** FGPO minus GRPO on core: " + ", ".join(f"{d:+.1f} points ({w}; larger sd {sd:.1f})"
                                                                      for w, d, sd in gaps)
               + f". FGPO is ahead by more than the spread over seeds at {len(clear)} of {len(gaps)} widths"
               + (f" ({', '.join(clear)})" if clear else "") + f". (The paper's 1.5B selector: FGPO "
               f"{paper.SENSITIVITY['selector_1.5b_fgpo']} against GRPO {paper.SENSITIVITY['selector_1.5b_grpo']}.)")
    return out


def post_training_findings(sft: pd.DataFrame, rl: pd.DataFrame, budget: Mapping[str, pd.DataFrame],
                           capacity: pd.DataFrame, id_peak: int, budget_p: Mapping[str, pd.DataFrame] | None = None,
                           widths: pd.DataFrame | None = None) -> list[str]:
    """The companion study's four findings, each beside this book's measurement on the policy-head
    selector: ``sft`` (ID/OOD by SFT epochs), ``rl`` (gains of RL from each SFT checkpoint, indexed
    by (RL, SFT epochs)), ``budget`` (RL -> ID/OOD by SFT share of a fixed budget) and ``capacity``
    (ID/OOD by (SFT width, RL width)). With ``budget_p`` (RL ->
    :func:`~fgpo_core.experiments.companion_report.budget_tests` of the mean of ID and OOD) and
    ``widths`` (:func:`~fgpo_core.experiments.companion_report.width_effects`) a difference is
    called one only beyond seed noise (paired over seeds, p < 0.05)."""
    c = paper.COMPANION
    out = []
    ood_peak = int(sft.OOD.idxmax())
    first, last = sft.index[0], sft.index[-1]
    id_up = sft.ID.loc[last] > sft.ID.loc[first]
    drop = float(sft.OOD.max() - sft.OOD.loc[last])
    noise = float(np.nanmax(sft["OOD sd"])) if "OOD sd" in sft else 0.0
    declines = ood_peak < last and drop > noise
    out.append(f"- **SFT epochs.** ID accuracy goes from {sft.ID.loc[first]:.1f}% after {first} epoch(s) to "
               f"{sft.ID.loc[last]:.1f}% after {last} ({'up' if id_up else 'not up'}); OOD peaks at {ood_peak} epochs "
               f"({sft.OOD.max():.1f}%) and ends at {sft.OOD.loc[last]:.1f}%, {drop:.1f} points below its peak "
               f"(largest sd over seeds {noise:.1f}). The study: OOD {c['sft_ood_by_epoch'][1]}% after 1 epoch, "
               f"{c['sft_ood_by_epoch'][4]}% after 4. "
               + ("Both halves of the finding hold here." if id_up and declines else
                  "ID rises but OOD does not decline beyond seed noise here." if id_up else
                  "OOD peaks early and declines, but ID does not rise." if declines else
                  "Neither half of the finding holds here."))
    for name in ("FGPO", "GRPO"):
        if name not in rl.index.get_level_values(0):
            continue
        r = rl.loc[name]
        best = int(r["OOD gain"].idxmax())
        more_ood = int((r["OOD gain"] > r["ID gain"]).sum())
        peak = r.loc[id_peak] if id_peak in r.index else None
        out.append(f"- **{name} from SFT checkpoints.** Eight epochs of {name} change OOD accuracy by "
                   + ", ".join(f"{g:+.1f}" for g in r["OOD gain"]) + " points and ID by "
                   + ", ".join(f"{g:+.1f}" for g in r["ID gain"]) + " (from SFT heads of "
                   + ", ".join(str(e) for e in r.index) + " epochs); OOD gains more than ID from "
                   f"{more_ood} of {len(r)} checkpoints and most from the {best}-epoch one"
                   + (f"; from the ID peak ({id_peak} epochs) OOD goes {peak['SFT OOD']:.1f}% → "
                      f"{peak['after RL OOD']:.1f}%" if peak is not None else "")
                   + f". The study: OOD {c['rl_from_sft_ood'][0]}% → {c['rl_from_sft_ood'][1]}% after "
                   f"{c['rl_epochs']} RL epochs.")
    study_best = f"{c['budget_best_split'][0]}/{c['budget_best_split'][1]}"
    for name, t in budget.items():
        score = (t.ID + t.OOD) / 2
        best = int(score.idxmax())
        mixed = [s for s in t.index if 0 < s < 100]
        ends = [e for e in (0, 100) if e in score.index]
        wins = best in mixed and score[best] > max(score.get(0, -1), score.get(100, -1))
        text = (f"- **Fixed budget, {name}.** Mean of ID and OOD by SFT share: "
                + ", ".join(f"{s}% {v:.1f}" for s, v in score.items()) + f"; best at {best}% SFT. ")
        tp = None if budget_p is None or name not in budget_p else budget_p[name]
        if not wins:
            text += f"No mixed split beats both pure ends here (the study's best: {study_best})."
        elif tp is None:
            text += f"A mixed split beats both pure ends, as in the study (its best: {study_best})."
        else:
            ps = {e: float(tp.loc[e, "p against best"]) for e in ends if e in tp.index}
            said = ", ".join(f"p = {p:.2g} against {e}%" for e, p in ps.items())
            text += (f"A mixed split beats both pure ends beyond seed noise ({said}; paired over seeds), as in the "
                     f"study (its best: {study_best})." if all(p < 0.05 for p in ps.values()) else
                     f"A mixed split scores highest, but not beyond seed noise against both pure ends ({said}; "
                     f"paired over seeds); the study's best: {study_best}.")
        out.append(text)
    if len(capacity):
        sft_best = capacity.ID.groupby(level=0).mean().idxmax()
        rl_best = capacity.OOD.groupby(level=1).mean().idxmax()
        span_id = float(capacity.ID.max() - capacity.ID.min())
        span_ood = float(capacity.OOD.max() - capacity.OOD.min())
        top_sft, top_rl = capacity.index.get_level_values(0).max(), capacity.index.get_level_values(1).max()
        same = sft_best == top_sft and rl_best < top_rl
        noise = ""
        if widths is not None and same:
            at = widths.index
            sft_p = widths["p against best"][(at.get_level_values(0) == "SFT") & (at.get_level_values(1) == "ID")]
            sft_p = sft_p.droplevel([0, 1]).dropna()
            rl_p = float(widths.loc[("RL", "OOD", top_rl), "p against best"])
            noise = ("paired over seeds, SFT width " + str(sft_best) + " against "
                     + ", ".join(f"{w} p = {p:.2g}" for w, p in sft_p.items())
                     + f"; RL width {rl_best} against {top_rl} p = {rl_p:.2g}")
            same_sig = bool((sft_p < 0.05).all()) and rl_p < 0.05
        out.append(f"- **Capacity.** Averaged over the other stage's width, ID is highest with an SFT head of width "
                   f"{sft_best} and OOD with an RL head of width {rl_best} (0 = linear); across all nine pairs ID "
                   f"spans {span_id:.1f} points and OOD {span_ood:.1f}. The study: SFT best at LoRA rank "
                   f"{c['sft_best_rank']} (its highest), RL near rank {c['rl_best_rank']}. "
                   + ("The widths hardly matter here (less than a point either way), so no shape can be read off."
                      if max(span_id, span_ood) < 1.0 else
                      "Not the same shape here." if not same else
                      "The same shape: the larger SFT head, the smaller RL head." if not noise else
                      f"The same shape, beyond seed noise: the larger SFT head, the smaller RL head ({noise})."
                      if same_sig else
                      f"The means have the study's shape, but not beyond seed noise ({noise})."))
    return out


def lm_companion_findings(table: pd.DataFrame, tests: pd.DataFrame, vs_start: pd.DataFrame | None = None,
                          capacity: pd.DataFrame | None = None) -> list[str]:
    """The study's fixed-budget and capacity findings beside the LM selector's:
    ``table`` is :func:`~fgpo_core.experiments.companion_report.lm_companion_table` (indexed by
    arm and LoRA rank, the shared start as arm ``start`` when present), ``tests``
    :func:`~fgpo_core.experiments.companion_report.lm_companion_tests` of the sequential arm,
    ``vs_start`` the same with ``arm="start"`` (each trained arm against the start) and
    ``capacity`` :func:`~fgpo_core.experiments.companion_report.lm_capacity_tests` (each arm's
    ranks against each other)."""
    c = paper.COMPANION
    out = []
    ranks = sorted(set(table.index.get_level_values(1)))
    arms = [a for a in dict.fromkeys(table.index.get_level_values(0)) if a != START_ARM]
    mixed = [a for a in arms if "sft" in a and "fgpo" in a]
    for rank in ranks:
        t = table.xs(rank, level=1)
        fail = "format failures (%)"
        cells = "; ".join(f"{a}: ID {t.loc[a, 'ID']:.1f}%, OOD {t.loc[a, 'OOD']:.1f}%"
                          + (f", {t.loc[a, 'tools']:.2f} tools" if "tools" in t.columns else "")
                          + (f", {t.loc[a, fail]:.1f}% format failures (counted wrong)"
                             if fail in t.columns and t.loc[a, fail] > 0 else "")
                          for a in [START_ARM] + arms if a in t.index)
        verdict = ""
        if mixed and mixed[0] in t.index:
            m = mixed[0]
            pure = [a for a in arms if a != m and a in t.index]
            for d in ("ID", "OOD"):
                wins = [a for a in pure if t.loc[m, d] > t.loc[a, d]]
                ps = [f"p = {tests.loc[(rank, d, a), 'p']:.2g} against {a}" for a in pure
                      if len(tests) and (rank, d, a) in tests.index]
                verdict += (f" {d}: {m} beats " + (" and ".join(wins) if wins else "neither pure arm")
                            + (f" ({', '.join(ps)})" if ps else "") + ".")
        moved = ""
        if vs_start is not None and len(vs_start) and START_ARM in t.index:
            parts = []
            for a in arms:
                ds = [f"{d} {t.loc[a, d] - t.loc[START_ARM, d]:+.1f} (p = {vs_start.loc[(rank, d, a), 'p']:.2g})"
                      for d in ("ID", "OOD") if a in t.index and (rank, d, a) in vs_start.index]
                if ds:
                    parts.append(f"{a} " + ", ".join(ds))
            if parts:
                moved = " Against the start, in points: " + "; ".join(parts) + "."
        out.append(f"- **LoRA rank {rank}.** {cells}.{verdict}{moved}")
    if mixed:
        m = mixed[0]
        both = [(r, d) for r in ranks for d in ("ID", "OOD")
                if (m, r) in table.index and all(table.loc[(m, r), d] > table.loc[(a, r), d]
                                                 for a in arms if a != m and (a, r) in table.index)]
        out.append(f"- **Fixed budget.** The study's best split was {c['budget_best_split'][0]}% SFT then "
                   f"{c['budget_best_split'][1]}% RL, beating both pure arms. Here {m} beats both pure arms in "
                   f"{len(both)} of {2 * len(ranks)} (rank, domain) cells"
                   + (": " + ", ".join(f"rank {r} {d}" for r, d in both) if both else "") + ".")
    if vs_start is not None and len(vs_start):
        sig = sorted([(r, d, a) for (r, d, a), p in vs_start.p.items() if p < 0.05], key=lambda x: x[0])  # by rank
        out.append("- **Training against its start.** " + (
            f"{len(sig)} of {len(vs_start)} (rank, domain, arm) cells "
            + ("differs" if len(sig) == 1 else "differ") + " from the start at p < 0.05: "
            + ", ".join(f"{a} at rank {r} {d} ({table.loc[(a, r), d] - table.loc[(START_ARM, r), d]:+.1f})"
                        for r, d, a in sig) + "."
            if sig else f"None of the {len(vs_start)} (rank, domain, arm) cells differs from the start at p < 0.05: "
            "at this budget no arm measurably moved the selector from its warm-up."))
    if len(ranks) > 1:
        parts = []
        for a, d, claim in (("sft", "ID", f"SFT best at its highest rank ({c['sft_best_rank']})"),
                            ("fgpo", "OOD", f"RL best near rank {c['rl_best_rank']}, able to lose OOD at "
                                            "higher ranks")):
            if a in arms:
                s = table.xs(a, level=0)[d].sort_index()
                tops = [int(r) for r in s.index[s == s.max()]]
                best = tops[0]
                ps = [f"p = {capacity.loc[(a, d, min(best, r), max(best, r)), 'p']:.2g} against r{r}"
                      for r in s.index if r not in tops and capacity is not None and len(capacity)
                      and (a, d, min(best, r), max(best, r)) in capacity.index]
                where = f"rank {best}" if len(tops) == 1 else "ranks " + ", ".join(map(str, tops)) + " (tied)"
                parts.append(f"{a} is best on {d} at {where} (" + ", ".join(
                    f"r{r} {v:.1f}%" for r, v in s.items()) + (f"; {', '.join(ps)}" if ps else "")
                    + f"; the study: {claim})")
        sig = [] if capacity is None or not len(capacity) else \
            [(a, d, r, o) for (a, d, r, o), p in capacity.p.items() if p < 0.05]
        out.append("- **Capacity.** " + "; ".join(parts) + "." + (
            "" if capacity is None or not len(capacity) else
            f" Of {len(capacity)} (arm, domain, rank pair) comparisons, {len(sig)} "
            + ("differs" if len(sig) == 1 else "differ") + " at p < 0.05"
            + (": " + ", ".join(f"{a} {d} from r{r} to r{o} ({table.loc[(a, o), d] - table.loc[(a, r), d]:+.1f})"
                                for a, d, r, o in sig) if sig else "") + "."))
    return out


def _sig(p: float, seeds: str) -> str:
    return f"median p {p:.2g}, p < 0.05 in {seeds} seeds"


def past_enumeration_findings(library: pd.DataFrame, effects: pd.DataFrame, budgets: Mapping[int, pd.DataFrame],
                              vs_exact: Mapping[int, pd.DataFrame], vs_grpo: Mapping[int, pd.DataFrame],
                              seen: Mapping[int, pd.DataFrame], dead: Mapping[int, pd.DataFrame]) -> list[str]:
    """The chapter "Past enumeration" in plain words: ``library`` (:func:`~fgpo_core.experiments.larger_report.library_rows`),
    ``effects`` (:func:`~fgpo_core.experiments.larger_report.tool_effects` of the largest library), and per
    library size the :func:`~fgpo_core.experiments.larger_report.budget_table`, the paired tests against
    exact FGPO and against GRPO at the nearest budget (:func:`~fgpo_core.experiments.larger_report.budget_tests`),
    what the shortlists saw (:func:`~fgpo_core.experiments.larger_report.seen_by_epoch`) and GRPO's
    observed dead groups (:func:`~fgpo_core.experiments.larger_report.dead_by_epoch`)."""
    out = []
    lo, hi = library.index.min(), library.index.max()
    a, b = library.loc[lo], library.loc[hi]
    gap = float(b.best_fixed - b.all_tools)
    out.append(f"- **More tools, more ways to be right, and more to be misled by.** From {lo} to {hi} tools the oracle "
               f"goes {a.oracle:.1f}% → {b.oracle:.1f}% and the best fixed subset {a.best_fixed:.1f}% → "
               f"{b.best_fixed:.1f}%, while All-Tools goes {a.all_tools:.1f}% → {b.all_tools:.1f}%"
               + (f", {gap:.1f} points below the best fixed subset: showing the reader everything costs accuracy."
                  if gap > 0 else "."))
    bad = effects[effects.marginal < 0].sort_values("marginal")
    if len(bad):
        out.append(f"- **Distractors.** Added to a subset, {len(bad)} of {len(effects)} tools lower the reader's "
                   "accuracy on average: " + ", ".join(f"{t} ({v:+.1f})" for t, v in bad.marginal.items())
                   + " points. Every tool helps on some pairs and hurts on others; the selector's job is to know which.")
    else:
        out.append(f"- **No tool is a distractor on average**: each of the {len(effects)} raises accuracy when added "
                   "to a subset, though every one hurts on some pairs.")
    for n in sorted(budgets):
        bt = budgets[n]
        if "fgpo" in bt.index:
            f = bt.loc["fgpo"]
            out.append(f"- **{n} tools, exact FGPO** reaches {f.accuracy:.1f} ± {f.accuracy_sd:.1f}% "
                       f"({f.tools:.2f} tools per question) for {f.calls_per_question:,.0f} reasoner calls per "
                       "training question: every subset.")
        ve = vs_exact.get(n)
        if ve is not None and len(ve):
            for m, r in ve.iterrows():
                if bt.loc[m, "family"] not in ("shortlist-top", "shortlist-grow"):
                    continue
                share = 100 * r["calls per question"] / r["rival's calls per question"]
                sig = r["median p"] < 0.05
                share_text = f"{share:.0f}" if share >= 1 else f"{share:.1g}"  # 0.24% is not "0%"
                out.append(f"  - {label(m)} pays {share_text}% of those calls and "
                           + ("loses" if r["difference (points)"] < 0 else "gains")
                           + f" {abs(r['difference (points)']):.1f} points against it ({_sig(r['median p'], r['seeds with p < 0.05'])}"
                           + ("): a real loss." if sig and r["difference (points)"] < 0 else
                              "): a real gain." if sig else "): no difference the test can see."))
        g = bt[bt.family == "grpo"].sort_values("calls_per_question")
        if len(g) > 1:
            ratio = float(g.calls_per_question.max() / g.calls_per_question.min())
            out.append("  - GRPO's runs read " + ", ".join(f"{label(m)} {v:.1f}" for m, v in g.calls_per_question.items())
                       + " distinct pairs per training question"
                       + (": more epochs barely buy more of the table, because a concentrating policy draws again "
                          "what it has already paid for." if ratio < 2 else ": more epochs buy more of the table."))
        vg = vs_grpo.get(n)
        if vg is not None and len(vg):
            wins = vg[(vg["difference (points)"] > 0) & (vg["median p"] < 0.05)]
            losses = vg[(vg["difference (points)"] < 0) & (vg["median p"] < 0.05)]
            best = vg["difference (points)"].idxmax()
            out.append(f"  - Against GRPO at the nearest budget, {len(wins)} of {len(vg)} methods win and {len(losses)} "
                       f"lose significantly (median p < 0.05); the largest gap is {label(best)}'s "
                       f"{vg.loc[best, 'difference (points)']:+.1f} points over {label(vg.loc[best, 'rival'])}.")
        s = seen.get(n)
        if s is not None and len(s):
            cols = [c for c in s.columns if str(c).startswith("shortlist")]
            if cols:
                last = s[cols].ffill().iloc[-1]  # each method's own last epoch (runs differ in length)
                out.append("  - In the last epoch the shortlists held one of a question's best subsets on "
                           + ", ".join(f"{v:.0f}% ({label(c)})" for c, v in last.items()) + " of visits.")
        d = dead.get(n)
        if d is not None and len(d) and "grpo" in d and d.grpo.notna().any():
            g = d.grpo.dropna()
            out.append(f"  - GRPO's observed dead groups: {g.iloc[0]:.0f}% in its first epoch, "
                       f"{g.iloc[-1]:.0f}% in its last.")
    return out
