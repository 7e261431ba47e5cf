"""Reading the LM selector's runs on the whole training pool (``make lm-pool``) for the chapter
"FGPO versus GRPO": each run's dev course against question visits and training CPU time, its
evaluated snapshots (``fgpo snapshot``, then ``fgpo evaluate --into-run``), the snapshots
that compare the two runs at equal visits, at equal time and as each run kept them, and their
comparison by the book's rule (:func:`versus_intervals`: the two-level paired bootstrap's 95%
interval, Holm over the page) on the book's domain parts (:func:`book_parts`).

A pool folder holds one folder per run (``fgpo-format``, ``grpo``: trained with snapshots) and one
per evaluated snapshot, ``<run>-step<N>`` (:func:`snapshot_folder`). Time is the CPU seconds of the
training steps up to a step (dev evaluations left out), so two runs that shared the machine's cores
are compared by the work each did, not by the wall clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ..evaluation.domains import domain_class, domain_of, training_seen
from ..evaluation.picks import correct_of
from ..experiments.snapshots import compute_at, run_logs
from ..table import RewardTable
from .lm_runs import SelectorRun, load_selector_run

__all__ = [
    "POOL_RUNS",
    "snapshot_folder",
    "pool_configs",
    "dev_course",
    "pool_snapshots",
    "INDEV_DIR",
    "indev_course",
    "pool_comparisons",
    "question_answers",
    "accuracy_by_part",
    "PARTS",
    "checkpoint_costs",
    "pick_routing",
    "BOOK_PARTS",
    "book_parts",
    "versus_intervals",
    "interval_text",
    "interval_table",
]

PARTS = ("core", "in domain", "out of domain", "microbe", "mosaic")
"""The columns of :func:`accuracy_by_part`: the main suite whole, all test questions split in and
out of domain, and each cross-domain suite whole."""

BOOK_PARTS = ("all", "in domain", "out of domain", "TF-motif")
"""The parts of :func:`book_parts`: every test question, in and out of domain by the book's rule,
and the TF-motif questions (out of domain, the regulator family's reworded twin)."""

POOL_RUNS = {"FGPO + format term": "fgpo-format", "GRPO": "grpo"}
"""The whole-pool runs by the method label the book gives them, and their folders' names."""


def snapshot_folder(pool_dir, run: str, step: int) -> Path:
    """Where the snapshot of ``run`` (a folder name of :data:`POOL_RUNS`) at ``step`` is written."""
    return Path(pool_dir) / f"{run}-step{int(step)}"


def pool_configs(pool_dir, runs: Mapping[str, str] = POOL_RUNS) -> dict[str, dict]:
    """Each run's training configuration, by label: its manifest's when it finished, else the one
    its checkpoints were made with (``ckpt/config.json``)."""
    out = {}
    for label, name in runs.items():
        folder = Path(pool_dir) / name
        if (folder / "manifest.json").exists():
            out[label] = json.loads((folder / "manifest.json").read_text())["config"]
        else:
            out[label] = json.loads((folder / "ckpt" / "config.json").read_text())
    return out


def _kept_step(folder: Path, dev: pd.DataFrame, manifest: dict | None) -> int:
    """The step a run keeps, as the run recorded it: its manifest's ``best_step`` when it finished,
    else the step of its ``ckpt/best.pt`` (each trainer's own rule: FGPO breaks ties on dev by the
    expected reward J, GRPO by the earlier step), else the first dev evaluation with the highest
    free-generation accuracy."""
    if manifest and "best_step" in manifest:
        return int(manifest["best_step"])
    if (folder / "ckpt" / "best.pt").exists():
        from ..algorithms.common import load_checkpoint

        return int(load_checkpoint(folder / "ckpt" / "best.pt")["step"])
    gen = dev["gen_accuracy"] if "gen_accuracy" in dev else dev["accuracy"]
    return int(dev["step"].iloc[int(np.argmax(gen.to_numpy()))])


def dev_course(pool_dir, runs: Mapping[str, str] = POOL_RUNS) -> pd.DataFrame:
    """One row per dev evaluation of each run in ``runs`` (label to folder name) under
    ``pool_dir``: ``run``, ``step``, question ``visits``, ``cpu_hours`` of training to that step,
    free-generation ``generation`` accuracy, ``format_failures`` and ``tools`` (%, %, per question),
    controlled-scoring ``scoring`` accuracy and q's ``entropy``, whether it is the ``kept`` step,
    and whether the run has ``finished``."""
    rows = []
    for label, name in runs.items():
        folder = Path(pool_dir) / name
        steps, dev = run_logs(folder)
        if dev.empty:
            continue
        manifest = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").exists() else None
        kept = _kept_step(folder, dev, manifest)
        for d in dev.to_dict("records"):
            cost = compute_at(steps, int(d["step"])) if len(steps) else {"cpu_seconds": 0.0}
            rows.append(
                {
                    "run": label,
                    "step": int(d["step"]),
                    "visits": int(d["visits"]),
                    "cpu_hours": cost["cpu_seconds"] / 3600 if d["step"] else 0.0,
                    "generation": d.get("gen_accuracy", d.get("accuracy")),
                    "format_failures": d.get("gen_format_failures", np.nan),
                    "tools": d.get("gen_tools", d.get("tools")),
                    "scoring": d.get("accuracy") if "gen_accuracy" in d else np.nan,
                    "entropy": d.get("entropy", np.nan),
                    "kept": int(d["step"]) == kept,
                    "finished": manifest is not None,
                }
            )
    return pd.DataFrame(rows)


INDEV_DIR = "indev"
"""The folder under a pool folder where ``make lm-pool-indev`` writes each kept snapshot's free
generation on the in-domain dev: ``indev/<run>/step-<N>/indev.parquet``."""


def indev_course(pool_dir, table: RewardTable, runs: Mapping[str, str] = POOL_RUNS) -> pd.DataFrame:
    """Each run's snapshots read on the in-domain dev (``make lm-pool-indev``), one row per
    evaluated snapshot: ``run`` (label), ``step``, free-generation ``accuracy``, ``format_failures``
    (both %) and ``tools`` per question, scored in ``table`` (the evidence reader's in-domain dev
    table), the most ``picked`` subset (its mask; -1: a format failure) and its ``share`` (%),
    and ``chosen``: the step the in-domain dev chooses, the highest accuracy with the
    earlier step on a tie (one rule for both runs, and the cheaper checkpoint). Every snapshot
    must have been evaluated on the same questions, all of them in ``table``."""
    from ..evaluation.picks import summarise_picks

    rows, ids = [], None
    for label, name in runs.items():
        for f in sorted((Path(pool_dir) / INDEV_DIR / name).glob("step-*/indev.parquet")):
            ev = pd.read_parquet(f)
            q = ev["question_id"].to_numpy()
            if ids is None:
                ids = q
            elif len(q) != len(ids) or (q != ids).any():
                raise ValueError(f"{f} holds other questions than the first snapshot read on the in-domain dev")
            if not table.contains(q).all():
                raise ValueError(f"{f} holds questions the in-domain dev table does not")
            t = table.select(q)
            s = summarise_picks(ev["generation_pick"].to_numpy(), t.correct, t.n_tools)
            step = int(f.parent.name.split("-", 1)[1])
            kept = {k: s[k] for k in ("accuracy", "format_failures", "tools")}
            picks, counts = np.unique(ev["generation_pick"].to_numpy(), return_counts=True)
            top = {"picked": int(picks[counts.argmax()]), "share": 100.0 * counts.max() / len(q)}
            rows.append({"run": label, "step": step, "n": len(q), **kept, **top})
    columns = ["run", "step", "n", "accuracy", "format_failures", "tools", "picked", "share"]
    out = pd.DataFrame(rows, columns=columns)
    out = out.sort_values(["run", "step"], kind="stable").reset_index(drop=True)
    out["chosen"] = False
    for _, g in out.groupby("run", sort=False):
        out.loc[g["accuracy"].idxmax(), "chosen"] = True  # idxmax: the first (earliest) of equal maxima
    return out


def pool_snapshots(
    pool_dir, course: pd.DataFrame, runs: Mapping[str, str] = POOL_RUNS
) -> dict[tuple[str, int], SelectorRun]:
    """The evaluated snapshots under ``pool_dir`` of the dev evaluations in ``course``
    (:func:`dev_course`), keyed by ``(run label, step)``: those whose folder holds an evaluation."""
    out = {}
    for label, step in course[["run", "step"]].itertuples(index=False):
        folder = snapshot_folder(pool_dir, runs[label], step)
        if (folder / "eval").is_dir() and any((folder / "eval").glob("*.parquet")):
            out[(label, int(step))] = load_selector_run(f"{label} @ {int(step)}", folder)
    return out


def pool_comparisons(
    course: pd.DataFrame, evaluated, fgpo: str = "FGPO + format term", grpo: str = "GRPO"
) -> dict[str, tuple[int, int]]:
    """The (FGPO step, GRPO step) pairs the chapter compares, among the ``evaluated`` ``(label,
    step)`` snapshots: ``"equal visits"`` (of each evaluated GRPO step and FGPO's evaluated step
    with the most visits not above it, the pair nearest in visits, the later on a tie),
    ``"equal time"`` (GRPO's last evaluated step and FGPO's evaluated step nearest it in training
    CPU time) and ``"kept"`` (each run's kept step). A pair whose snapshots are not both evaluated
    is left out."""
    have = set(evaluated)
    done = np.array([(r, int(s)) in have for r, s in zip(course.run, course.step)], dtype=bool)
    f, g = course[(course.run == fgpo).to_numpy() & done], course[(course.run == grpo).to_numpy() & done]
    out: dict[str, tuple[int, int]] = {}
    g_pos = g[g.step > 0]
    if len(g_pos) and len(f):
        last = g_pos.loc[g_pos.step.idxmax()]
        near_visits = []
        for gv, gs in zip(g_pos.visits, g_pos.step):
            under = f[(f.visits <= gv) & (f.step > 0)]
            if len(under):
                fr = under.loc[under.visits.idxmax()]
                near_visits.append((gv - fr.visits, -int(gs), int(fr.step)))
        if near_visits:
            _, neg_g, fs = min(near_visits)
            out["equal visits"] = (fs, -neg_g)
        near = f[f.step > 0]
        if len(near):
            nearest = near.loc[(near.cpu_hours - last.cpu_hours).abs().idxmin(), "step"]
            out["equal time"] = (int(nearest), int(last.step))
    kf, kg = course[(course.run == fgpo) & course.kept], course[(course.run == grpo) & course.kept]
    if len(kf) and len(kg) and (fgpo, int(kf.step.iloc[0])) in have and (grpo, int(kg.step.iloc[0])) in have:
        out["kept"] = (int(kf.step.iloc[0]), int(kg.step.iloc[0]))
    return out


def question_answers(
    selectors: Mapping[str, SelectorRun],
    tables: Mapping[str, RewardTable],
    training_families,
    domains: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(answers, picks)``: one row per test question of every suite in ``tables`` that the first
    selector was evaluated on (every other must have been evaluated on them too) with its ``suite``,
    ``family`` and ``domain``: the book's rule where ``domains`` is given (suite -> question id ->
    ``"ID"``/``"OOD"``, :func:`~fgpo_core.evaluation.domains.question_domains`), else the former
    family-only rule (:func:`~fgpo_core.evaluation.domains.domain_of`); then one column per
    selector: whether its free-generation pick is right (a format failure is wrong) in
    ``answers``, the pick itself (-1: a format failure) in ``picks``. ``answers`` also holds
    ``All-Tools`` and ``BestFixed*``, the fixed subset best over all these questions, chosen with
    hindsight, its mask in ``answers.attrs["best_fixed"]``."""
    first = next(iter(selectors.values()))
    meta, right, chosen, correct = [], {m: [] for m in selectors}, {m: [] for m in selectors}, []
    for suite, table in tables.items():
        if suite not in first.evals:
            continue
        ids = first.evals[suite]["question_id"].to_numpy()
        have = table.contains(ids)
        t = table.select(ids[have])
        fams = np.asarray(t.family)
        meta.append(
            pd.DataFrame(
                {
                    "question_id": ids[have],
                    "suite": suite,
                    "family": fams,
                    "domain": (
                        [domain_of(suite, f, training_families) for f in fams]
                        if domains is None
                        else [domains[suite][i] for i in ids[have]]
                    ),
                }
            )
        )
        correct.append(t.correct)
        for m, run in selectors.items():
            frame = run.evals[suite].set_index("question_id")
            if not set(ids) <= set(frame.index):
                raise ValueError(f"{m} was not evaluated on every {suite} question {first.name} was")
            picks = frame["generation_pick"].reindex(ids).to_numpy()[have]
            chosen[m].append(picks)
            right[m].append(correct_of(picks, t.correct))
    base = pd.concat(meta, ignore_index=True)
    every = np.concatenate(correct)
    best = int(every.mean(0).argmax())
    answers = base.assign(
        **{m: np.concatenate(v) for m, v in right.items()}, **{"All-Tools": every[:, -1], "BestFixed*": every[:, best]}
    )
    answers.attrs["best_fixed"] = best
    return answers, base.assign(**{m: np.concatenate(v) for m, v in chosen.items()})


def accuracy_by_part(answers: pd.DataFrame, methods, masks: Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Accuracy (%) of each of ``methods`` (columns of :func:`question_answers`' ``answers``) on each
    part of ``masks`` (a name -> a boolean mask over the rows, such as :func:`book_parts`; by default
    :data:`PARTS`, by the ``domain`` column), with the questions of each part in ``answers.attrs["n"]``."""
    if masks is None:
        masks = {
            "core": answers.suite == "core",
            "in domain": answers.domain == "ID",
            "out of domain": answers.domain == "OOD",
            "microbe": answers.suite == "microbe",
            "mosaic": answers.suite == "mosaic",
        }
    masks = {k: np.asarray(v, dtype=bool) for k, v in masks.items()}
    masks = {k: v for k, v in masks.items() if v.any()}
    out = pd.DataFrame({k: {m: 100.0 * answers.loc[v, m].mean() for m in methods} for k, v in masks.items()})
    out.attrs["n"] = {k: int(v.sum()) for k, v in masks.items()}
    out.attrs["masks"] = masks
    return out


def checkpoint_costs(course: pd.DataFrame, checkpoints: Mapping[str, tuple[str, int]], rows) -> pd.DataFrame:
    """The training each checkpoint cost: ``visits`` and ``CPU hours`` up to its step in ``course``
    (:func:`dev_course`), for ``checkpoints`` (a row name -> its run's label and step), reindexed to
    ``rows``; the warm-up costs nothing here (its training is every run's shared start)."""
    cost = {
        name: course[(course.run == run) & (course.step == step)].iloc[0] for name, (run, step) in checkpoints.items()
    }
    out = pd.DataFrame(
        {"visits": {m: c.visits for m, c in cost.items()}, "CPU hours": {m: c.cpu_hours for m, c in cost.items()}}
    ).reindex(rows)
    if "Warm-up" in out.index:
        out.loc["Warm-up", ["visits", "CPU hours"]] = 0
    return out


def pick_routing(
    picks: Mapping[str, np.ndarray], family, tool: int, subset_label, family_name: str = "tf_motif"
) -> pd.DataFrame:
    """What each selector picks on one suite: ``picks`` maps a row to its picks (a subset's mask;
    -1: a format failure), ``family`` each question's family. One row per selector: the distinct
    subsets picked, the one picked most (named by ``subset_label``) and its share (%) of the
    questions, and how often (%) the pick holds ``tool`` (0-based) on ``family_name``'s questions
    and on the others (a format failure holds no tool)."""
    family = np.asarray(family)
    rows = {}
    for row, p in picks.items():
        p = np.asarray(p)
        counts = pd.Series(p[p >= 0]).value_counts()
        has = (p >= 0) & ((np.where(p >= 0, p, 0) >> tool) & 1 == 1)
        rows[row] = {
            "subsets picked": len(counts),
            "most picked": subset_label(counts.index[0]),
            "its share (%)": 100 * counts.iloc[0] / len(p),
            f"T{tool + 1} on TF motifs (%)": 100 * has[family == family_name].mean(),
            f"T{tool + 1} on the other families (%)": 100 * has[family != family_name].mean(),
        }
    return pd.DataFrame(rows).T


def book_parts(answers: pd.DataFrame, suites: Mapping[str, list], train_questions) -> dict[str, np.ndarray]:
    """The parts of :func:`question_answers`' rows by the book's domain rule
    (:func:`~fgpo_core.evaluation.domains.question_domain`, family and organism, read from
    ``train_questions``), as boolean masks keyed by :data:`BOOK_PARTS`: every row, the in-domain
    rows, the out-of-domain rows, and of those the TF-motif rows (the training family
    ``regulator``'s reworded twin, :data:`~fgpo_core.evaluation.domains.TWINS`). ``suites`` maps a
    suite to its questions (a question of ``answers`` missing there is an error)."""
    seen = training_seen(train_questions)
    by_id = {s: {q.id: q for q in qs} for s, qs in suites.items()}
    try:
        cls = np.array([domain_class(by_id[s][i], seen) for s, i in zip(answers.suite, answers.question_id)])
    except KeyError as e:
        raise ValueError(f"a question of the answers is not among the suites' questions: {e}") from None
    in_domain = np.isin(cls, ("seen family and organism", "seen organism asked about"))
    return dict(zip(BOOK_PARTS, (np.ones(len(cls), bool), in_domain, ~in_domain, cls == "twin family")))


def versus_intervals(
    answers: pd.DataFrame,
    parts: Mapping[str, np.ndarray],
    versus: Mapping[str, tuple[str, str]],
    resamples: int = 4000,
    seed: int = 0,
) -> pd.DataFrame:
    """Each comparison of ``versus`` (a row -> two columns of ``answers``, :func:`question_answers`)
    on each part of ``parts`` (a name -> a boolean mask over the rows, :func:`book_parts`), by the
    book's rule: the two-level paired bootstrap (:func:`~fgpo_core.evaluation.bootstrap.paired_bootstrap`;
    one selector, so questions resampled within suite and family), Holm's adjustment over every
    comparison and part together that is a test: a part where the two answer alike on every
    question tests nothing, so it stays out of the family (its ``p_holm`` is 1). One row per
    (comparison, part): ``comparison``, ``part``, ``a``, ``b``, ``gap`` (points, the first minus the
    second), ``low``, ``high``, ``p``, ``p_holm``, ``verdict`` and ``same`` (the two answer alike on
    every question of the part)."""
    from ..evaluation.bootstrap import compare_many, holm, strata_codes

    strata = strata_codes(answers.suite.to_numpy(), answers.family.to_numpy())
    frames = []
    for part, mask in parts.items():
        m = np.asarray(mask, dtype=bool)
        if not m.any():
            continue
        pairs = {
            row: (answers.loc[m, a].to_numpy(float), answers.loc[m, b].to_numpy(float))
            for row, (a, b) in versus.items()
        }
        f = compare_many(pairs, strata[m], resamples=resamples, seed=seed)
        same = [bool((x == y).all()) for x, y in pairs.values()]
        frames.append(f.assign(part=part, same=same).rename_axis("comparison").reset_index())
    out = pd.concat(frames, ignore_index=True)
    tests = ~out["same"].to_numpy(bool)
    out["p_holm"] = 1.0
    out.loc[tests, "p_holm"] = holm(out.loc[tests, "p"].to_numpy())
    out["a"] = [versus[c][0] for c in out.comparison]
    out["b"] = [versus[c][1] for c in out.comparison]
    return out[["comparison", "part", "a", "b", "gap", "low", "high", "p", "p_holm", "verdict", "same"]]


def interval_text(gap: float, low: float, high: float, same: bool = False) -> str:
    """:func:`fgpo_core.reports.fair.interval_text`, or "identical answers" where the two answer
    alike on every question (``same``)."""
    from .fair import interval_text as text

    return "identical answers" if same else text(gap, low, high)


def interval_table(intervals: pd.DataFrame, rows: Mapping[str, str], columns: Mapping[str, str]) -> pd.DataFrame:
    """:func:`versus_intervals` as a plain table: one row per comparison of ``rows`` (comparison ->
    label, in order), one column per part of ``columns`` (part -> header), each cell the gap with its
    95% interval (:func:`interval_text`), a star where the Holm-adjusted p-value is below 0.05."""
    cell = {
        (r.comparison, r.part): interval_text(r.gap, r.low, r.high, bool(getattr(r, "same", False)))
        + ("\u00a0*" if r.p_holm < 0.05 else "")
        for r in intervals.itertuples()
    }
    missing = [(c, p) for c in rows for p in columns if (c, p) not in cell]
    if missing:
        raise ValueError(f"no interval for {missing[0]}")
    body = [{"comparison (points)": lab, **{h: cell[(c, p)] for p, h in columns.items()}} for c, lab in rows.items()]
    return pd.DataFrame(body)
