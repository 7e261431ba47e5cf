"""The book's rule for in-domain (ID) and out-of-domain (OOD) test questions, by family and organism.

A question is read on two axes, each from the training pool itself:

* its **family** is *seen* when the training pool holds questions of that family;
* its **organism** (:func:`question_organism`: the organism its answer's DNA comes from, which
  for a taxonomy question is the organism asked about) is *seen* when the training pool holds
  sequences of that organism (today *E. coli* and *B. amyloliquefaciens* through the promoter
  family, and human DNA through every other family).

**The rule** (:func:`question_domain`): a question is ID when its organism is seen and either
its family is seen or it asks which organism its DNA comes from (a taxonomy question: the
organism is what it asks about). So microbe's taxonomy questions of *E. coli* and
*B. amyloliquefaciens* are ID, and so are core's taxonomy questions of the three training
organisms; microbe's promoter questions (*C. diphtheriae*) and the taxonomy questions of
*C. diphtheriae* and *Kutzneria* are OOD, whatever the suite. TF-motif questions are OOD (their
family never appears in training) but are the training family ``regulator``'s reworded twin
(:data:`TWINS`: same generator, background and planting, other factors and wording): their
transfer is near transfer, measured by :func:`fgpo_core.experiments.domains.twin_measure`.
:func:`domain_class` names the finer class behind each verdict.

:func:`domain_of` is the former rule (family only, and every microbe question OOD), kept while
callers that know no organisms still call it.
"""

from __future__ import annotations

from typing import Iterable, Mapping

__all__ = [
    "OOD_SUITES",
    "TWINS",
    "ORGANISM_FAMILIES",
    "HUMAN",
    "domain_of",
    "question_organism",
    "training_seen",
    "domain_class",
    "question_domain",
    "question_domains",
    "IN_DOMAIN_DEV",
    "in_domain",
]

OOD_SUITES = ("microbe",)
"""The former rule's suites whose every question counted as out of domain."""
TWINS = {"tf_motif": "regulator"}
"""Test families that are a training family reworded (same generator; other factors and wording)."""
ORGANISM_FAMILIES = ("taxonomy",)
"""Families whose question asks which organism the DNA comes from."""
HUMAN = "Homo sapiens"
IN_DOMAIN_DEV = "indev"
"""The benchmark suite of the in-domain dev: held-out questions of the training pool's families and
organisms, which every learning-rate, coefficient, checkpoint and early-stop choice reads (a run
trained on part of the pool reads only its questions in that part's domain: :func:`in_domain`)."""
_HUMAN_FAMILIES = ("tf_motif", "regulator", "splice", "cpg", "repeat")


def domain_of(suite: str, family: str, training_families: Iterable[str]) -> str:
    """The former rule: ``"OOD"`` when ``suite`` is one of :data:`OOD_SUITES` or ``family`` is not
    among ``training_families``, else ``"ID"``. The book's rule is :func:`question_domain`."""
    return "OOD" if suite in OOD_SUITES or family not in set(training_families) else "ID"


def question_organism(question) -> str | None:
    """The organism of a question: the one asked about (taxonomy), the one its answer sequence
    comes from (promoter, from the provenance), human for the human-DNA families; None if unknown."""
    p = question.provenance or {}
    if question.family in ORGANISM_FAMILIES:
        return p.get("answer_label")
    if question.family in _HUMAN_FAMILIES:
        return HUMAN
    if question.shape == "select":
        p = (p.get("options") or {}).get(question.answer, {})
    return p.get("organism")


def _organisms(question) -> set:
    """Every organism whose DNA a question shows (a select question's four options)."""
    if question.shape == "select" and question.family not in ORGANISM_FAMILIES + _HUMAN_FAMILIES:
        return {o.get("organism") for o in (question.provenance or {}).get("options", {}).values()}
    if question.shape == "select" and question.family in ORGANISM_FAMILIES:
        return set((question.provenance or {}).get("option_labels", {}).values())
    return {question_organism(question)}


def training_seen(train_questions) -> dict:
    """``{"families": set, "organisms": set}`` seen in the training pool (organisms: of every
    sequence its questions show)."""
    qs = list(train_questions)
    return {"families": {q.family for q in qs}, "organisms": set().union(*map(_organisms, qs)) - {None}}


def domain_class(question, seen: Mapping) -> str:
    """The finer class: ``"seen family and organism"``, ``"seen organism asked about"`` (taxonomy
    of a training organism), ``"twin family"`` (:data:`TWINS`), ``"new organism"`` (a training family
    on an organism never seen) or ``"new family"``."""
    org_seen = question_organism(question) in seen["organisms"]
    if question.family in seen["families"]:
        return "seen family and organism" if org_seen else "new organism"
    if question.family in ORGANISM_FAMILIES and org_seen:
        return "seen organism asked about"
    if TWINS.get(question.family) in seen["families"]:
        return "twin family"
    return "new family"


def question_domain(question, seen: Mapping) -> str:
    """The book's rule (module docstring): ``"ID"`` or ``"OOD"``; ``seen`` from :func:`training_seen`."""
    return "ID" if domain_class(question, seen) in ("seen family and organism", "seen organism asked about") else "OOD"


def question_domains(suites: Mapping[str, list], train_questions) -> dict[str, dict[str, str]]:
    """``{suite: {question id: "ID" | "OOD"}}`` for every question of ``suites`` (name -> questions)."""
    seen = training_seen(train_questions)
    return {s: {q.id: question_domain(q, seen) for q in qs} for s, qs in suites.items()}


def in_domain(questions, train_questions) -> list:
    """The questions of ``questions`` in the domain of ``train_questions`` by the book's rule
    (:func:`question_domain`), in order: the in-domain dev of a run trained on part of the pool (the
    first pool holds no regulator question, so the dev's regulator questions are not its domain)."""
    seen = training_seen(train_questions)
    return [q for q in questions if question_domain(q, seen) == "ID"]
