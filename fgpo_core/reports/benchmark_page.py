"""The benchmark chapter's tables: the suites and what each decides, the domain rule read by family
and organism, and how near TF motif (the regulator family's reworded twin) and taxonomy (no twin)
sit to the training questions. Labels, not identifiers: "TF-motif", not ``tf_motif``."""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

__all__ = [
    "FAMILY_LABELS",
    "SUITE_ROLES",
    "CLASS_LABELS",
    "family_label",
    "suite_table",
    "domain_table",
    "twin_table",
]

FAMILY_LABELS = {
    "cpg": "CpG",
    "promoter": "promoter",
    "regulator": "regulator",
    "repeat": "repeat",
    "splice": "splice",
    "taxonomy": "taxonomy",
    "tf_motif": "TF-motif",
}
"""How each question family reads on a page."""

SUITE_ROLES = {
    "train": "training pool",
    "indev": "every learning-rate, coefficient, checkpoint and early-stop choice",
    "dev": "a diagnostic only (mixed domains)",
    "core": "main test suite (the role of GenomeQA)",
    "microbe": "cross-domain test, bacterial (the role of BM4)",
    "mosaic": "cross-domain test, mixed (the role of GenBench-X)",
}
"""What each suite decides, in the order the suite table lists them."""

CLASS_LABELS = {
    "seen family and organism": "training family and organism",
    "seen organism asked about": "asks about a training organism",
    "new organism": "training family, new organism",
    "twin family": "reworded twin of regulator",
    "new family": "new family, new organism",
}
"""The domain classes of :func:`fgpo_core.evaluation.domains.domain_class`, as a page says them."""


def family_label(name: str) -> str:
    """A family's label (:data:`FAMILY_LABELS`; an unknown family reads as its name in words)."""
    return FAMILY_LABELS.get(name, name.replace("_", " "))


def suite_table(manifest: Mapping, roles: Mapping[str, str] = SUITE_ROLES) -> pd.DataFrame:
    """One row per suite of a benchmark manifest (those of ``roles`` first, in its order): its
    split, its number of questions, its families (labels) and what it decides."""
    suites = manifest["suites"]
    order = [s for s in roles if s in suites] + [s for s in suites if s not in roles]
    rows = []
    for s in order:
        fams = suites[s]["families"]
        rows.append(
            {
                "suite": s,
                "split": suites[s]["split"],
                "questions": int(sum(sum(shapes.values()) for shapes in fams.values())),
                "families": ", ".join(sorted((family_label(f) for f in fams), key=str.lower)),
                "decides": roles.get(s, ""),
            }
        )
    return pd.DataFrame(rows)


def domain_table(test_suites: Mapping[str, list], train_questions) -> pd.DataFrame:
    """The test questions by family and domain class, over ``test_suites`` (name -> questions)
    pooled: family (label), class (:data:`CLASS_LABELS`), the book's verdict (in or out of domain)
    and the number of questions (:func:`fgpo_core.experiments.domains.domain_counts`)."""
    from ..experiments.domains import domain_counts

    counts = domain_counts(test_suites, train_questions)
    g = counts.groupby(["family", "class", "domain"], sort=True)["n"].sum().reset_index()
    return pd.DataFrame(
        {
            "family": g.family.map(family_label),
            "class": g["class"].map(lambda c: CLASS_LABELS.get(c, c)),
            "domain": g.domain.map({"ID": "in domain", "OOD": "out of domain"}),
            "questions": g.n.astype(int),
        }
    )


def twin_table(
    features, test_suites: Mapping[str, list], train_questions, families: Sequence[str] = ("tf_motif", "taxonomy")
) -> pd.DataFrame:
    """How near each of ``families``' test questions sit to the training questions in the selector's
    features, by shape (:func:`fgpo_core.experiments.domains.twin_measure`): the family its nearest
    training neighbour most often belongs to, that share (%), and the median cosine distance."""
    from ..experiments.domains import twin_measure

    t = twin_measure(features, test_suites, train_questions, families=list(families))
    t = t[t["shape"] != "all"]
    return pd.DataFrame(
        {
            "family": t.family.map(family_label).to_numpy(),
            "shape": t["shape"].to_numpy(),
            "questions": t.n.astype(int).to_numpy(),
            "nearest training family": t.nn_top.map(family_label).to_numpy(),
            "its share (%)": t.nn_top_share.to_numpy(),
            "median cosine distance": t.dist_median.to_numpy(),
        }
    )
