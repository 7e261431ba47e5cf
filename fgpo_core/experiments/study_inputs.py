"""What a study of the policy-head selector is made of, checked before it starts and recorded by content.

A study's run parts are reused on resume only when their fingerprint matches, so the fingerprint
must hold every input: the questions of every split, the reward tables' contents (another
reasoner's tables under the same questions are other inputs), the features' contents and prompt
settings (a 5-slot cache is not a 4-slot one) and the training settings. :func:`inputs_digest`
is that part of the key; :func:`check_study_inputs` refuses settings that would silently train
on something else; :func:`study_lock` lets one live study write a folder at a time.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..io import pid_lock

__all__ = [
    "StudyLocked",
    "spread_indices",
    "check_sizes",
    "check_study_inputs",
    "table_digest",
    "features_digest",
    "inputs_digest",
    "TRAINING_ROOTS",
    "training_modules",
    "training_code_digest",
    "study_lock",
]


class StudyLocked(FileExistsError):
    """Another live study is writing the same folder."""


def spread_indices(total: int, n: int) -> np.ndarray:
    """``n`` indices evenly spread over ``range(total)``, first and last included (all of them
    when ``n >= total``): a training subset that samples every part of a split, where the first
    ``n`` would leave out whatever was appended last."""
    if n <= 0 or n >= total:
        return np.arange(total)
    return np.unique(np.linspace(0, total - 1, n).round().astype(int))


def check_sizes(n_train: int, n_dev: int, n_test: int, tests: list[str]) -> None:
    """Refuse negative question counts (they would slice from the end) and a test suite that is
    the training or dev split (its count would override theirs)."""
    for flag, n in (("--n-train", n_train), ("--n-dev", n_dev), ("--n-test", n_test)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{flag} must be 0 (all questions) or a positive number, got {n}")
    clash = [t for t in tests if t in ("train", "dev")]
    if clash:
        raise ValueError(
            f"--suites names {clash[0]!r}, the study's own {clash[0]} split: test suites are picked "
            "on, not trained or chosen on"
        )
    if not tests:
        raise ValueError("--suites names no test suite")


def check_study_inputs(data: dict, feat_manifest: dict) -> int:
    """The library's tool count, once every split's table and the features agree on it."""
    counts = {s: tab.n_tools for s, (_, _, tab) in data.items()}
    if len(set(counts.values())) != 1:
        raise ValueError(f"the study's tables hold different tool counts ({counts}); give tables of one library")
    n_tools = next(iter(counts.values()))
    slots = feat_manifest.get("n_tools")
    if slots is not None and slots != n_tools:
        raise ValueError(
            f"the features were made with {slots} tool slots in the prompt but the tables' library has "
            f"{n_tools} tools; build features with --n-tools {n_tools}"
        )
    return n_tools


def _update(h, arr) -> None:
    if arr is None:
        h.update(b"none")
        return
    arr = np.asarray(arr)
    h.update(f"{arr.dtype.str}{arr.shape}".encode())
    if arr.dtype == object or arr.dtype.kind in "US":
        h.update("\0".join(map(str, arr.ravel().tolist())).encode())
    else:
        h.update(np.ascontiguousarray(arr).tobytes())


def table_digest(table) -> str:
    """The sha256 of a (selected) reward table's contents: its questions, tools, correctness,
    rewards and input tokens."""
    h = hashlib.sha256(f"{table.n_tools}|{list(table.tool_names or [])}|{table.lam}".encode())
    for arr in (table.question_ids, table.correct, table.rewards("eq1"), table.tokens, table.predictions):
        _update(h, arr)
    return h.hexdigest()[:16]


def features_digest(x, feat_manifest: dict) -> str:
    """The sha256 of a split's feature rows and the prompt settings they were made under."""
    h = hashlib.sha256(
        str([feat_manifest.get(k) for k in ("encoder", "fingerprint", "n_tools", "keep", "system_sha256")]).encode()
    )
    _update(h, np.asarray(x, dtype=np.float32))
    return h.hexdigest()[:16]


def inputs_digest(data: dict, feat_manifest: dict) -> dict:
    """Per split: the digests of its question ids, its table's contents and its features."""
    out = {}
    for s, (ids, x, tab) in sorted(data.items()):
        out[s] = {
            "questions": hashlib.sha256("\n".join(map(str, ids)).encode()).hexdigest()[:16],
            "table": table_digest(tab),
            "features": features_digest(x, feat_manifest),
        }
    return out


TRAINING_ROOTS = ("fgpo_core.algorithms.head", "fgpo_core.experiments.study")
"""Where a study part's training starts: :func:`~fgpo_core.algorithms.head.train_head` and the study
runner that calls it."""


def training_modules(lib_root: Path | None = None) -> list[str]:
    """The modules that decide a trained head: the import closure of the head's training
    (:mod:`fgpo_core.algorithms.head`), and the study runner's own modules (those of its closure in
    :mod:`fgpo_core.experiments`); the code that only loads the inputs (benchmarks, tables, features) is
    not among them, since the inputs themselves are digested by content (:func:`inputs_digest`)."""
    from ..import_closure import LIB_ROOT, import_closure

    lib_root = lib_root or LIB_ROOT
    head = import_closure(TRAINING_ROOTS[:1], lib_root=lib_root)
    runner = import_closure(TRAINING_ROOTS[1:], lib_root=lib_root)
    return sorted(set(head) | {m for m in runner if m.split(".")[:2] == ["fgpo_core", "experiments"]})


def training_code_digest(lib_root: Path | None = None) -> str:
    """Digest of the source of :func:`training_modules`. Part of a study part's resume key, so a
    part trained by other code is trained again instead of reused, while an edit elsewhere (an
    LM-only module, a report) keeps every part. ``lib_root``: another copy of the ``fgpo_core`` folder."""
    from ..import_closure import LIB_ROOT, closure_digest

    return closure_digest(training_modules(lib_root), lib_root or LIB_ROOT)[:16]


@contextmanager
def study_lock(out, shard: str = ""):
    """One live study per folder: ``<out>/.study.lock`` holds its pid (a dead one's is taken over);
    one per shard (``<out>/.study-shard-<i>-of-<N>.lock``) when the study is sharded."""
    lock = Path(out) / (f".study-shard-{shard.replace('/', '-of-')}.lock" if shard else ".study.lock")
    with pid_lock(
        lock,
        lambda pid: (
            f"another study (pid {pid}) is writing {out}; wait for it, use another "
            f"--out-dir, or delete {lock} if that process is gone"
        ),
        StudyLocked,
    ):
        yield
